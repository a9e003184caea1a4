package netsim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"
)

// Stats are a Link's counters. Every packet passed to Send, and every copy
// the link makes of one, ends in exactly one of Delivered, the Lost*
// counters, Discarded, or is still InFlight:
//
//	Sent + Duplicated == Delivered + Lost() + Discarded + InFlight
type Stats struct {
	Sent           uint64 // packets accepted by Send
	SentBytes      uint64 // their payload bytes
	Delivered      uint64 // packets handed to Deliver's callback, copies included
	DeliveredBytes uint64 // their payload bytes

	LostRandom   uint64 // lost by independent random loss (Config.Loss)
	LostBurst    uint64 // lost in Gilbert–Elliott bursts (Config.BurstLoss)
	LostBlackout uint64 // lost because their time on the link overlapped a blackout
	LostQueue    uint64 // tail-dropped: bandwidth queue too long, or MaxInFlight reached

	Duplicated uint64 // extra copies made (Config.Duplicate)
	// Reordered counts delivered packets (copies excluded) that arrived after
	// a packet sent later than them had already arrived.
	Reordered uint64
	Discarded uint64 // in flight when Clear was called
	InFlight  int    // sent, not yet delivered
}

// Lost is the total of the Lost* counters.
func (s Stats) Lost() uint64 {
	return s.LostRandom + s.LostBurst + s.LostBlackout + s.LostQueue
}

// ErrPacketTooLarge is wrapped by the *SizeError Send returns for a packet
// longer than Config.MaxPacketSize.
var ErrPacketTooLarge = errors.New("netsim: packet too large")

// SizeError reports a packet that is too large, with its size.
type SizeError struct {
	Size, Max int
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("netsim: packet of %d bytes exceeds the maximum of %d", e.Size, e.Max)
}

// Unwrap returns ErrPacketTooLarge.
func (e *SizeError) Unwrap() error { return ErrPacketTooLarge }

// slot holds one packet in flight. Slots and their buffers are reused.
type slot struct {
	buf     []byte
	addr    net.Addr // destination, for PacketConn
	arrival time.Duration
	order   uint64 // scheduling order: breaks ties in arrival time
	seq     uint64 // send sequence number, for reorder counting
	copy    bool   // a duplicate
}

// Link is one direction of an impaired link in virtual time. Time is
// whatever time.Duration the caller passes (e.g. time since the start of a
// simulation); it should not go backwards between calls, though nothing
// breaks if it does. A Link is not safe for concurrent use.
type Link struct {
	cfg Config
	rng *rand.Rand

	// Resolved defaults.
	reorderDelay, dupDelay, maxQueue time.Duration
	maxInFlight, maxSize             int
	geP, geR                         float64

	slots []slot
	free  []int32 // indexes of unused slots
	heap  []int32 // min-heap of in-flight slots by (arrival, order)
	order uint64
	seq   uint64

	bad       bool          // Gilbert–Elliott state
	busyUntil time.Duration // bandwidth queue: when the last queued packet has left

	maxSeq    uint64 // highest send sequence delivered so far
	delivered bool   // whether maxSeq is set

	stats Stats
}

// NewLink returns a Link with the impairments of cfg, drawing its random
// numbers from a PCG generator seeded with seed. It returns cfg's
// validation error, if any.
func NewLink(cfg Config, seed uint64) (*Link, error) {
	l := &Link{rng: rand.New(rand.NewPCG(seed, splitmix64(seed^0x6e657473696d)))}
	if err := l.SetConfig(cfg); err != nil {
		return nil, err
	}
	return l, nil
}

// SetConfig changes the impairments from now on. Packets in flight keep the
// arrival times they were given. The Blackouts slice is copied.
func (l *Link) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.Blackouts = append([]Window(nil), cfg.Blackouts...)
	l.cfg = cfg
	l.reorderDelay = orDefault(cfg.ReorderDelay, defaultReorderDelay)
	l.dupDelay = orDefault(cfg.DuplicateDelay, defaultDuplicateDelay)
	l.maxQueue = orDefault(cfg.MaxQueueDelay, defaultMaxQueueDelay)
	l.maxInFlight = orDefault(cfg.MaxInFlight, defaultMaxInFlight)
	l.maxSize = orDefault(cfg.MaxPacketSize, defaultMaxPacketSize)
	l.geP, l.geR = 0, 1
	if cfg.BurstLoss > 0 {
		l.geP, l.geR = cfg.gilbert()
	} else {
		l.bad = false
	}
	return nil
}

