package p2p

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/transport/v5/vnet"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
)

// traffic sends a message every interval from each session and drains
// both, until stopped. It counts what each side received.
type traffic struct {
	stop       chan struct{}
	wg         sync.WaitGroup
	recvA      atomic.Int64
	recvB      atomic.Int64
	sendErrors atomic.Int64
}

func startTraffic(a, b *Session, interval time.Duration) *traffic {
	tr := &traffic{stop: make(chan struct{})}
	run := func(s *Session, got *atomic.Int64) {
		defer tr.wg.Done()
		tk := time.NewTicker(interval)
		defer tk.Stop()
		msg := make([]byte, 64)
		for {
			select {
			case <-tr.stop:
				return
			case <-tk.C:
			}
			if err := s.Send(msg); err != nil {
				tr.sendErrors.Add(1)
			}
			got.Add(int64(s.Poll(func([]byte) {})))
		}
	}
	tr.wg.Add(2)
	go run(a, &tr.recvA)
	go run(b, &tr.recvB)
	return tr
}

func (tr *traffic) halt() { close(tr.stop); tr.wg.Wait() }

// waitBoth waits until each side has received n more messages than when
// it was called.
func (tr *traffic) waitBoth(t *testing.T, n int64) {
	t.Helper()
	a0, b0 := tr.recvA.Load(), tr.recvB.Load()
	waitUntil(t, fmt.Sprintf("%d more messages each way", n), func() bool {
		return tr.recvA.Load() >= a0+n && tr.recvB.Load() >= b0+n
	})
}

// drain counts what arrived after halt.
func (tr *traffic) drain(a, b *Session) {
	tr.recvA.Add(int64(a.Poll(func([]byte) {})))
	tr.recvB.Add(int64(b.Poll(func([]byte) {})))
}

// runTraffic collects both sessions' events and starts traffic between
// them (a message every 16 ms each way), and returns once 20 messages went
// each way. The caller halts the traffic; if the messages never come,
// runTraffic halts it before the test fails.
func (np *netPair) runTraffic(t *testing.T) (ea, eb *eventLog, tr *traffic) {
	t.Helper()
	ea, eb = collectEvents(np.a), collectEvents(np.b)
	tr = startTraffic(np.a, np.b, 16*time.Millisecond)
	flowing := false
	defer func() {
		if !flowing {
			tr.halt()
		}
	}()
	tr.waitBoth(t, 20)
	flowing = true
	return ea, eb, tr
}

func TestSessionQuickMatch(t *testing.T) {
	leaktest.Check(t)
	url := startSignaling(t)
	a, b := pairQuick(t, url, cfgWith(nil), cfgWith(nil))
	const n = 1000
	gotA, gotB := exchange(t, a, b, n) // returns with the stats settled
	sa, sb := a.Stats(), b.Stats()
	if sa.Transport != sb.Transport {
		t.Errorf("peers disagree on the transport: %v vs %v", sa.Transport, sb.Transport)
	}
	if gotA < n*95/100 || gotB < n*95/100 {
		t.Errorf("received %d and %d of %d", gotA, gotB, n)
	}
	if sa.Received != uint64(gotA) || sb.Received != uint64(gotB) {
		t.Errorf("Stats.Received %d/%d, drained %d/%d", sa.Received, sb.Received, gotA, gotB)
	}
	if sa.Lost != uint64(n-gotA) || sb.Lost != uint64(n-gotB) {
		t.Errorf("Stats.Lost %d/%d, want %d/%d", sa.Lost, sb.Lost, n-gotA, n-gotB)
	}
}

func TestSessionWebRTCDisabled(t *testing.T) {
	leaktest.Check(t)
	url := startSignaling(t)
	a, b := pairByRoom(t, url, cfgWith(func(c *Config) { c.DisableWebRTC = true }), cfgWith(nil))
	for _, s := range []*Session{a, b} {
		st := s.Stats()
		if st.Transport != TransportTCP {
			t.Errorf("%v on %v, want tcp (%s)", s.Role(), st.Transport, st.ChoiceReason)
		}
	}
	if st := a.Stats(); st.WebRTC.State != LinkDisabled {
		t.Errorf("offerer webrtc state %v", st.WebRTC.State)
	}
	gotA, gotB := exchange(t, a, b, 200)
	if gotA < 190 || gotB < 190 {
		t.Errorf("received %d and %d of 200 over tcp", gotA, gotB)
	}
}

