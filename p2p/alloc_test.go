package p2p

import (
	"errors"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/ragsync/ragsync/internal/leaktest"
)

func TestPipeSessions(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		a, b := newPipeSessions(t, Config{})
		if a.Stats().Transport != TransportTCP || b.Stats().Transport != TransportTCP {
			t.Fatal("not on tcp")
		}
		gotA, gotB := exchange(t, a, b, 300)
		if gotA != 300 || gotB != 300 {
			t.Errorf("received %d, %d of 300 over a lossless pipe", gotA, gotB)
		}
	})
}

// TestDataPathDoesNotAllocate: Send, the receive path (transport read loop,
// header decode, sequence tracking, the ring), Poll, Stats and GameTime
// allocate nothing in steady state.
func TestDataPathDoesNotAllocate(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		a, b := newPipeSessions(t, Config{})
		state := make([]byte, 200)
		msg := append([]byte{'G'}, state[1:]...) // another kind: never replaces a state
		var got int
		fn := func(p []byte) { got += len(p) }
		await := func(s *Session) {
			for s.Poll(fn) == 0 {
				runtime.Gosched()
			}
		}
		roundTrip := func() {
			if err := a.Send(state); err != nil {
				t.Fatal(err)
			}
			await(b)
			if err := b.Send(msg); err != nil {
				t.Fatal(err)
			}
			await(a)
			_ = a.Stats()
			_, _ = b.GameTime()
		}
		for range 100 { // warm up: buffers, calibrator, rate windows
			roundTrip()
		}
		// This package's code allocates nothing; crypto/tls, which carries
		// the relay, allocates one small reader object each time it reads
		// from the stream (tls.Conn.readFromUntil), so at most two per
		// message received (a record's header, then its body).
		if n := testing.AllocsPerRun(500, roundTrip); n > 4 {
			t.Errorf("%v allocations per round (2 messages, Poll, Stats, GameTime), want at most crypto/tls's 4", n)
		}
	})
}

func TestSendErrors(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		a, _ := newPipeSessions(t, Config{MaxMessageSize: 100})
		err := a.Send(make([]byte, 101))
		var se *MessageSizeError
		if !errors.As(err, &se) || se.Size != 101 || se.Limit != 100 || !errors.Is(err, ErrMessageTooLarge) {
			t.Errorf("oversized Send: %v", err)
		}
		if n := a.Poll(func([]byte) { t.Error("a message from nowhere") }); n != 0 {
			t.Errorf("Poll on an empty queue: %d", n)
		}
		a.Close()
		if err := a.Send(nil); err != ErrClosed {
			t.Errorf("Send after Close: %v", err)
		}
	})
}

// TestTCPLatestOnlyByKind: on the TCP fallback, while the writer is busy a
// message replaces only an unsent one with the same first byte: of a burst
// of states only the newest may arrive, but a game message sent between
// them always does.
func TestTCPLatestOnlyByKind(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		a, b := newPipeSessions(t, Config{})
		const state, game = 'S', 'G'
		for round := range 20 {
			for i := range 10 {
				a.Send([]byte{state, byte(round), byte(i)})
				if i == 5 {
					a.Send([]byte{game, byte(round)})
				}
			}
			waitUntil(t, "the TCP writer", func() bool { return tcpWritten(a) })
		}
		var games, states int
		lastState := -1
		waitUntil(t, "every game message", func() bool {
			b.Poll(func(p []byte) {
				switch p[0] {
				case game:
					games++
				case state:
					states++
					v := int(p[1])<<8 | int(p[2])
					if v <= lastState {
						t.Errorf("state %d after %d", v, lastState)
					}
					lastState = v
				}
			})
			return games == 20 && lastState == 19<<8|9
		})
		if st := a.Stats(); st.Sent != 220 || st.SendDropped != uint64(200-states) {
			t.Errorf("sent %d, dropped %d; %d states arrived", st.Sent, st.SendDropped, states)
		}
		t.Logf("%d of 200 states arrived, all 20 game messages", states)
	})
}
