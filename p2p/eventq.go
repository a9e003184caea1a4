package p2p

import "sync"

// eventQueue is the session's Events channel: it never blocks its
// callers and never drops a transition (see Session.Events). It has its
// own lock, a leaf: emit is called with Session.mu held, and takes nothing
// else.
type eventQueue struct {
	mu      sync.Mutex
	ch      chan Event
	closed  bool
	scratch []Event
	merged  uint64
	dropped uint64
}

func newEventQueue(n int) *eventQueue {
	return &eventQueue{ch: make(chan Event, n)}
}

// emit delivers ev without blocking. When the channel is full it takes
// the queued events back, merges neighbours that a later one summarises
// (see mergeEvents) and queues the result: a transition is folded into a
// later one, never dropped. After close it does nothing.
func (q *eventQueue) emit(ev Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	select {
	case q.ch <- ev:
		return
	default:
	}
	b := q.scratch[:0]
drain:
	for len(b) < cap(q.ch) {
		select {
		case e := <-q.ch:
			b = append(b, e)
		default:
			break drain
		}
	}
	b = append(b, ev)
	var merged, dropped int
	b, merged, dropped = mergeEvents(b, cap(q.ch))
	q.merged += uint64(merged)
	q.dropped += uint64(dropped)
	for _, e := range b {
		q.ch <- e // fits: len(b) <= cap, and only emit sends
	}
	clear(b)
	q.scratch = b[:0]
}

// close closes the channel; later events are discarded.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	close(q.ch)
	q.mu.Unlock()
}

// counts returns the events merged and dropped so far.
func (q *eventQueue) counts() (merged, dropped uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.merged, q.dropped
}

// mergeEvents shortens q to at most n events by merging neighbours into
// the later one, which then says where things ended up:
//
//   - transport-changed A→B then B→C: one transport-changed A→C;
//   - interrupted then resumed: resumed (its Silence says how long);
//   - resumed then interrupted, or twice the same state: the later one;
//   - transport-down then transport-up of one transport (or up then
//     down): the later one.
//
// Each merge adds the events folded in to the survivor's Merged. If no
// neighbours can be merged (never in practice: at most two transitions of
// each kind in a row can be unmergeable), the oldest event that is not
// EventDisconnected is dropped and counted.
func mergeEvents(q []Event, n int) (out []Event, merged, dropped int) {
	for len(q) > n {
		i := mergeable(q)
		if i < 0 {
			j := 0
			for j < len(q)-1 && q[j].Kind == EventDisconnected {
				j++
			}
			q = append(q[:j], q[j+1:]...)
			dropped++
			continue
		}
		a, b := q[i], q[i+1]
		if a.Kind == EventTransportChanged && b.Kind == EventTransportChanged {
			b.From = a.From
		}
		b.Merged += a.Merged + 1
		q[i+1] = b
		q = append(q[:i], q[i+1:]...)
		merged++
	}
	return q, merged, dropped
}

// mergeable returns the index of the first event that the next one
// summarises, or -1.
func mergeable(q []Event) int {
	for i := 0; i+1 < len(q); i++ {
		a, b := q[i], q[i+1]
		switch {
		case a.Kind == EventDisconnected || b.Kind == EventDisconnected:
		case a.Kind == EventTransportChanged && b.Kind == EventTransportChanged:
			return i
		case (a.Kind == EventInterrupted || a.Kind == EventResumed) && (b.Kind == EventInterrupted || b.Kind == EventResumed):
			return i
		case (a.Kind == EventTransportUp || a.Kind == EventTransportDown) && (b.Kind == EventTransportUp || b.Kind == EventTransportDown) &&
			a.Transport == b.Transport:
			return i
		}
	}
	return -1
}