// Stats returns the link's counters.
func (l *Link) Stats() Stats {
	s := l.stats
	s.InFlight = len(l.heap)
	return s
}

// Send puts a copy of p on the link at time now; p may be reused as soon as
// Send returns. Whether and when the packet arrives is decided here, from
// the link's Config and random generator. The only error is a *SizeError
// for a packet longer than Config.MaxPacketSize; lost packets are not
// errors (see Stats).
func (l *Link) Send(now time.Duration, p []byte) error {
	return l.send(now, p, nil)
}

func (l *Link) send(now time.Duration, p []byte, addr net.Addr) error {
	if len(p) > l.maxSize {
		return &SizeError{Size: len(p), Max: l.maxSize}
	}
	cfg := &l.cfg
	l.stats.Sent++
	l.stats.SentBytes += uint64(len(p))
	seq := l.seq
	l.seq++

	depart := now
	if cfg.Bandwidth > 0 {
		start := max(now, l.busyUntil)
		if start-now > l.maxQueue {
			l.stats.LostQueue++
			return nil
		}
		l.busyUntil = start + time.Duration(int64(len(p))*int64(time.Second)/cfg.Bandwidth)
		depart = l.busyUntil
	}

	if cfg.BurstLoss > 0 {
		if l.bad {
			l.bad = l.rng.Float64() >= l.geR
		} else {
			l.bad = l.rng.Float64() < l.geP
		}
		if l.bad {
			l.stats.LostBurst++
			return nil
		}
	}
	if cfg.Loss > 0 && l.rng.Float64() < cfg.Loss {
		l.stats.LostRandom++
		return nil
	}

	delay := cfg.Latency
	if cfg.Jitter > 0 {
		delay += time.Duration(l.rng.Int64N(2*int64(cfg.Jitter)+1)) - cfg.Jitter
		delay = max(delay, 0)
	}
	if cfg.Reorder > 0 && l.rng.Float64() < cfg.Reorder {
		delay += l.reorderDelay
	}
	arrival := depart + delay

	dup := cfg.Duplicate > 0 && l.rng.Float64() < cfg.Duplicate
	var dupArrival time.Duration
	if dup {
		dupArrival = arrival + 1 + time.Duration(l.rng.Int64N(int64(l.dupDelay)))
	}

	if l.blackedOut(now, arrival) {
		l.stats.LostBlackout++
	} else {
		l.push(p, addr, arrival, seq, false)
	}
	if dup {
		l.stats.Duplicated++
		if l.blackedOut(now, dupArrival) {
			l.stats.LostBlackout++
		} else {
			l.push(p, addr, dupArrival, seq, true)
		}
	}
	return nil
}

// blackedOut reports whether the closed interval [from, to] overlaps a
// blackout window.
func (l *Link) blackedOut(from, to time.Duration) bool {
	c := &l.cfg
	if c.BlackoutEvery > 0 && c.BlackoutFor > 0 && to >= c.BlackoutPhase {
		start := c.BlackoutPhase
		if from > start {
			start += (from - start) / c.BlackoutEvery * c.BlackoutEvery
		}
		// start is the last window start at or before from (or the first
		// one, if from precedes it). Overlap with it, or with the next one.
		if from < start+c.BlackoutFor || to >= start+c.BlackoutEvery {
			return true
		}
	}
	for _, w := range c.Blackouts {
		if from < w.End && to >= w.Start {
			return true
		}
	}
	return false
}

func (l *Link) push(p []byte, addr net.Addr, arrival time.Duration, seq uint64, copy bool) {
	if len(l.heap) >= l.maxInFlight {
		l.stats.LostQueue++
		return
	}
	var i int32
	if n := len(l.free); n > 0 {
		i = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		l.slots = append(l.slots, slot{})
		i = int32(len(l.slots) - 1)
	}
	s := &l.slots[i]
	s.buf = append(s.buf[:0], p...)
	s.addr = addr
	s.arrival = arrival
	s.order = l.order
	l.order++
	s.seq = seq
	s.copy = copy
	l.heap = append(l.heap, i)
	l.up(len(l.heap) - 1)
}

