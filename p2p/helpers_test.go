package p2p

import (
	"context"
	"sync"
	"testing"

	"github.com/ragsync/ragsync/internal/testwait"
)

// testCtx is a context for the test's waits: it has no deadline of its
// own, only the test binary's (see testwait).
func testCtx(t testing.TB) context.Context { return testwait.Context(t) }

// waitUntil polls cond until it holds, bounded only by the test binary's
// deadline; what names the condition in the failure.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, what, cond)
}

// recvOne waits for the next message s receives and returns a copy. It
// fails the test if more than one arrived at once.
func recvOne(t testing.TB, s *Session) []byte {
	t.Helper()
	var got [][]byte
	waitUntil(t, "a message", func() bool {
		s.Poll(func(p []byte) { got = append(got, append([]byte(nil), p...)) })
		return len(got) > 0
	})
	if len(got) > 1 {
		t.Errorf("%d messages arrived, want one: %q", len(got), got)
	}
	return got[0]
}

// eventLog collects a session's events.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
	wg  sync.WaitGroup
}

func collectEvents(s *Session) *eventLog {
	l := &eventLog{}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for ev := range s.Events() {
			l.mu.Lock()
			l.evs = append(l.evs, ev)
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *eventLog) snapshot() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.evs...)
}

// waitFor waits until pred holds for the events so far. It has no time
// limit of its own, only the test binary's (testwait).
func (l *eventLog) waitFor(t *testing.T, what string, pred func([]Event) bool) []Event {
	t.Helper()
	var evs []Event
	if !testwait.Until(t, func() bool { evs = l.snapshot(); return pred(evs) }) {
		t.Fatalf("gave up waiting for %s near the test binary's deadline; events: %v", what, evs)
	}
	return evs
}

func has(kind EventKind) func([]Event) bool {
	return func(evs []Event) bool { return index(evs, kind, 0) >= 0 }
}

// changedTo is true once the events show a switch to transport k.
func changedTo(k TransportKind) func([]Event) bool {
	return func(evs []Event) bool {
		i := index(evs, EventTransportChanged, 0)
		return i >= 0 && evs[i].Transport == k
	}
}

// index returns the index of the first event of kind at or after from, or -1.
func index(evs []Event, kind EventKind, from int) int {
	for i := from; i < len(evs); i++ {
		if evs[i].Kind == kind {
			return i
		}
	}
	return -1
}

// checkNoInterruption asserts that the events show no interruption or
// disconnect.
func checkNoInterruption(t *testing.T, who string, evs []Event) {
	t.Helper()
	for _, ev := range evs {
		if ev.Kind == EventInterrupted || ev.Kind == EventDisconnected {
			t.Errorf("%s: %v during failover; events %v", who, ev, evs)
		}
	}
}
