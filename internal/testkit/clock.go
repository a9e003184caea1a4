// Package testkit is what ragsync's tests share instead of writing it
// again: one fake clock, an in-memory net.Listener, and a test HTTP server
// over any http.Handler, on loopback or in memory.
//
// The in-memory pieces block only on channels and net.Pipe, which is
// durable in a testing/synctest bubble: a server served on a Listener runs
// in virtual time.
//
// The package is for tests only: no production code imports it.
package testkit

import (
	"sync"
	"time"
)

// Clock is a fake clock: time moves only when the test says (Advance,
// Set). Its Now fits every injected `now func() time.Time`; its timers fire
// when Advance passes their time. It is safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*Timer
}

// Epoch is where NewClock starts: a fixed instant, far from zero, so that
// arithmetic on it never meets the zero time.
var Epoch = time.Unix(1_800_000_000, 0)

// NewClock returns a Clock at start (Epoch if start is zero).
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = Epoch
	}
	return &Clock{now: start}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward and fires the timers due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.fireLocked()
}

// Set moves the clock to t (which may be earlier: a clock stepped back)
// and fires the timers due.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.fireLocked()
}

func (c *Clock) fireLocked() {
	keep := c.timers[:0]
	for _, t := range c.timers {
		if !t.when.After(c.now) {
			t.active = false
			select {
			case t.ch <- c.now:
			default: // the last tick was not read: like time.Timer, drop it
			}
			continue
		}
		keep = append(keep, t)
	}
	clear(c.timers[len(keep):])
	c.timers = keep
}

// Timer is a Clock's timer, with the method set of p2p/netsim's Timer and
// time.Timer's Go 1.23 semantics (Stop and Reset leave no stale tick).
type Timer struct {
	c      *Clock
	ch     chan time.Time
	when   time.Time
	active bool
}

// NewTimer returns a started timer that fires once, when the clock has
// advanced by d.
func (c *Clock) NewTimer(d time.Duration) *Timer {
	t := &Timer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// C is the channel the timer fires on.
func (t *Timer) C() <-chan time.Time { return t.ch }

// Stop stops the timer; it reports whether the timer was active.
func (t *Timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.stopLocked()
	return was
}

func (t *Timer) stopLocked() bool {
	was := t.active
	t.active = false
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			break
		}
	}
	select {
	case <-t.ch: // no stale tick after Stop
	default:
	}
	return was
}

// Reset makes the timer fire d from the clock's now; it reports whether
// the timer was active.
func (t *Timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.stopLocked()
	t.when = t.c.now.Add(d)
	t.active = true
	t.c.timers = append(t.c.timers, t)
	t.c.fireLocked() // d <= 0 fires at once
	return was
}
