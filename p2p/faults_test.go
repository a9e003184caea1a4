package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/transport/v5/vnet"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling/server"
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

// side is one session of a pair, named, with its events so far: for the
// checks a test runs on both.
type side struct {
	who string
	s   *Session
	evs []Event
}

// bothSides is the offerer a and the answerer b with their events so far.
func bothSides(a, b *Session, ea, eb *eventLog) []side {
	return []side{{"offerer", a, ea.snapshot()}, {"answerer", b, eb.snapshot()}}
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
				ea, eb, tr := np.runTraffic(t)
				defer tr.halt()
				time.Sleep(2 * time.Second) // a settled session
				p := tc.pause(np)
				p.Store(true)
				time.Sleep(2 * time.Second)
				p.Store(false)
				time.Sleep(5 * time.Second)
				tr.waitBoth(t, 20)
				for _, c := range bothSides(a, b, ea, eb) {
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
		ea, eb, tr := np.runTraffic(t)
		defer tr.halt()
		for range 6 {
			time.Sleep(5 * time.Second)
			clk.off.Add(int64(500 * time.Millisecond))
		}
		time.Sleep(2 * time.Second)
		tr.waitBoth(t, 20)
		for _, c := range bothSides(a, b, ea, eb) {
			if st := c.s.Stats(); st.Switches != 0 || st.Transport != TransportWebRTC {
				t.Errorf("%s: %d switches, on %v: %v", c.who, st.Switches, st.Transport, c.evs)
			}
		}
		if evs := ea.snapshot(); countKind(evs, EventInterrupted) != 0 {
			t.Errorf("offerer took its own stalls for the peer's silence: %v", evs)
		}
	})
}

// memServer is a signaling server on an in-memory listener that the test
// can stop and start again with the same secret, as an operator restarts
// cmd/signal. Clients dial whichever instance is running.
type memServer struct {
	t      *testing.T
	secret []byte
	mu     sync.Mutex
	srv    *server.Server
	l      *memListener
	done   chan struct{}
	// upAt is when the current instance started answering.
	upAt time.Time
}

func startMemServer(t *testing.T) (*memServer, string, func(*Config)) {
	m := &memServer{t: t, secret: []byte("0123456789abcdef0123456789abcdef")}
	m.start()
	t.Cleanup(m.stop)
	tr := &http.Transport{DialContext: m.dial}
	t.Cleanup(tr.CloseIdleConnections)
	return m, "http://signal.test", func(c *Config) { c.Signaling.HTTPClient = &http.Client{Transport: tr} }
}

func (m *memServer) start() {
	srv, err := server.New(server.Config{Logger: slog.New(slog.DiscardHandler), Secret: m.secret})
	if err != nil {
		m.t.Fatal(err)
	}
	l := newMemListener()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.t.Errorf("signaling server: %v", err)
		}
	}()
	m.mu.Lock()
	m.srv, m.l, m.done, m.upAt = srv, l, done, time.Now()
	m.mu.Unlock()
}

// stop shuts the running instance down (its relay streams are cut).
func (m *memServer) stop() {
	m.mu.Lock()
	srv, done := m.srv, m.done
	m.srv = nil
	m.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	srv.Shutdown(ctx)
	<-done
}

func (m *memServer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	m.mu.Lock()
	l := m.l
	up := m.srv != nil
	m.mu.Unlock()
	if !up {
		return nil, errors.New("connection refused (the server is down)")
	}
	return l.dial(ctx, network, addr)
}