// TestSessionPeerDisabledWebRTC: the answerer has WebRTC off; its hello
// tells the offerer, which settles on TCP without waiting for the WebRTC
// timeout.
func TestSessionPeerDisabledWebRTC(t *testing.T) {
	leaktest.Check(t)
	url := startSignaling(t)
	// WebRTCTimeout is a minute: had the offerer waited for it instead of
	// the answerer's hello, the WebRTC error would be the timeout, not
	// "disabled by the peer" (checked by reason, not by how long it took).
	a, b := pairByRoom(t, url, cfgWith(func(c *Config) { c.WebRTCTimeout = time.Minute }),
		cfgWith(func(c *Config) { c.DisableWebRTC = true }))
	st := a.Stats()
	if st.Transport != TransportTCP || st.WebRTC.Err != "disabled by the peer" {
		t.Errorf("offerer: %v, webrtc %v (%s)", st.Transport, st.WebRTC.State, st.WebRTC.Err)
	}
	if b.Stats().Transport != TransportTCP {
		t.Errorf("answerer on %v", b.Stats().Transport)
	}
}

func TestSessionWebRTCBlocked(t *testing.T) {
	leaktest.Check(t)
	url := startSignaling(t)
	// An interface filter that matches nothing: no candidates, so ICE
	// cannot connect, and the session settles on TCP after WebRTCTimeout.
	blocked := func(c *Config) {
		c.InterfaceFilter = func(string) bool { return false }
		c.WebRTCTimeout = time.Second
	}
	a, b := pairByRoom(t, url, cfgWith(blocked), cfgWith(blocked))
	sa, sb := a.Stats(), b.Stats()
	if sa.Transport != TransportTCP || sb.Transport != TransportTCP {
		t.Fatalf("transports %v/%v, want tcp (%s)", sa.Transport, sb.Transport, sa.ChoiceReason)
	}
	t.Logf("offerer: %s; webrtc %v (%s)", sa.ChoiceReason, sa.WebRTC.State, sa.WebRTC.Err)
	gotA, gotB := exchange(t, a, b, 200)
	if gotA < 190 || gotB < 190 {
		t.Errorf("received %d and %d of 200 over tcp", gotA, gotB)
	}
}

// preferWebRTC makes the initial choice deterministic (on loopback the two
// transports ping about the same).
func preferWebRTC(c *Config) { c.Prefer = TransportWebRTC }

// TestSessionWebRTCLate: the data channel opens only after the offerer
// settled on TCP; the session then moves to it (preferred) without ending.
func TestSessionWebRTCLate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits for WebRTC in real time over pion sockets")
	}
	leaktest.Check(t)
	url := startSignaling(t)
	late := func(c *Config) {
		preferWebRTC(c)
		c.WebRTCTimeout = time.Millisecond // gives up on WebRTC at once
	}
	a, b := pairByRoom(t, url, cfgWith(late), cfgWith(late))
	if st := a.Stats(); st.Transport != TransportTCP {
		t.Skipf("WebRTC opened within 1 ms (%s); nothing to test", st.ChoiceReason)
	}
	ea, eb := collectEvents(a), collectEvents(b)
	toWebRTC := func(evs []Event) bool {
		i := index(evs, EventTransportChanged, 0)
		return i >= 0 && evs[i].Transport == TransportWebRTC
	}
	evA := ea.waitFor(t, "offerer moving to webrtc", toWebRTC)
	eb.waitFor(t, "answerer moving to webrtc", toWebRTC)
	// EventTransportUp reports a transport that opens once the session
	// runs; WebRTC may also have opened while the session was still
	// choosing (after its 1 ms timeout), and then there is none.
	if i := index(evA, EventTransportUp, 0); i >= 0 && (evA[i].Transport != TransportWebRTC || i > index(evA, EventTransportChanged, 0)) {
		t.Errorf("events %v", evA)
	}
	gotA, gotB := exchange(t, a, b, 100)
	if gotA < 95 || gotB < 95 {
		t.Errorf("received %d, %d of 100 after the switch", gotA, gotB)
	}
}

