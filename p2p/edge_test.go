package p2p

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ragsync/ragsync/signaling"
)

// The edges of the envelope (issue 21): renegotiation backoff, retries at
// the start, a peer that gave up, a server outage.

// The wait between new PeerConnections grows from 5 s to 60 s and resets.
func TestRenewBackoffGrowsAndResets(t *testing.T) {
	var b renewBackoff
	var got []time.Duration
	for range 7 {
		got = append(got, b.grow())
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 60 * time.Second, 60 * time.Second, 60 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
	b.reset()
	if b.next() != rtcRenewMin {
		t.Errorf("after a reset the wait is %v, want %v", b.next(), rtcRenewMin)
	}
	// Offers in a 10-minute match without UDP: 5 in the first 2.5 min,
	// then one a minute, instead of 120 (one every 5 s).
	b.reset()
	n, at := 0, time.Duration(0)
	for at < 10*time.Minute {
		at += b.grow()
		n++
	}
	t.Logf("FIGURE renegotiations in 10 min without UDP: %d (one every 5 s: 120)", n)
	if n > 15 {
		t.Errorf("%d renegotiations in 10 minutes", n)
	}
}

// A renewed PeerConnection keeps checking for the whole wait before the
// next one: its ICE gives up (disconnected + failed timeouts) no earlier,
// and its checks (one per iceCheckInterval) last that long.
func TestICECheckingCoversTheWait(t *testing.T) {
	if f, n := iceChecking(0); f != iceFailed || n != iceMaxChecks {
		t.Errorf("defaults: %v, %d", f, n)
	}
	for _, w := range []time.Duration{rtcRenewMin, 10 * time.Second, 40 * time.Second, rtcRenewMax} {
		f, n := iceChecking(w)
		if iceDisconnected+f < w || time.Duration(n)*iceCheckInterval < w {
			t.Errorf("wait %v: fails after %v, checks for %v", w, iceDisconnected+f, time.Duration(n)*iceCheckInterval)
		}
	}
}

// A change of the local addresses resets the backoff (a sign the network
// changed); the first list seen and an unchanged one do not.
func TestLocalAddressChangeResetsBackoff(t *testing.T) {
	var mu sync.Mutex
	addrs := []net.Addr{&net.IPNet{IP: net.IPv4(10, 0, 0, 2), Mask: net.CIDRMask(24, 32)}}
	s := &Session{log: slog.New(slog.DiscardHandler), sig: &sigPump{localAddrs: func() ([]net.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		return append([]net.Addr(nil), addrs...), nil
	}}}
	s.sig.backoff.grow()
	s.sig.backoff.grow()
	now := time.Minute
	s.pollAddrs(now)
	now += addrPollInterval
	s.pollAddrs(now)
	if s.sig.backoff.next() != 20*time.Second {
		t.Fatalf("unchanged addresses reset the backoff: %v", s.sig.backoff.next())
	}
	mu.Lock()
	addrs = append(addrs, &net.IPNet{IP: net.IPv4(192, 168, 1, 7), Mask: net.CIDRMask(24, 32)})
	mu.Unlock()
	s.pollAddrs(now + addrPollInterval/2) // not due yet
	if s.sig.backoff.next() != 20*time.Second {
		t.Fatal("polled before addrPollInterval")
	}
	s.pollAddrs(now + addrPollInterval)
	if s.sig.backoff.next() != rtcRenewMin {
		t.Errorf("a new address did not reset the backoff: %v", s.sig.backoff.next())
	}
}

// When every probe was lost, the offerer probes again while time remains
// (a lossy link at the start), and gives up only after its deadline.
func TestOffererProbesAgainWhileTimeRemains(t *testing.T) {
	p := newRolePolicy(signaling.RoleOfferer, testPolicyConfig(), 10*time.Second)
	var links [2]linkState
	links[0].kind, links[1].kind = TransportWebRTC, TransportTCP
	for i := range links {
		links[i].state = LinkUp
		links[i].probe = probeRound{n: 3, lost: 3, max: time.Second}
	}
	if o := p.afterProbes(4*time.Second, &links, true); !o.retry || o.fail != "" {
		t.Errorf("every probe lost at 4 s of 10: %+v, want to probe again", o)
	}
	if o := p.afterProbes(10*time.Second, &links, true); o.fail == "" {
		t.Errorf("every probe lost at the deadline: %+v, want to give up", o)
	}
}

// A session whose peer left the signaling server before the match began
// (its Connect gave up) fails at once with ErrDisconnected and the
// reason, instead of waiting for the transports' timeouts.
func TestPeerGaveUpBeforeTheMatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := Config{TCPTimeout: time.Minute}.withDefaults("http://127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		s, err := newSession(sessionParams{
			cfg:  c,
			role: signaling.RoleAnswerer,
			// The relay never opens: the peer is not there.
			dialTCP: func(ctx context.Context) (net.Conn, error) { <-ctx.Done(); return nil, ctx.Err() },
			id:      testIdentity(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		start := time.Now()
		time.Sleep(2 * time.Second)
		s.peerLeftSignaling("left")
		err = s.life.waitReady(context.Background())
		took := time.Since(start)
		t.Logf("connect failed after %v: %v", took, err)
		if !errors.Is(err, ErrDisconnected) || !strings.Contains(err.Error(), "gave up") {
			t.Errorf("err %v, want ErrDisconnected: the peer gave up", err)
		}
		if took > 3*time.Second {
			t.Errorf("failed %v after the start, want right after the peer left (2 s)", took)
		}
	})
}

