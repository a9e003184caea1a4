//go:build linux

package main

import (
	"container/heap"
	"time"
)

// held is one packet waiting for its verdict.
type held struct {
	release time.Duration // since the program started (monotonic)
	seq     uint64        // arrival order, breaking ties of release
	id      uint32
	flow    flow
}

// heldHeap orders held packets by release time, then arrival.
type heldHeap []held

func (h heldHeap) Len() int { return len(h) }
func (h heldHeap) Less(i, j int) bool {
	if h[i].release != h[j].release {
		return h[i].release < h[j].release
	}
	return h[i].seq < h[j].seq
}
func (h heldHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldHeap) Push(x any)   { *h = append(*h, x.(held)) }
func (h *heldHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// lastOfFlow is the latest release scheduled for a flow.
type lastOfFlow struct {
	release time.Duration
	seq     uint64
}

// holder schedules packets: each is released delay plus a jitter after it
// arrived, but never before an earlier packet of its flow, so a flow's
// order holds whatever the jitter. At most max packets are held; beyond
// that, hold reports false and the caller accepts the packet at once.
type holder struct {
	delay, jitter time.Duration
	max           int
	rand          func(n int64) int64 // uniform in [0, n)

	h    heldHeap
	last map[flow]lastOfFlow // flows with a packet held; len <= len(h)
	seq  uint64
}

func newHolder(delay, jitter time.Duration, max int, rand func(int64) int64) *holder {
	return &holder{delay: delay, jitter: jitter, max: max, rand: rand, last: make(map[flow]lastOfFlow)}
}

// hold schedules packet id of flow f arrived at now, or reports false
// when max packets are already held.
func (s *holder) hold(id uint32, f flow, now time.Duration) bool {
	if len(s.h) >= s.max {
		return false
	}
	r := now + s.delay
	if s.jitter > 0 {
		r += time.Duration(s.rand(int64(s.jitter)))
	}
	if l, ok := s.last[f]; ok && l.release > r {
		r = l.release
	}
	s.seq++
	s.last[f] = lastOfFlow{r, s.seq}
	heap.Push(&s.h, held{release: r, seq: s.seq, id: id, flow: f})
	return true
}

// next returns when the earliest held packet is due, and false if none
// is held.
func (s *holder) next() (time.Duration, bool) {
	if len(s.h) == 0 {
		return 0, false
	}
	return s.h[0].release, true
}

// pop removes the earliest held packet if it is due at now.
func (s *holder) pop(now time.Duration) (uint32, bool) {
	if len(s.h) == 0 || s.h[0].release > now {
		return 0, false
	}
	p := heap.Pop(&s.h).(held)
	if l := s.last[p.flow]; l.seq == p.seq {
		delete(s.last, p.flow)
	}
	return p.id, true
}

// len returns how many packets are held.
func (s *holder) len() int { return len(s.h) }