// TestSignalingServerRestart: the signaling server restarts (same secret)
// in the middle of a match, once while the match runs on WebRTC and once
// on the relay alone. The match goes on; the relay, cut by the shutdown,
// is back within a couple of seconds of the server answering again; and
// the signaling connection is rejoined (the offerer can renegotiate).
func TestSignalingServerRestart(t *testing.T) {
	leaktest.Check(t)
	for _, relayOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("relay only %v", relayOnly), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms, url, viaMem := startMemServer(t)
				na, nb := newVNet(t, 10*time.Millisecond, nil)
				cfg := func(n *vnet.Net) Config {
					return cfgWith(func(c *Config) {
						viaMem(c)
						c.Net, c.Interfaces = n, InterfacesAll
						c.Prefer = TransportWebRTC
						c.DisableWebRTC = relayOnly
					})
				}
				a, b := pairByRoom(t, url, cfg(na), cfg(nb))
				ea, eb := collectEvents(a), collectEvents(b)
				tr := startTraffic(a, b, 16*time.Millisecond)
				defer tr.halt()
				waitUntil(t, "the relay up on both", func() bool {
					return a.Stats().TCP.State == LinkUp && b.Stats().TCP.State == LinkUp
				})
				tr.waitBoth(t, 20)
				ms.stop()
				time.Sleep(1200 * time.Millisecond) // down for 1.2 s
				ms.start()
				waitUntil(t, "the relay back on both", func() bool {
					return a.Stats().TCP.State == LinkUp && b.Stats().TCP.State == LinkUp
				})
				back := time.Since(ms.upAt)
				t.Logf("relay back %v after the server answered again", back)
				if back > 2*time.Second {
					t.Errorf("relay back %v after the server answered, want within 2 s", back)
				}
				tr.waitBoth(t, 20)
				waitUntil(t, "both rejoined on signaling", func() bool {
					return a.Stats().SignalingReconnects > 0 && b.Stats().SignalingReconnects > 0
				})
				for _, c := range bothSides(a, b, ea, eb) {
					if c.s.Err() != nil || index(c.evs, EventDisconnected, 0) >= 0 {
						t.Errorf("%s: %v; events %v", c.who, c.s.Err(), c.evs)
					}
					if !relayOnly && countKind(c.evs, EventInterrupted) != 0 {
						t.Errorf("%s interrupted on WebRTC by a signaling restart: %v", c.who, c.evs)
					}
				}
			})
		})
	}
}

// killable dials through d until kill: then it closes every connection it
// made and refuses new ones, as the network sees a killed process.
type killable struct {
	d      func(ctx context.Context, network, addr string) (net.Conn, error)
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (k *killable) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed {
		return nil, errors.New("the process is dead")
	}
	c, err := k.d(ctx, network, addr)
	if err == nil {
		k.conns = append(k.conns, c)
	}
	return c, err
}

func (k *killable) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.killed = true
	for _, c := range k.conns {
		c.Close()
	}
}

// TestSessionPeerKilled: the answerer's process dies (its sockets close,
// its packets stop). The signaling server tells the offerer at once that
// the peer's connection dropped, and with the peer silent too, the
// offerer reports it disconnected within 1 s, with the reason, instead of
// waiting for DisconnectAfter.
func TestSessionPeerKilled(t *testing.T) {
	leaktest.Check(t)
	for _, relayOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("relay only %v", relayOnly), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, url, viaMem := startMemServer(t)
				var dead atomic.Bool
				na, nb := newVNet(t, 10*time.Millisecond, func(c vnet.Chunk) bool {
					return !dead.Load() || !strings.HasPrefix(c.SourceAddr().String(), vnetIPB+":")
				})
				var k killable
				cfg := func(n *vnet.Net, victim bool) Config {
					return cfgWith(func(c *Config) {
						viaMem(c)
						c.Net, c.Interfaces = n, InterfacesAll
						c.DisableWebRTC = relayOnly
						if victim {
							k.d = c.Signaling.HTTPClient.Transport.(*http.Transport).DialContext
							c.Signaling.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: k.dial}}
						}
					})
				}
				a, b := pairByRoom(t, url, cfg(na, false), cfg(nb, true))
				ea := collectEvents(a)
				tr := startTraffic(a, b, 16*time.Millisecond)
				tr.waitBoth(t, 20)
				time.Sleep(time.Second)
				tr.halt()
				killedAt := time.Now()
				dead.Store(true)
				k.kill()
				evs := ea.waitFor(t, "disconnected", has(EventDisconnected))
				ev := evs[index(evs, EventDisconnected, 0)]
				took := time.Since(killedAt)
				t.Logf("offerer disconnected %v after the kill: %v", took, ev)
				if took > time.Second || !strings.Contains(ev.Reason, "dropped") || !errors.Is(ev.Err, ErrDisconnected) || !errors.Is(ev.Err, ErrPeerAway) {
					t.Errorf("disconnected %v after the kill (%v), want within 1 s, the peer away", took, ev)
				}
				tokA, tokB, room := a.SeatToken(), b.SeatToken(), a.Room()
				b.Close()
				a.Close()
				// The dead process comes back with its seat token, the
				// survivor takes its own seat back: the pairing again.
				dead.Store(false)
				resumeBoth(t, url, cfg(na, false), cfgWith(func(c *Config) {
					viaMem(c)
					c.Net, c.Interfaces, c.DisableWebRTC = nb, InterfacesAll, relayOnly
				}), tokA, tokB, room)
			})
		})
	}
}