// Without a preference, a WebRTC channel that opens after the session
// settled on TCP is taken as soon as it pings no worse (ties go to WebRTC).
func TestSessionWebRTCLateTiesGoToWebRTC(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits for WebRTC in real time over pion sockets")
	}
	leaktest.Check(t)
	url := startSignaling(t)
	late := func(c *Config) { c.WebRTCTimeout = time.Millisecond }
	a, b := pairByRoom(t, url, cfgWith(late), cfgWith(late))
	if st := a.Stats(); st.Transport != TransportTCP {
		t.Skipf("WebRTC opened within 1 ms (%s); nothing to test", st.ChoiceReason)
	}
	ea, eb := collectEvents(a), collectEvents(b)
	toWebRTC := func(evs []Event) bool {
		i := index(evs, EventTransportChanged, 0)
		return i >= 0 && evs[i].Transport == TransportWebRTC
	}
	evA := ea.waitFor(t, "offerer moving to webrtc", toWebRTC)
	eb.waitFor(t, "answerer moving to webrtc", toWebRTC)
	i := index(evA, EventTransportChanged, 0)
	if r := evA[i].Reason; !strings.Contains(r, "no worse") {
		t.Errorf("switch reason %q", r)
	}
}

// TestSessionFailoverOnKill: the data channel is closed under the offerer
// (its peer sees the stream reset); both peers move to TCP at once,
// without the game seeing an interruption, and traffic goes on. In virtual
// time (newNetPair in a synctest bubble).
func TestSessionFailoverOnKill(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		np := newNetPair(t, 5*time.Millisecond, preferWebRTC, preferWebRTC)
		a, b := np.a, np.b
		if a.Stats().Transport != TransportWebRTC {
			t.Fatalf("initial transport %v", a.Stats().Transport)
		}
		ea, eb, tr := np.runTraffic(t) // traffic flows both ways over WebRTC

		killedAt := a.now() - a.start
		a.tr.rtc.Load().raw.Load().rw.Close() // the data channel dies under the offerer
		evA := ea.waitFor(t, "offerer failover", changedTo(TransportTCP))
		evB := eb.waitFor(t, "answerer failover", changedTo(TransportTCP))
		tr.waitBoth(t, 50) // traffic goes on after the failover, both ways
		tr.halt()

		ch := evA[index(evA, EventTransportChanged, 0)]
		t.Logf("offerer failed over %v after the kill: %s", ch.At-killedAt, ch.Reason)
		checkNoInterruption(t, "offerer", evA)
		checkNoInterruption(t, "answerer", evB)
		if a.Err() != nil || b.Err() != nil {
			t.Errorf("session errors %v, %v", a.Err(), b.Err())
		}
		if sa, sb := a.Stats(), b.Stats(); sa.Transport != TransportTCP || sb.Transport != TransportTCP {
			t.Errorf("transports after failover %v/%v", sa.Transport, sb.Transport)
		}
	})
}

// TestSessionFailoverOnSilenceAndBack: the WebRTC path goes silent both
// ways while ICE has not given up; the session fails over to TCP within
// FailoverAfter plus a ping, before the game sees an interruption, and
// takes WebRTC back once it works again. In virtual time, so the timing
// is the protocol's, whatever the machine's load.
func TestSessionFailoverOnSilenceAndBack(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		np := newNetPair(t, 5*time.Millisecond, preferWebRTC, preferWebRTC)
		a := np.a
		ea, eb, tr := np.runTraffic(t)
		defer tr.halt()

		cutAt := a.now() - a.start
		np.cut.Store(true)
		evA := ea.waitFor(t, "offerer failover", changedTo(TransportTCP))
		eb.waitFor(t, "answerer failover", changedTo(TransportTCP))
		took := evA[index(evA, EventTransportChanged, 0)].At - cutAt
		if limit := a.cfg.FailoverAfter + 2*a.cfg.PingInterval; took > limit {
			t.Errorf("failover %v after the path died, want within %v", took, limit)
		}

		// It recovers: the preferred transport is taken back.
		np.cut.Store(false)
		back := func(evs []Event) bool {
			i := index(evs, EventTransportChanged, 0)
			return i >= 0 && index(evs, EventTransportChanged, i+1) >= 0
		}
		evA = ea.waitFor(t, "offerer switching back", back)
		evB := eb.waitFor(t, "answerer switching back", back)
		for _, evs := range [][]Event{evA, evB} {
			i := index(evs, EventTransportChanged, 0)
			j := index(evs, EventTransportChanged, i+1)
			if evs[i].Transport != TransportTCP || evs[j].Transport != TransportWebRTC {
				t.Errorf("switches %v then %v", evs[i], evs[j])
			}
		}
		checkNoInterruption(t, "offerer", evA)
		checkNoInterruption(t, "answerer", evB)
		tr.waitBoth(t, 20) // and traffic flows over it
		t.Logf("offerer: %v", evA)
	})
}

