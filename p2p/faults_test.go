package p2p

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
)

// The session-level fault tests: what real networks and real computers do
// to a match, in virtual time over newNetPair's vnet and pipe.

// countKind counts the events of kind.
func countKind(evs []Event, kind EventKind) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

// TestSessionPausedPeerDoesNotFlap: the answerer stops answering on every
// path for 2 s (a stopped process). The offerer sees an interruption, not
// a path failure: no transport switch on either side, and the session
// resumes on the path it had.
func TestSessionPausedPeerDoesNotFlap(t *testing.T) {
	leaktest.Check(t)
	for _, tc := range []struct {
		name   string
		prefer TransportKind
		pause  func(np *netPair) *atomic.Bool
	}{
		{"answerer paused, on webrtc", TransportWebRTC, func(np *netPair) *atomic.Bool { return &np.muteB }},
		{"offerer paused, on webrtc", TransportWebRTC, func(np *netPair) *atomic.Bool { return &np.muteA }},
		{"answerer paused, on tcp", TransportTCP, func(np *netPair) *atomic.Bool { return &np.muteB }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pref := func(c *Config) { c.Prefer = tc.prefer }
				np := newNetPair(t, 5*time.Millisecond, pref, pref)
				a, b := np.a, np.b
				ea, eb := collectEvents(a), collectEvents(b)
				tr := startTraffic(a, b, 16*time.Millisecond)
				defer tr.halt()
				tr.waitBoth(t, 20)
				time.Sleep(2 * time.Second) // a settled session
				p := tc.pause(np)
				p.Store(true)
				time.Sleep(2 * time.Second)
				p.Store(false)
				time.Sleep(5 * time.Second)
				tr.waitBoth(t, 20)
				for _, c := range []struct {
					who string
					s   *Session
					evs []Event
				}{{"offerer", a, ea.snapshot()}, {"answerer", b, eb.snapshot()}} {
					st := c.s.Stats()
					if st.Switches != 0 || countKind(c.evs, EventTransportChanged) != 0 || st.Transport != tc.prefer {
						t.Errorf("%s: %d switches, on %v: %v", c.who, st.Switches, st.Transport, c.evs)
					}
					if st.EventsMerged != 0 || st.EventsDropped != 0 {
						t.Errorf("%s: events merged %d, dropped %d", c.who, st.EventsMerged, st.EventsDropped)
					}
				}
				// The side that saw the other pause was interrupted and resumed.
				evs := ea.snapshot()
				if p == &np.muteA {
					evs = eb.snapshot()
				}
				if countKind(evs, EventInterrupted) != 1 || countKind(evs, EventResumed) != 1 {
					t.Errorf("events %v, want one interruption and its end", evs)
				}
			})
		})
	}
}

// stallClock is a session clock that the test can make jump ahead, as the
// session's own clock does when its process stood still (a GC pause, a
// busy machine, a stopped process): time passed, and the session loop
// did not run meanwhile.
type stallClock struct{ off atomic.Int64 }

func (c *stallClock) Now() time.Duration {
	return time.Duration(time.Now().UnixNano()) + time.Duration(c.off.Load())
}

// TestSessionOwnStallsDoNotSwitch: the offerer's own loop stalls for
// 0.5 s every 5 s; the session does not take its own stalls for dead
// paths (0 switches) nor for the peer's silence (no interruption).
func TestSessionOwnStallsDoNotSwitch(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		clk := &stallClock{}
		np := newNetPair(t, 5*time.Millisecond, func(c *Config) { preferWebRTC(c); c.Clock = clk }, preferWebRTC)
		a, b := np.a, np.b
		ea, eb := collectEvents(a), collectEvents(b)
		tr := startTraffic(a, b, 16*time.Millisecond)
		defer tr.halt()
		tr.waitBoth(t, 20)
		for range 6 {
			time.Sleep(5 * time.Second)
			clk.off.Add(int64(500 * time.Millisecond))
		}
		time.Sleep(2 * time.Second)
		tr.waitBoth(t, 20)
		for _, c := range []struct {
			who string
			s   *Session
			evs []Event
		}{{"offerer", a, ea.snapshot()}, {"answerer", b, eb.snapshot()}} {
			if st := c.s.Stats(); st.Switches != 0 || st.Transport != TransportWebRTC {
				t.Errorf("%s: %d switches, on %v: %v", c.who, st.Switches, st.Transport, c.evs)
			}
		}
		if evs := ea.snapshot(); countKind(evs, EventInterrupted) != 0 {
			t.Errorf("offerer took its own stalls for the peer's silence: %v", evs)
		}
	})
}