// TestWebRTCRecoversAfterLongOutage: UDP between the peers is cut for 40 s
// (longer than pion's ICE failed timeout): the session goes on over the
// relay, the offerer negotiates new PeerConnections over signaling while
// WebRTC is down, and once UDP is back the session is back on WebRTC
// within 3 s. (Preferred: the in-memory relay pings better than the vnet.)
func TestWebRTCRecoversAfterLongOutage(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		np := newNetPair(t, 5*time.Millisecond, preferWebRTC, preferWebRTC)
		a, b := np.a, np.b
		if a.Stats().Transport != TransportWebRTC {
			t.Fatalf("initial transport %v", a.Stats().Transport)
		}
		ea, eb, tr := np.runTraffic(t)
		defer tr.halt()
		time.Sleep(2 * time.Second)
		before := a.Stats().WebRTC.RTT
		np.cut.Store(true)
		ea.waitFor(t, "failover to tcp", changedTo(TransportTCP))
		time.Sleep(40 * time.Second)
		if st := a.Stats(); st.Transport != TransportTCP || st.State != StateConnected {
			t.Fatalf("during the outage: %v, %v", st.Transport, st.State)
		}
		np.cut.Store(false)
		restored := time.Now()
		back := func(evs []Event) bool {
			return countKind(evs, EventTransportChanged) >= 2 && lastChange(evs) == TransportWebRTC
		}
		ea.waitFor(t, "offerer back on webrtc", back)
		took := time.Since(restored)
		eb.waitFor(t, "answerer back on webrtc", back)
		st := a.Stats()
		t.Logf("back on webrtc %v after UDP was restored; %d new PeerConnections; events %v", took, st.WebRTCRenewals, ea.snapshot())
		if took > 3*time.Second {
			t.Errorf("back on webrtc %v after UDP was restored, want within 3 s", took)
		}
		if st.WebRTCRenewals == 0 {
			t.Error("no new PeerConnection was negotiated")
		}
		tr.waitBoth(t, 20)
		// Honest figures after the recovery: no round trip of the outage
		// (a pong that waited for it) in the smoothed RTT or the window's
		// quantiles; the path is as fast as before. Read every 100 ms
		// for 3 s.
		var worst clocksync.RTTStats
		for range 30 {
			r := a.Stats().WebRTC.RTT
			worst.Smoothed, worst.P95, worst.Max = max(worst.Smoothed, r.Smoothed), max(worst.P95, r.P95), max(worst.Max, r.Max)
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("webrtc RTT before the outage: smoothed %v, p95 %v, max %v; after: at most smoothed %v, p95 %v, max %v",
			before.Smoothed, before.P95, before.Max, worst.Smoothed, worst.P95, worst.Max)
		if limit := 2*before.Max + 5*time.Millisecond; worst.Max > limit || worst.Smoothed > limit {
			t.Errorf("RTT after the recovery: smoothed up to %v, max %v; before: max %v", worst.Smoothed, worst.Max, before.Max)
		}
		for _, s := range []*Session{a, b} {
			if s.Err() != nil || s.Stats().Switches != 2 {
				t.Errorf("%v: %v, %d switches", s.Role(), s.Err(), s.Stats().Switches)
			}
		}
	})
}

// lastChange is the transport of the last transport change in evs.
func lastChange(evs []Event) TransportKind {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == EventTransportChanged {
			return evs[i].Transport
		}
	}
	return TransportUnknown
}
