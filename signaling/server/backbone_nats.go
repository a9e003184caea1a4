package server

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsBackbone is the backbone of a cluster: NATS, with JetStream's
// key-value buckets, on an external deployment (NATSConfig.URL) or a
// clustered node's embedded server (NATSConfig.Embed).
type natsBackbone struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	ns       EmbeddedNATS // nil with an external NATS
	replicas int          // of the buckets this node makes
}

// newNATSBackbone takes over nc (and ns, if not nil): Close closes them.
func newNATSBackbone(nc *nats.Conn, ns EmbeddedNATS, replicas int) (*natsBackbone, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return &natsBackbone{nc: nc, js: js, ns: ns, replicas: replicas}, nil
}

// Bucket binds bucket name, making it if it is not there, with reads
// served by its stream's leader only: a replica's direct get may lag a
// create made a moment before on another node, and a join must find the
// room its creator has just been told about.
func (b *natsBackbone) Bucket(ctx context.Context, name string, ttl time.Duration) (kvBucket, error) {
	kv, err := b.js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = b.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:   name,
			TTL:      ttl,
			Storage:  jetstream.MemoryStorage,
			Replicas: b.replicas,
		})
	}
	if err != nil {
		return nil, err
	}
	st, err := b.js.Stream(ctx, "KV_"+name)
	if err != nil {
		return nil, err
	}
	if c := st.CachedInfo().Config; c.AllowDirect {
		c.AllowDirect = false
		if _, err := b.js.UpdateStream(ctx, c); err != nil {
			return nil, err
		}
	}
	// Bound again, now that the stream is known to refuse direct gets:
	// the handle reads the way the stream's config said when it was
	// bound. Bound above while another node's update was under way, it
	// would make direct gets that no one answers, for good.
	if kv, err = b.js.KeyValue(ctx, name); err != nil {
		return nil, err
	}
	return natsBucket{kv}, nil
}

func (b *natsBackbone) Publish(subject string, data []byte) error {
	return b.nc.Publish(subject, data)
}

func (b *natsBackbone) Request(subject string, data []byte, timeout time.Duration) ([]byte, error) {
	m, err := b.nc.Request(subject, data, timeout)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, errNoResponders
	}
	if err != nil {
		return nil, err
	}
	return m.Data, nil
}

func (b *natsBackbone) Subscribe(subject string, maxPending int, f func(*busMsg)) (func(), error) {
	sub, err := b.nc.Subscribe(subject, func(m *nats.Msg) {
		bm := &busMsg{Data: m.Data}
		if m.Reply != "" {
			bm.reply = func(data []byte) { m.Respond(data) }
		}
		f(bm)
	})
	if err != nil {
		return nil, err
	}
	sub.SetPendingLimits(-1, maxPending)
	return func() { sub.Unsubscribe() }, nil
}

func (b *natsBackbone) Status() backboneStatus {
	st := backboneStatus{connected: b.nc.IsConnected()}
	if b.ns != nil {
		st.server = "embedded"
		st.peers = b.ns.Peers()
	} else {
		st.server = b.nc.ConnectedUrlRedacted()
	}
	return st
}

func (b *natsBackbone) Close() {
	// Not Drain: its flush takes a timer from nats.go's process-wide
	// pool, which must not cross synctest bubbles in the tests; what this
	// node still had to send is moot.
	b.nc.Close()
	if b.ns != nil {
		b.ns.Shutdown()
	}
}

// natsBucket is a JetStream key-value bucket, its errors those of
// kvBucket.
type natsBucket struct{ kv jetstream.KeyValue }

func (k natsBucket) Get(ctx context.Context, key string) (kvEntry, error) {
	e, err := k.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return kvEntry{}, errKeyNotFound
	}
	if err != nil {
		return kvEntry{}, err
	}
	return kvEntry{e.Value(), e.Revision()}, nil
}

func (k natsBucket) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	rev, err := k.kv.Create(ctx, key, value)
	if isRevMismatch(err) {
		return 0, errKeyExists
	}
	return rev, err
}

func (k natsBucket) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	rev, err := k.kv.Update(ctx, key, value, rev)
	if isRevMismatch(err) {
		return 0, errWrongRevision
	}
	return rev, err
}

func (k natsBucket) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return k.kv.Put(ctx, key, value)
}

func (k natsBucket) Delete(ctx context.Context, key string, rev uint64) error {
	var err error
	if rev == 0 {
		err = k.kv.Delete(ctx, key)
	} else {
		err = k.kv.Delete(ctx, key, jetstream.LastRevision(rev))
	}
	if isRevMismatch(err) {
		return errWrongRevision
	}
	return err
}

// isRevMismatch reports whether err is JetStream refusing a write whose
// expected revision is not the key's (ErrKeyExists for a Create).
func isRevMismatch(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return true
	}
	return strings.Contains(err.Error(), "wrong last sequence")
}