// TestSessionSilentPeer: a peer silent (on both transports) for longer than
// InterruptAfter interrupts the session, which resumes when it talks
// again; silent for DisconnectAfter, it ends the session. In virtual time.
func TestSessionSilentPeer(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		np := newNetPair(t, 5*time.Millisecond, nil, nil)
		a, b := np.a, np.b
		ea := collectEvents(a)
		tr := startTraffic(a, b, 16*time.Millisecond)
		defer tr.halt()
		tr.waitBoth(t, 10)

		// Silent for a while, then back before the timeout: interrupted, resumed.
		np.muteB.Store(true)
		ea.waitFor(t, "interrupted", has(EventInterrupted))
		time.Sleep(200 * time.Millisecond)
		np.muteB.Store(false)
		evs := ea.waitFor(t, "resumed", has(EventResumed))
		i, j := index(evs, EventInterrupted, 0), index(evs, EventResumed, 0)
		if j < i {
			t.Errorf("resumed before interrupted: %v", evs)
		}
		if evs[i].Silence < a.cfg.InterruptAfter || evs[j].Silence < a.cfg.InterruptAfter+200*time.Millisecond {
			t.Errorf("interrupted after %v, resumed after %v of silence", evs[i].Silence, evs[j].Silence)
		}
		if index(evs, EventDisconnected, 0) >= 0 {
			t.Fatalf("disconnected: %v", evs)
		}

		// Silent for good: interrupted, then disconnected once nothing has
		// come for DisconnectAfter.
		np.muteB.Store(true)
		evs = ea.waitFor(t, "disconnected", has(EventDisconnected))
		k := index(evs, EventDisconnected, 0)
		if index(evs[j:k], EventInterrupted, 0) < 0 {
			t.Errorf("no interruption before the disconnect: %v", evs)
		}
		if !errors.Is(evs[k].Err, ErrDisconnected) || evs[k].Silence < a.cfg.DisconnectAfter ||
			evs[k].Silence > a.cfg.DisconnectAfter+2*tickInterval {
			t.Errorf("disconnect event %v, want after %v of silence", evs[k], a.cfg.DisconnectAfter)
		}
		<-a.Done()
		if !errors.Is(a.Err(), ErrDisconnected) {
			t.Errorf("Err %v", a.Err())
		}
		if err := a.Send([]byte("x")); !errors.Is(err, ErrDisconnected) {
			t.Errorf("Send after disconnect: %v", err)
		}
		if st := a.Stats(); st.State != StateDisconnected {
			t.Errorf("state %v", st.State)
		}
	})
}