// NextArrival returns the arrival time of the next packet in flight, and
// false if there is none.
func (l *Link) NextArrival() (time.Duration, bool) {
	if len(l.heap) == 0 {
		return 0, false
	}
	return l.slots[l.heap[0]].arrival, true
}

// Deliver hands every packet whose arrival time is at or before now to fn,
// in order of arrival (ties in the order they were scheduled), and returns
// how many it delivered. p is valid only during the call to fn. fn may call
// Send on this link; a packet it sends that arrives at or before now is
// delivered by the same call. A nil fn drops the packets (they still count
// as delivered).
func (l *Link) Deliver(now time.Duration, fn func(p []byte)) int {
	return l.deliver(now, func(p []byte, _ net.Addr) {
		if fn != nil {
			fn(p)
		}
	})
}

func (l *Link) deliver(now time.Duration, fn func(p []byte, addr net.Addr)) int {
	n := 0
	for len(l.heap) > 0 {
		i := l.heap[0]
		s := &l.slots[i]
		if s.arrival > now {
			break
		}
		l.pop()
		l.stats.Delivered++
		l.stats.DeliveredBytes += uint64(len(s.buf))
		if !s.copy {
			if l.delivered && s.seq < l.maxSeq {
				l.stats.Reordered++
			} else {
				l.maxSeq, l.delivered = s.seq, true
			}
		}
		buf, addr := s.buf, s.addr
		s.addr = nil
		fn(buf, addr) // may call send, which may move l.slots: s is stale after this
		l.free = append(l.free, i)
		n++
	}
	return n
}

// Clear drops every packet in flight (counted as Discarded). The pooled
// buffers are kept.
func (l *Link) Clear() {
	for _, i := range l.heap {
		l.slots[i].addr = nil
		l.free = append(l.free, i)
	}
	l.stats.Discarded += uint64(len(l.heap))
	l.heap = l.heap[:0]
}

func (l *Link) less(a, b int32) bool {
	sa, sb := &l.slots[a], &l.slots[b]
	if sa.arrival != sb.arrival {
		return sa.arrival < sb.arrival
	}
	return sa.order < sb.order
}

func (l *Link) up(j int) {
	h := l.heap
	for j > 0 {
		parent := (j - 1) / 2
		if !l.less(h[j], h[parent]) {
			break
		}
		h[j], h[parent] = h[parent], h[j]
		j = parent
	}
}

func (l *Link) pop() {
	h := l.heap
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	l.heap = h
	j := 0
	for {
		c := 2*j + 1
		if c >= n {
			break
		}
		if c+1 < n && l.less(h[c+1], h[c]) {
			c++
		}
		if !l.less(h[c], h[j]) {
			break
		}
		h[j], h[c] = h[c], h[j]
		j = c
	}
}

// Pair is a two-direction link between peers A and B: AB carries what A
// sends to B, BA the reverse. The directions are independent links with
// their own random generators.
type Pair struct {
	AB, BA *Link
}

// NewPair returns a Pair with the same Config in both directions.
func NewPair(cfg Config, seed uint64) (*Pair, error) {
	return NewAsymmetricPair(cfg, cfg, seed)
}

// NewAsymmetricPair returns a Pair whose A→B direction has the impairments
// ab and whose B→A direction has ba.
func NewAsymmetricPair(ab, ba Config, seed uint64) (*Pair, error) {
	l1, err := NewLink(ab, splitmix64(seed))
	if err != nil {
		return nil, fmt.Errorf("A→B: %w", err)
	}
	l2, err := NewLink(ba, splitmix64(seed+1))
	if err != nil {
		return nil, fmt.Errorf("B→A: %w", err)
	}
	return &Pair{AB: l1, BA: l2}, nil
}

// NextArrival returns the earliest arrival time in either direction, and
// false if both are empty.
func (p *Pair) NextArrival() (time.Duration, bool) {
	a, okA := p.AB.NextArrival()
	b, okB := p.BA.NextArrival()
	switch {
	case okA && okB:
		return min(a, b), true
	case okA:
		return a, true
	default:
		return b, okB
	}
}

// splitmix64 is the SplitMix64 finalizer: it turns nearby seeds into
// unrelated ones.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