// While the signaling server is unreachable, a silent peer leaves the
// session interrupted, not disconnected, for up to serverGrace (a
// relay-only match has no path while the server is down); it resumes
// when the peer is heard again. With the server reachable, the same
// silence ends the session after DisconnectAfter.
func TestInterruptedNotDisconnectedWhileServerLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mute atomic.Bool
		a, _ := newPipeSessionsWrapped(t, Config{}, func(c net.Conn) net.Conn { return &faultConn{Conn: c, mute: &mute} })
		ea := collectEvents(a)
		a.setSignalingLost(true)
		if !a.Stats().SignalingLost {
			t.Fatal("Stats.SignalingLost not set")
		}
		mute.Store(true)
		time.Sleep(20 * time.Second)
		if st := a.Stats(); st.State != StateInterrupted || a.Err() != nil {
			t.Fatalf("after 20 s of silence with the server lost: %v, %v; want interrupted", st.State, a.Err())
		}
		// The server is back first; the peer is waited for DisconnectAfter
		// more (its relay is dialled again).
		a.setSignalingLost(false)
		time.Sleep(defaultDisconnectAfter - time.Second)
		if a.Err() != nil {
			t.Fatalf("ended right after the server came back: %v", a.Err())
		}
		mute.Store(false)
		ea.waitFor(t, "resumed", has(EventResumed))
		if a.Stats().State != StateConnected {
			t.Fatalf("state %v after the peer was heard again", a.Stats().State)
		}
		// Past the grace the session ends even with the server lost.
		a.setSignalingLost(true)
		mute.Store(true)
		start := time.Now()
		ea.waitFor(t, "disconnected", has(EventDisconnected))
		if took := time.Since(start); took < serverGrace || took > serverGrace+time.Second {
			t.Errorf("disconnected %v after the peer fell silent with the server lost, want %v", took, serverGrace)
		}
		mute.Store(false)
	})
}

// The same silence with the server reachable ends the session after
// DisconnectAfter.
func TestSilenceDisconnectsWithServerUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mute atomic.Bool
		a, _ := newPipeSessionsWrapped(t, Config{}, func(c net.Conn) net.Conn { return &faultConn{Conn: c, mute: &mute} })
		ea := collectEvents(a)
		mute.Store(true)
		start := time.Now()
		ea.waitFor(t, "disconnected", has(EventDisconnected))
		if took := time.Since(start); took > defaultDisconnectAfter+time.Second {
			t.Errorf("disconnected %v after the peer fell silent", took)
		}
		mute.Store(false)
	})
}

