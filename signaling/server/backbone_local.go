package server

import (
	"context"
	"sync"
	"time"
)

// localBackbone is the backbone of a single server (the zero NATSConfig):
// buckets and subjects in this process's memory, ready at once. It keeps
// the semantics the cluster logic relies on from JetStream and NATS:
// atomic Create, compare-and-set Update and Delete by revision, revisions
// growing per bucket, entries expiring ttl after their last write, and
// "no responders" at once for a request nobody subscribes to.
type localBackbone struct {
	now func() time.Time // the buckets' clock, for their TTL

	mu      sync.Mutex
	buckets map[string]*localBucket
	subs    map[string][]*localSub // by subject
	closed  bool
}

func newLocalBackbone(now func() time.Time) *localBackbone {
	return &localBackbone{now: now, buckets: make(map[string]*localBucket), subs: make(map[string][]*localSub)}
}

func (b *localBackbone) Bucket(ctx context.Context, name string, ttl time.Duration) (kvBucket, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errBusClosed
	}
	k := b.buckets[name]
	if k == nil {
		k = &localBucket{now: b.now, ttl: ttl, m: make(map[string]localEntry)}
		b.buckets[name] = k
	}
	return k, nil
}

// deliver queues m for subject's subscribers, reporting whether there
// were any.
func (b *localBackbone) deliver(subject string, m *busMsg) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false, errBusClosed
	}
	subs := b.subs[subject]
	for _, s := range subs {
		s.push(m)
	}
	return len(subs) > 0, nil
}

func (b *localBackbone) Publish(subject string, data []byte) error {
	_, err := b.deliver(subject, &busMsg{Data: data})
	return err
}

func (b *localBackbone) Request(subject string, data []byte, timeout time.Duration) ([]byte, error) {
	answer := make(chan []byte, 1)
	m := &busMsg{Data: data, Reply: func(data []byte) {
		select {
		case answer <- data:
		default: // answered already (more than one subscriber)
		}
	}}
	ok, err := b.deliver(subject, m)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNoResponders
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-answer:
		return a, nil
	case <-t.C:
		return nil, errBusTimeout
	}
}

func (b *localBackbone) Subscribe(subject string, maxPending int, f func(*busMsg)) (func(), error) {
	s := &localSub{f: f, max: maxPending, wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errBusClosed
	}
	b.subs[subject] = append(b.subs[subject], s)
	b.mu.Unlock()
	go s.run()
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		subs := b.subs[subject]
		for i, x := range subs {
			if x == s {
				subs = append(subs[:i:i], subs[i+1:]...)
				break
			}
		}
		if len(subs) == 0 {
			delete(b.subs, subject)
		} else {
			b.subs[subject] = subs
		}
		s.stop()
	}, nil
}

func (b *localBackbone) Status() backboneStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	return backboneStatus{Connected: !b.closed, Server: "local"}
}

func (b *localBackbone) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	for _, subs := range b.subs {
		for _, s := range subs {
			s.stop()
		}
	}
	b.subs = nil
}

// localSub is a subscription: its messages wait in q for its goroutine,
// so that a publisher never waits for a subscriber.
type localSub struct {
	f    func(*busMsg)
	max  int // bytes waiting in q; more are dropped
	wake chan struct{}
	done chan struct{}

	mu       sync.Mutex
	q        []*busMsg
	bytes    int
	stopOnce sync.Once
}

func (s *localSub) push(m *busMsg) {
	s.mu.Lock()
	if s.max > 0 && s.bytes+len(m.Data) > s.max {
		s.mu.Unlock()
		return // a slow consumer's message, dropped as NATS does
	}
	s.q = append(s.q, m)
	s.bytes += len(m.Data)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *localSub) stop() { s.stopOnce.Do(func() { close(s.done) }) }

func (s *localSub) run() {
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		for {
			s.mu.Lock()
			if len(s.q) == 0 {
				s.mu.Unlock()
				break
			}
			m := s.q[0]
			s.q[0] = nil
			s.q = s.q[1:]
			s.bytes -= len(m.Data)
			s.mu.Unlock()
			select {
			case <-s.done:
				return
			default:
			}
			s.f(m)
		}
	}
}

// localBucket is a key-value bucket in memory.
type localBucket struct {
	now func() time.Time
	ttl time.Duration // 0: entries do not expire

	mu     sync.Mutex
	rev    uint64 // the last revision written
	m      map[string]localEntry
	writes int // since the last sweep of expired entries
	swept  int // entries left by the last sweep
}

type localEntry struct {
	value   []byte
	rev     uint64
	expires time.Time // zero without a TTL
}

// live returns key's entry if it is there and has not expired. Called
// with k.mu held.
func (k *localBucket) live(key string, now time.Time) (localEntry, bool) {
	e, ok := k.m[key]
	if ok && !e.expires.IsZero() && !now.Before(e.expires) {
		delete(k.m, key)
		return localEntry{}, false
	}
	return e, ok
}

// set writes key. Called with k.mu held.
func (k *localBucket) set(key string, value []byte, now time.Time) uint64 {
	k.rev++
	e := localEntry{value: append([]byte(nil), value...), rev: k.rev}
	if k.ttl > 0 {
		e.expires = now.Add(k.ttl)
	}
	k.m[key] = e
	// A sweep every max(64, entries at the last sweep) writes: linear
	// in the writes, and expired entries nobody reads are not kept
	// for long.
	if k.writes++; k.writes >= max(64, k.swept) {
		for other := range k.m {
			k.live(other, now) // deletes it if expired
		}
		k.writes, k.swept = 0, len(k.m)
	}
	return k.rev
}

func (k *localBucket) Get(ctx context.Context, key string) (kvEntry, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.live(key, k.now())
	if !ok {
		return kvEntry{}, errKeyNotFound
	}
	return kvEntry{Value: append([]byte(nil), e.value...), Revision: e.rev}, nil
}

func (k *localBucket) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if _, ok := k.live(key, now); ok {
		return 0, errKeyExists
	}
	return k.set(key, value, now), nil
}

func (k *localBucket) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if e, ok := k.live(key, now); !ok || e.rev != rev {
		return 0, errWrongRevision
	}
	return k.set(key, value, now), nil
}

func (k *localBucket) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.set(key, value, k.now()), nil
}

func (k *localBucket) Delete(ctx context.Context, key string, rev uint64) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if rev != 0 {
		if e, ok := k.live(key, k.now()); !ok || e.rev != rev {
			return errWrongRevision
		}
	}
	if _, ok := k.m[key]; ok {
		// A delete is a write: JetStream's is a marker of a revision of
		// its own.
		k.rev++
		delete(k.m, key)
	}
	return nil
}
