package p2p

import (
	"context"
	"net"
	"runtime"
	"testing"
)

// newPipeSessions connects two sessions in-process over net.Pipe, with
// the TCP transport only: everything on the data path is this package's
// code plus signaling/relay framing, with no pion underneath, so
// allocation counts are ours.
func newPipeSessions(t testing.TB, cfg Config) (a, b *Session) {
	t.Helper()
	c, err := cfg.withDefaults("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := net.Pipe()
	mk := func(role Role, conn net.Conn) *Session {
		s, err := newSession(sessionParams{
			cfg:     c,
			role:    role,
			dialTCP: func(context.Context) (net.Conn, error) { return conn, nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b = mk(RoleOfferer, ca), mk(RoleAnswerer, cb)
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx := testCtx(t)
	if err := a.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestPipeSessions(t *testing.T) {
	checkLeaks(t)
	a, b := newPipeSessions(t, Config{})
	if a.Stats().Transport != TransportTCP || b.Stats().Transport != TransportTCP {
		t.Fatal("not on tcp")
	}
	gotA, gotB := exchange(t, a, b, 300)
	if gotA != 300 || gotB != 300 {
		t.Errorf("received %d, %d of 300 over a lossless pipe", gotA, gotB)
	}
}

// TestDataPathDoesNotAllocate: Send, the receive path (transport read loop,
// header decode, sequence tracking, the ring) and Poll, TryRecv, Recv and
// Stats allocate nothing in steady state.
func TestDataPathDoesNotAllocate(t *testing.T) {
	checkLeaks(t)
	a, b := newPipeSessions(t, Config{})
	msg := make([]byte, 200)
	buf := make([]byte, 2048)
	var got int
	fn := func(p []byte) { got += len(p) }
	ctx := context.Background()
	roundTrip := func() {
		if err := a.Send(msg); err != nil {
			t.Fatal(err)
		}
		for b.Poll(fn) == 0 {
			runtime.Gosched()
		}
		if err := b.SendClass(1, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Recv(ctx, buf); err != nil {
			t.Fatal(err)
		}
		if err := a.Send(msg); err != nil {
			t.Fatal(err)
		}
		for {
			if _, ok, _ := b.TryRecv(buf); ok {
				break
			}
			runtime.Gosched()
		}
		_ = a.Stats()
		_, _ = b.GameTime()
	}
	for i := 0; i < 100; i++ { // warm up: buffers, calibrator, rate windows
		roundTrip()
	}
	if n := testing.AllocsPerRun(500, roundTrip); n != 0 {
		t.Errorf("%v allocations per round (3 messages, Poll, Recv, TryRecv, Stats)", n)
	}
}

func TestSendErrors(t *testing.T) {
	checkLeaks(t)
	a, _ := newPipeSessions(t, Config{MaxMessageSize: 100})
	err := a.Send(make([]byte, 101))
	var se *MessageSizeError
	if !errorsAs(err, &se) || se.Size != 101 || se.Limit != 100 {
		t.Errorf("oversized Send: %v", err)
	}
	if err := a.SendClass(TCPClasses, nil); err == nil {
		t.Error("class out of range accepted")
	}
	if n, ok, err := a.TryRecv(nil); n != 0 || ok || err != nil {
		t.Errorf("TryRecv on an empty queue: %d %v %v", n, ok, err)
	}
	a.Close()
	if err := a.Send(nil); err != ErrClosed {
		t.Errorf("Send after Close: %v", err)
	}
}
