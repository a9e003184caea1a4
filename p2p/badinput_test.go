package p2p

import (
	"bytes"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ragsync/ragsync/internal/clockwire"
	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/p2p/internal/wire"
)

// TestMalformedInput: garbage from the peer is dropped and counted, never
// delivered, and the session goes on.
func TestMalformedInput(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		a, b := newPipeSessions(t, Config{MaxMessageSize: 100})
		ping := clockwire.AppendPing(nil, clockwire.Ping{Seq: 1, T1: time.Second, Leader: true})
		tcp := a.tr.tcp.Load()
		for _, g := range []struct {
			name string
			msg  []byte
		}{
			{"empty", []byte{}},
			{"short header", []byte{0x11, 0, 0}},
			{"wrong version", []byte{0x21, 0, 0, 0, 1, 'x'}},
			{"unknown type", []byte{0x17, 0, 0, 0, 1}},
			{"unknown control", []byte{0x14, 0, 0, 0, 1, 9, 9}},
			{"truncated select", []byte{0x14, 0, 0, 0, 1, 1, 0, 0, 0}},
			{"select of an unknown transport", []byte{0x14, 0, 0, 0, 1, 1, 0, 0, 0, 1, 7}},
			{"truncated clocksync ping", append([]byte{0x12, 0, 0, 0, 1}, 0xC5, 1)},
			{"a ping where a pong belongs", append([]byte{0x13, 0, 0, 0, 1}, ping...)},
			{"data over MaxMessageSize", append([]byte{0x11, 0, 0, 0, 1}, make([]byte, 101)...)},
			{"a frame far over it", append([]byte{0x11, 0, 0, 0, 1}, make([]byte, 5000)...)},
		} {
			// No subtests: T.Run cannot be called in a synctest bubble.
			before := b.Stats().Malformed
			if err := tcp.send(g.msg); err != nil {
				t.Fatalf("%s: %v", g.name, err)
			}
			waitUntil(t, g.name+" counted", func() bool { return b.Stats().Malformed > before })
			if m := b.Stats().Malformed; m != before+1 {
				t.Errorf("%s: Malformed went from %d to %d", g.name, before, m)
			}
		}
		// A ping claiming to come from the leader, sent to the leader: two
		// leaders cannot agree on a game clock.
		if err := b.tr.tcp.Load().send(append([]byte{0x12, 0, 0, 0, 1}, ping...)); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the role conflict counted", func() bool { return a.Stats().Malformed >= 1 })
		if m := a.Stats().Malformed; m != 1 {
			t.Errorf("leader: Malformed = %d after a role conflict", m)
		}
		if n := b.Poll(func(p []byte) { t.Errorf("garbage delivered: % x", p) }); n != 0 {
			t.Errorf("%d messages delivered", n)
		}
		// The session is fine.
		if err := a.Send([]byte("still here")); err != nil {
			t.Fatal(err)
		}
		if got := recvOne(t, b); string(got) != "still here" {
			t.Errorf("after garbage: %q", got)
		}
		if st := b.Stats(); st.State != StateConnected || st.Received != 1 {
			t.Errorf("state %v, received %d", st.State, st.Received)
		}
	})
}

// TestRecvQueueOverflow: a game that does not drain loses the oldest
// messages, counted, never the newest.
func TestRecvQueueOverflow(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		a, b := newPipeSessions(t, Config{RecvQueue: 8})
		for i := 0; i < 20; i++ {
			a.Send([]byte{byte(i)})
			// Each message must be written before the next is sent: the TCP
			// sender is latest-only, and a loaded machine runs its writer
			// later than any fixed pause.
			waitUntil(t, "the TCP writer", func() bool { return tcpWritten(a) })
		}
		waitUntil(t, "20 messages received", func() bool { return b.Stats().Received >= 20 })
		var got []byte
		b.Poll(func(p []byte) { got = append(got, p[0]) })
		if st := b.Stats(); st.Received != 20 || st.RecvOverflow != 12 {
			t.Errorf("received %d, overflow %d", st.Received, st.RecvOverflow)
		}
		if !bytes.Equal(got, []byte{12, 13, 14, 15, 16, 17, 18, 19}) {
			t.Errorf("kept %v, want the newest 8", got)
		}
	})
}

// TestRTCOversizedMessage: a data-channel message larger than the maximum
// is read, dropped and counted; the channel goes on.
func TestRTCOversizedMessage(t *testing.T) {
	leaktest.Check(t)
	cfg := testConfig()
	cfg.MaxMessageSize = 100
	a, _, _, hb := newRTCPair(t, cfg)
	if err := a.send(make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	if err := a.send([]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-hb.msgs:
		if len(m) != 3 {
			t.Errorf("got a %d-byte message", len(m))
		}
	case err := <-hb.down:
		t.Fatalf("transport died: %v", err)
	case <-testwait.Chan(t):
		t.Fatal("nothing arrived (gave up near the test binary's deadline)")
	}
	if n := hb.malformed.Load(); n != 1 {
		t.Errorf("%d malformed", n)
	}
}

// FuzzSessionInput feeds arbitrary bytes to a live session's receive path,
// as if they had arrived on a transport: it must never panic, and only a
// well-formed data message may reach the application, intact.
func FuzzSessionInput(f *testing.F) {
	ping := clockwire.AppendPing(nil, clockwire.Ping{Seq: 1, T1: time.Second, Leader: true})
	pong := clockwire.AppendPong(nil, clockwire.Pong{Seq: 1, T1: time.Second, T2: 2 * time.Second, T3: 2 * time.Second, Leader: true, GameValid: true})
	f.Add(append([]byte{0x11, 0, 0, 0, 1}, "hello"...))
	f.Add(append([]byte{0x12, 0, 0, 0, 1}, ping...))
	f.Add(append([]byte{0x13, 0, 0, 0, 1}, pong...))
	f.Add([]byte{0x14, 0, 0, 0, 1, 1, 0, 0, 0, 9, 2})
	f.Add([]byte{0x14, 0, 0, 0, 1, 4, 1})
	f.Add([]byte{0x14, 0, 0, 0, 1, 2, 0, 0, 0, 1, 1})
	a, b := newPipeSessions(f, Config{MaxMessageSize: 64})
	_ = a
	f.Fuzz(func(t *testing.T, in []byte) {
		// As if it came over WebRTC: pipe sessions have only TCP, whose
		// read loop is live and is the one caller of onMessage for that
		// transport (each transport has its own reader and pong buffer).
		b.onMessage(TransportWebRTC, in)
		b.Poll(func(p []byte) {
			h, payload, err := wire.ParseHeader(in)
			if err != nil || h.Type != wire.MsgData || !bytes.Equal(p, payload) {
				t.Fatalf("delivered % x for input % x", p, in)
			}
		})
	})
}
