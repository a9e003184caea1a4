// Package testwait bounds the waits of ragsync's tests by the test binary's
// own deadline (go test -timeout) instead of fixed wall-clock durations.
//
// A test that waits for something to happen (an event, a connection, a
// goroutine to exit) cannot tell a slow machine from a hang by the clock;
// giving up after a fixed few seconds turns a loaded machine into a red
// test. The helpers here wait until the condition holds and give up only
// shortly before the test binary itself would be stopped by -timeout,
// leaving time to report which wait failed. A slow machine makes a test
// slower, never red; a real hang still fails, at the run's deadline.
//
// The package is for tests only: no production code imports it.
package testwait

import (
	"context"
	"flag"
	"testing"
	"time"
)

// started approximates when the test binary started (package
// initialisation), for binaries whose deadline testing does not report:
// benchmarks, fuzz targets and TestMain.
var started = time.Now()

// Grace bounds the time a wait leaves between giving up and the binary's
// deadline: a tenth of the time left when the wait starts, at least
// MinGrace and at most MaxGrace.
const (
	MinGrace = 2 * time.Second
	MaxGrace = 30 * time.Second
)

// BinaryDeadline returns when the test binary is stopped by -test.timeout,
// and false if it runs without a timeout (-timeout 0) or outside go test.
func BinaryDeadline() (time.Time, bool) {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return time.Time{}, false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return time.Time{}, false
	}
	d, ok := g.Get().(time.Duration)
	if !ok || d <= 0 {
		return time.Time{}, false
	}
	return started.Add(d), true
}

// Deadline returns when a wait in t should give up: shortly before the
// test binary's deadline (t.Deadline, or BinaryDeadline for benchmarks and
// fuzz targets). ok is false when the run has no timeout: then waits do
// not give up.
//
// In a testing/synctest bubble, where time is virtual and the binary's
// deadline means nothing, it is VirtualLimit of virtual time from now: a
// wait that long costs nothing, and one that never ends would spin.
func Deadline(t testing.TB) (time.Time, bool) {
	var d time.Time
	var ok bool
	if dt, has := t.(interface{ Deadline() (time.Time, bool) }); has {
		var bubble bool
		d, ok, bubble = tDeadline(dt)
		if bubble {
			return time.Now().Add(VirtualLimit), true
		}
	} else {
		d, ok = BinaryDeadline()
	}
	if !ok {
		return time.Time{}, false
	}
	return beforeDeadline(d), true
}

// VirtualLimit bounds the waits in a synctest bubble, in virtual time.
const VirtualLimit = time.Hour

// tDeadline calls t.Deadline, which panics inside a synctest bubble.
func tDeadline(t interface{ Deadline() (time.Time, bool) }) (d time.Time, ok, bubble bool) {
	defer func() {
		if recover() != nil {
			d, ok, bubble = time.Time{}, false, true
		}
	}()
	d, ok = t.Deadline()
	return d, ok, false
}

// beforeDeadline returns the time to give up for a run that ends at d.
func beforeDeadline(d time.Time) time.Time {
	grace := min(max(time.Until(d)/10, MinGrace), MaxGrace)
	return d.Add(-grace)
}

// Context returns a context that is done at Deadline(t), or when the test
// and its cleanups are over. Unlike t.Context it stays live while cleanups
// run, so a cleanup may use it (a server's Shutdown, say).
func Context(t testing.TB) context.Context {
	ctx, cancel := ContextFrom(context.Background(), t)
	t.Cleanup(cancel)
	return ctx
}

// ContextFrom returns parent bounded by Deadline(t), and its cancel.
func ContextFrom(parent context.Context, t testing.TB) (context.Context, context.CancelFunc) {
	if d, ok := Deadline(t); ok {
		return context.WithDeadline(parent, d)
	}
	return context.WithCancel(parent)
}

// Until polls cond until it holds, and reports whether it did; false means
// Deadline(t) passed first.
func Until(t testing.TB, cond func() bool) bool {
	d, ok := Deadline(t)
	return until(d, ok, cond)
}

// UntilBinaryDeadline is Until for TestMain, which has no testing.TB.
func UntilBinaryDeadline(cond func() bool) bool {
	d, ok := BinaryDeadline()
	if ok {
		d = beforeDeadline(d)
	}
	return until(d, ok, cond)
}

func until(deadline time.Time, bounded bool, cond func() bool) bool {
	// Poll fast at first (most conditions hold within microseconds), then
	// back off to a few milliseconds.
	pause := 50 * time.Microsecond
	for !cond() {
		if bounded && time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(pause)
		pause = min(2*pause, 5*time.Millisecond)
	}
	return true
}

// For polls cond until it holds; if Deadline(t) passes first, it fails t
// with Fatalf, naming what it waited for.
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Until(t, cond) {
		t.Fatalf("testwait: gave up waiting for %s near the test binary's deadline", what)
	}
}

// Chan returns a channel that is closed at Deadline(t) (never, if the run
// has no timeout): the "this is taking forever" case of a select, in place
// of time.After with a fixed duration.
func Chan(t testing.TB) <-chan struct{} {
	return Context(t).Done()
}
