package p2p

import (
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/p2p/internal/wire"
)

func testPinger(t *testing.T, clock clocksync.Clock, leader bool) *pinger {
	t.Helper()
	var cc clocksync.Config
	cc.Leader = leader
	cal, err := clocksync.NewCalibrator(cc, clock)
	if err != nil {
		t.Fatal(err)
	}
	return newPinger(cal)
}

// A ping from one pinger is answered by the other's pong, which the first
// turns into a round-trip sample; messages share one control sequence;
// refused clock messages are counted, a new kind of peer error reported
// once.
func TestPingerRoundTrip(t *testing.T) {
	var clk clocksync.ManualClock
	clk.Set(time.Hour)
	a, b := testPinger(t, &clk, true), testPinger(t, &clk, false)

	ping, t1 := a.ping(clk.Now())
	if t1 != time.Hour {
		t.Errorf("t1 = %v, want %v", t1, time.Hour)
	}
	h, payload, err := wire.ParseHeader(ping)
	if err != nil || h.Type != wire.MsgPing || h.Seq != 1 {
		t.Fatalf("ping header %+v %v", h, err)
	}
	clk.Advance(10 * time.Millisecond)
	pong, err := b.pong(TransportTCP, payload)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Millisecond)
	h, payload, err = wire.ParseHeader(pong)
	if err != nil || h.Type != wire.MsgPong {
		t.Fatalf("pong header %+v %v", h, err)
	}
	smp, err := a.cal.HandlePong(payload)
	if err != nil || smp.Delay != 20*time.Millisecond {
		t.Errorf("sample %+v %v, want a 20 ms round trip", smp, err)
	}
	c := a.control(wire.Control{Kind: wire.CtrlBye})
	if h, _, _ := wire.ParseHeader(c); h.Type != wire.MsgControl || h.Seq != 2 {
		t.Errorf("control header %+v, want control #2", h)
	}

	if _, err := b.pong(TransportTCP, []byte{1, 2}); err == nil {
		t.Fatal("a malformed ping was answered")
	} else {
		b.refused(err)
	}
	if b.malformed != 1 {
		t.Errorf("malformed = %d, want 1", b.malformed)
	}
	if !b.refused(clocksync.ErrRoleConflict) || b.refused(clocksync.ErrRoleConflict) || b.peerErrors != 2 {
		t.Errorf("peer errors %d; a repeated error must be reported once", b.peerErrors)
	}
}
