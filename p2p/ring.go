package p2p

import "sync"

// msgRing is a bounded FIFO of received messages stored in buffers that are
// allocated once and reused. Writers (transport read loops) push copies;
// when the ring is full the oldest message is overwritten and counted as
// dropped. The consumer pops by swapping the slot's buffer with its own
// spare buffer, so the callback runs without the lock and the writer can
// never overwrite bytes the consumer is reading.
type msgRing struct {
	mu      sync.Mutex
	slots   [][]byte // each has cap maxLen; len = message length
	head    int      // index of the oldest message
	n       int      // messages stored
	maxLen  int
	dropped uint64

	consMu sync.Mutex // serialises consumers (Poll)
	spare  []byte     // owned by the consumer holding consMu

	// notify holds a token after a push, until a receiver takes it
	// (Session.Received): capacity 1, so pushes coalesce and never block.
	notify chan struct{}
}

func newMsgRing(slots, maxLen int) *msgRing {
	r := &msgRing{
		slots:  make([][]byte, slots),
		maxLen: maxLen,
		spare:  make([]byte, 0, maxLen),
		notify: make(chan struct{}, 1),
	}
	backing := make([]byte, slots*maxLen)
	for i := range r.slots {
		r.slots[i] = backing[i*maxLen : i*maxLen : (i+1)*maxLen]
	}
	return r
}

// push copies p (len(p) <= maxLen) into the ring. It reports whether an
// unread message was dropped to make room.
func (r *msgRing) push(p []byte) (dropped bool) {
	r.mu.Lock()
	var i int
	if r.n == len(r.slots) {
		i = r.head
		r.head = (r.head + 1) % len(r.slots)
		r.dropped++
		dropped = true
	} else {
		i = (r.head + r.n) % len(r.slots)
		r.n++
	}
	r.slots[i] = append(r.slots[i][:0], p...)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default: // a token is already waiting
	}
	return dropped
}

// popSwap removes the oldest message and returns it in a buffer the caller
// owns until the next popSwap. Callers hold consMu.
func (r *msgRing) popSwap() ([]byte, bool) {
	r.mu.Lock()
	if r.n == 0 {
		r.mu.Unlock()
		return nil, false
	}
	m := r.slots[r.head]
	r.slots[r.head] = r.spare[:0]
	r.spare = m
	r.head = (r.head + 1) % len(r.slots)
	r.n--
	r.mu.Unlock()
	return m, true
}

func (r *msgRing) droppedCount() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Received returns a channel that has a value whenever messages may be
// waiting for Poll: every arrival leaves a token (at most one, arrivals
// coalesce), so a receive can be followed by a Poll that finds nothing
// (a previous Poll already took the message). It is for programs that
// have no tick of their own and want to block until something arrives
// (tools, tests, benchmarks): a game polls once per tick instead. The
// channel is never closed; select on Done as well.
func (s *Session) Received() <-chan struct{} { return s.data.ring.notify }