func TestSessionPeerCloses(t *testing.T) {
	leaktest.Check(t)
	url := startSignaling(t)
	a, b := pairByRoom(t, url, cfgWith(nil), cfgWith(nil))
	eb := collectEvents(b)
	a.Close()
	evs := eb.waitFor(t, "disconnected", has(EventDisconnected))
	if ev := evs[index(evs, EventDisconnected, 0)]; ev.Reason != "the peer closed the session" {
		t.Errorf("disconnect %v", ev)
	}
	if err := a.Send([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	<-b.Done()
	if err := b.Send([]byte("x")); !errors.Is(err, ErrDisconnected) || !errors.Is(b.Err(), ErrDisconnected) {
		t.Errorf("Send after the peer closed: %v (Err %v)", err, b.Err())
	}
}

// TestSessionVNetDelayLoss runs two sessions over a pion vnet with a 50 ms
// one-way delay and 5% loss, in virtual time (testing/synctest, the
// signaling server on an in-memory listener): the RTT and the message
// counts are what the network model makes them, whatever the machine's
// load.
func TestSessionVNetDelayLoss(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, testSessionVNetDelayLoss)
}

func testSessionVNetDelayLoss(t *testing.T) {
	url, viaMem := startMemSignaling(t)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	na, nb := newVNet(t, 50*time.Millisecond, func(vnet.Chunk) bool { // 5 % loss
		mu.Lock()
		defer mu.Unlock()
		return rng.Float64() >= 0.05
	})
	onVNet := func(n *vnet.Net) func(*Config) {
		return func(c *Config) {
			viaMem(c)
			c.Net = n
			c.Interfaces = InterfacesAll
			c.DisableTCP = true // WebRTC is what is under test
		}
	}
	a, b := pairByRoom(t, url, cfgWith(onVNet(na)), cfgWith(onVNet(nb)))
	ea, eb := collectEvents(a), collectEvents(b)
	tr := startTraffic(a, b, 16*time.Millisecond) // 60 Hz
	time.Sleep(3 * time.Second)
	tr.halt()
	time.Sleep(300 * time.Millisecond)
	tr.drain(a, b)
	sa, sb := a.Stats(), b.Stats()
	t.Logf("offerer: rtt %v (min %v p95 %v), loss %.1f%%, jitter %v, candidates %v/%v, offset %v ± %v",
		sa.RTT.Smoothed, sa.RTT.Min, sa.RTT.P95, 100*sa.Loss, sa.Jitter, sa.LocalCandidate, sa.RemoteCandidate,
		sa.ClockOffset, sa.ClockUncertainty)
	for _, c := range []struct {
		name string
		st   Stats
		got  int64
		evs  []Event
	}{{"offerer", sa, tr.recvA.Load(), ea.snapshot()}, {"answerer", sb, tr.recvB.Load(), eb.snapshot()}} {
		if c.st.Transport != TransportWebRTC || c.st.State != StateConnected {
			t.Errorf("%s: %v, %v", c.name, c.st.Transport, c.st.State)
		}
		if index(c.evs, EventDisconnected, 0) >= 0 {
			t.Errorf("%s disconnected: %v", c.name, c.evs)
		}
		if c.st.RTT.Min < 100*time.Millisecond || c.st.RTT.Min > 150*time.Millisecond || c.st.RTT.P95 < c.st.RTT.Min {
			t.Errorf("%s: min RTT %v, want about 100ms", c.name, c.st.RTT.Min)
		}
		// 3 s (virtual) at 60 Hz = ~180 sent; 5% loss.
		if c.got < 120 || uint64(c.got) != c.st.Received {
			t.Errorf("%s received %d (Stats %d)", c.name, c.got, c.st.Received)
		}
		if c.st.Loss > 0.2 {
			t.Errorf("%s: loss %.3f, want about 0.05", c.name, c.st.Loss)
		}
	}
	// The router drops 5% of all packets: about that share of the ~370
	// messages is lost, not retransmitted (no loss at all would mean the
	// channel is reliable).
	if lost := sa.Lost + sb.Lost; lost < 3 {
		t.Errorf("%d messages lost in both directions, want about 5%% of %d", lost, sa.Expected+sb.Expected)
	}
}

func TestRoomAbandonedAndCanceled(t *testing.T) {
	leaktest.Check(t)
	url := startSignaling(t)
	ctx := context.Background()
	room, err := CreateRoom(ctx, url, cfgWith(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(room.Code()) != 6 {
		t.Errorf("code %q", room.Code())
	}
	room.Close()
	if _, err := room.Connect(ctx); err == nil {
		t.Error("Connect after Close succeeded")
	}
	// Waiting for a peer who never comes, until the context ends.
	room, err = CreateRoom(ctx, url, cfgWith(nil))
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := room.Connect(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Connect with nobody joining: %v", err)
	}
	if _, err := Connect(ctx, url, "22222", cfgWith(nil)); err == nil {
		t.Error("a malformed room code was accepted")
	}
	// A code nobody has used yet creates the room and waits in it.
	wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer wcancel()
	if _, err := Connect(wctx, url, "222222", cfgWith(nil)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Connect to a new code with nobody joining: %v", err)
	}
	if _, err := Connect(ctx, url, QuickMatch, Config{DisableTCP: true, DisableWebRTC: true}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("both transports disabled: %v", err)
	}
}

func TestThirdPlayer(t *testing.T) {
	leaktest.Check(t)
	url := startSignaling(t)
	a, _ := pairByRoom(t, url, cfgWith(nil), cfgWith(nil))
	_, err := Connect(testCtx(t), url, a.Room(), cfgWith(nil))
	var se *signaling.Error
	if !errors.As(err, &se) || se.Code != signaling.ErrRoomFull {
		t.Errorf("third player: %v", err)
	}
	if st := a.Stats(); st.State != StateConnected {
		t.Errorf("the pair's state after a third player tried: %v", st.State)
	}
}

// TestSignalingServerGoesAway: the session does not need the signaling
// server once connected. Its shutdown takes the relayed TCP stream with
// it; the session goes on over WebRTC.
func TestSignalingServerGoesAway(t *testing.T) {
	leaktest.Check(t)
	url, stop := startSignalingStop(t)
	a, b := pairByRoom(t, url, cfgWith(preferWebRTC), cfgWith(preferWebRTC))
	ea := collectEvents(a)
	// Wait for the TCP standby to be up on both, then pull the server.
	waitUntil(t, "the TCP standby up on both", func() bool {
		return a.Stats().TCP.State == LinkUp && b.Stats().TCP.State == LinkUp
	})
	stop()
	evs := ea.waitFor(t, "tcp down", func(evs []Event) bool {
		i := index(evs, EventTransportDown, 0)
		return i >= 0 && evs[i].Transport == TransportTCP
	})
	gotA, gotB := exchange(t, a, b, 200)
	if gotA < 190 || gotB < 190 {
		t.Errorf("received %d, %d of 200 without the server", gotA, gotB)
	}
	if a.Err() != nil || b.Err() != nil || a.Stats().Transport != TransportWebRTC {
		t.Errorf("errors %v %v, transport %v; events %v", a.Err(), b.Err(), a.Stats().Transport, evs)
	}
	checkNoInterruption(t, "offerer", ea.snapshot())
}

// Two players who agreed on a code both Connect with it: one creates the
// room, the other joins, and they pair.
func TestPairByAgreedCode(t *testing.T) {
	leaktest.Check(t)
	url := startSignaling(t)
	ctx := testCtx(t)
	var s [2]*Session
	var errs [2]error
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s[i], errs[i] = Connect(ctx, url, "brawl7", cfgWith(nil))
		}()
	}
	wg.Wait()
	for i := range s {
		if errs[i] != nil {
			t.Fatalf("session %d: %v", i, errs[i])
		}
		defer s[i].Close()
	}
	if s[0].Role() == s[1].Role() || s[0].Room() != "BRAWL7" || s[1].Room() != "BRAWL7" {
		t.Fatalf("roles %v/%v rooms %s/%s", s[0].Role(), s[1].Role(), s[0].Room(), s[1].Room())
	}
	if err := s[0].Send([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got := recvOne(t, s[1]); string(got) != "hello" {
		t.Errorf("received %q", got)
	}
}

// TestSessionTCPRelayInjected: the TCP relay is dialled the way the
// signaling client is (Config.Signaling.HTTPClient's transport), so a
// session over an in-memory signaling server runs both its transports in
// virtual time; here TCP only, through the server's relay.
func TestSessionTCPRelayInjected(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		url, viaMem := startMemSignaling(t)
		tcpOnly := func(c *Config) { viaMem(c); c.DisableWebRTC = true }
		a, b := pairByRoom(t, url, cfgWith(tcpOnly), cfgWith(tcpOnly))
		if sa := a.Stats(); sa.Transport != TransportTCP || sa.TCP.State != LinkUp {
			t.Fatalf("offerer on %v (tcp %v: %s)", sa.Transport, sa.TCP.State, sa.TCP.Err)
		}
		if err := a.Send([]byte("over the relay")); err != nil {
			t.Fatal(err)
		}
		if got := recvOne(t, b); string(got) != "over the relay" {
			t.Errorf("received %q", got)
		}
	})
}

// TestSessionStartsOnWebRTCBeforeRelay: the offerer does not wait for the
// relay, nor for a probe, once WebRTC's channel is open (a browser's relay
// opens hundreds of ms after its data channel); the relay, once it opens,
// is the standby.
func TestSessionStartsOnWebRTCBeforeRelay(t *testing.T) {
	leaktest.Check(t)
	url := startSignaling(t)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	slowRelay := func(c *Config) {
		c.RelayDialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	}
	a, b := pairByRoom(t, url, cfgWith(slowRelay), cfgWith(slowRelay))
	for _, s := range []*Session{a, b} {
		if st := s.Stats(); st.Transport != TransportWebRTC || st.TCP.State == LinkUp {
			t.Fatalf("%v on %v with tcp %v, want webrtc before the relay opened (%s)", s.Role(), st.Transport, st.TCP.State, st.ChoiceReason)
		}
	}
	if r := a.Stats().ChoiceReason; !strings.Contains(r, "webrtc's data channel is open while tcp is connecting") {
		t.Errorf("offerer's choice reason %q", r)
	}
	ea := collectEvents(a)
	once.Do(func() { close(release) })
	ea.waitFor(t, "the relay opening as the standby", func(evs []Event) bool {
		i := index(evs, EventTransportUp, 0)
		return i >= 0 && evs[i].Transport == TransportTCP
	})
	if st := a.Stats(); st.Transport != TransportWebRTC {
		t.Errorf("offerer moved to %v when the relay opened", st.Transport)
	}
	gotA, gotB := exchange(t, a, b, 100)
	if gotA < 95 || gotB < 95 {
		t.Errorf("received %d, %d of 100", gotA, gotB)
	}
}