// A busy host (both peers on one loaded machine, no network fault): the
// peer is scheduled late now and then (up to 450 ms every 2 s), and its
// answers on WebRTC, read through more goroutines, come up to 60 ms after
// those on the relay. Over 5 minutes the offerer makes at most one switch
// (issue 21: ≤ 1 in 5 minutes); without the sustained-evidence rule
// (confirmFor) this timeline flaps.
func TestBusyHostDoesNotFlap(t *testing.T) {
	const t0 = 10 * time.Second
	type episode struct{ from, to time.Duration }
	var eps []episode
	seed := uint64(21)
	rnd := func(n uint64) time.Duration { // xorshift: a fixed timeline
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return time.Duration(seed % n)
	}
	for at := t0 + time.Second; at < t0+5*time.Minute; at += 2 * time.Second {
		from := at + rnd(1000)*time.Millisecond
		eps = append(eps, episode{from, from + rnd(450)*time.Millisecond})
	}
	in := func(t, slack time.Duration) bool {
		for _, e := range eps {
			if t >= e.from && t < e.to+slack {
				return true
			}
		}
		return false
	}
	s := newPolicySim(TransportWebRTC)
	s.rtt = [2]time.Duration{2 * ms, 3 * ms} // loopback
	s.paused = func(t time.Duration) bool { return in(t, 0) }
	s.slower[0] = func(t time.Duration) time.Duration {
		if in(t, 100*ms) {
			return 60 * ms
		}
		return 0
	}
	s.run(t0 + 5*time.Minute)
	t.Logf("FIGURE busy host (sim, %d starvation episodes in 5 min): %d switches", len(eps), len(s.switches))
	if len(s.switches) > 1 {
		t.Errorf("%d switches in 5 minutes on a busy host: %q", len(s.switches), s.switches)
	}
}

// Round 2's goal with the backoff: after UDP is cut for 60 s (and 180 s),
// the session is back on WebRTC within 3 s of UDP coming back, while
// renegotiating far less often than every 5 s: each renewed
// PeerConnection keeps checking for the whole wait (see renewBackoff).
func TestWebRTCBackQuicklyDespiteBackoff(t *testing.T) {
	for _, outage := range []time.Duration{60 * time.Second, 180 * time.Second} {
		synctest.Test(t, func(t *testing.T) {
			np := newNetPair(t, 5*time.Millisecond, preferWebRTC, preferWebRTC)
			a := np.a
			ea, _, tr := np.runTraffic(t)
			defer tr.halt()
			time.Sleep(2 * time.Second)
			np.cut.Store(true)
			ea.waitFor(t, "failover to tcp", changedTo(TransportTCP))
			time.Sleep(outage)
			np.cut.Store(false)
			restored := time.Now()
			ea.waitFor(t, "back on webrtc", func(evs []Event) bool {
				return countKind(evs, EventTransportChanged) >= 2 && lastChange(evs) == TransportWebRTC
			})
			took := time.Since(restored)
			n := a.Stats().WebRTCRenewals
			t.Logf("FIGURE UDP cut %v: back on webrtc %v after it was restored; %d new PeerConnections (every 5 s would be %d)", outage, took, n, int(outage/rtcRenewMin))
			if took > 3*time.Second {
				t.Errorf("back on webrtc %v after UDP was restored, want within 3 s", took)
			}
			if n == 0 || n > uint64(outage/rtcRenewMin)/2 {
				t.Errorf("%d new PeerConnections in a %v outage", n, outage)
			}
		})
	}
}

// WebRTC pinging worse for good moves the session to TCP after 2 s, but
// not while the local loop keeps running late (a busy machine, where
// pion's goroutines answer later than the relay's: no evidence about the
// paths).
func TestNoPingSwitchOnBusyHost(t *testing.T) {
	const t0 = 10 * time.Second
	for _, busy := range []bool{false, true} {
		s := newPolicySim(TransportWebRTC)
		s.slower[0] = func(t time.Duration) time.Duration {
			if t >= t0+5*time.Second {
				return 30 * ms
			}
			return 0
		}
		for s.now < t0+70*time.Second {
			if busy {
				s.p.loopLate(s.now, 20*ms)
			}
			s.run(s.now + time.Second)
		}
		if want := map[bool]int{false: 1, true: 0}[busy]; len(s.switches) != want {
			t.Errorf("busy %v: %d switches %q, want %d", busy, len(s.switches), s.switches, want)
		}
	}
}
