package p2p

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ragsync/ragsync/signaling"
)

// startSignaling runs a signaling server on 127.0.0.1:0 for the test and
// returns its URL.
func startSignaling(t testing.TB) string {
	t.Helper()
	url, _ := startSignalingStop(t)
	return url
}

// startSignalingStop is startSignaling that also returns a function that
// shuts the server down early (idempotent).
func startSignalingStop(t testing.TB) (string, func()) {
	t.Helper()
	srv, err := signaling.NewServer(signaling.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("signaling server: %v", err)
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			// Relays still open are cut after 1 s (a graceful shutdown
			// would wait for them).
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			srv.Shutdown(ctx)
			<-done
		})
	}
	t.Cleanup(stop)
	return "http://" + l.Addr().String(), stop
}

func testLogger() *slog.Logger {
	if os.Getenv("P2P_DEBUG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// pairByRoom connects two sessions through a private room.
func pairByRoom(t testing.TB, url string, ca, cb Config) (offerer, answerer *Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	room, err := CreateRoom(ctx, url, ca)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var errA error
	wg.Add(1)
	go func() {
		defer wg.Done()
		offerer, errA = room.Connect(ctx)
	}()
	answerer, errB := Connect(ctx, url, room.Code(), cb)
	wg.Wait()
	if errA != nil || errB != nil {
		if offerer != nil {
			offerer.Close()
		}
		if answerer != nil {
			answerer.Close()
		}
		t.Fatalf("connect: offerer %v, answerer %v", errA, errB)
	}
	t.Cleanup(func() { offerer.Close(); answerer.Close() })
	return offerer, answerer
}

// pairQuick connects two sessions through quick match.
func pairQuick(t testing.TB, url string, ca, cb Config) (a, b *Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var errA, errB error
	wg.Add(2)
	go func() { defer wg.Done(); a, errA = Connect(ctx, url, QuickMatch, ca) }()
	go func() { defer wg.Done(); b, errB = Connect(ctx, url, QuickMatch, cb) }()
	wg.Wait()
	if errA != nil || errB != nil {
		if a != nil {
			a.Close()
		}
		if b != nil {
			b.Close()
		}
		t.Fatalf("connect: %v, %v", errA, errB)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	if a.Role() == b.Role() || a.Role() == RoleUnknown || b.Role() == RoleUnknown {
		t.Fatalf("roles %v and %v", a.Role(), b.Role())
	}
	if a.Role() == RoleAnswerer {
		a, b = b, a
	}
	return a, b
}

func cfgWith(f func(*Config)) Config {
	c := testConfig()
	c.Logger = testLogger()
	if f != nil {
		f(&c)
	}
	return c
}

// exchange sends n numbered messages each way, paced, and returns how many
// each side received (checking they are intact and unique).
func exchange(t *testing.T, a, b *Session, n int) (gotA, gotB int) {
	t.Helper()
	var wg sync.WaitGroup
	recv := func(s *Session, got *int) {
		defer wg.Done()
		seen := make(map[uint32]bool)
		buf := make([]byte, 2048)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for *got < n {
			m, err := s.Recv(ctx, buf)
			if err != nil {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("recv: %v", err)
				}
				return
			}
			if m != 100 {
				t.Errorf("message of %d bytes", m)
				return
			}
			id := uint32(buf[0])<<24 | uint32(buf[1])<<16 | uint32(buf[2])<<8 | uint32(buf[3])
			if seen[id] {
				t.Errorf("message %d delivered twice", id)
			}
			seen[id] = true
			*got++
		}
	}
	send := func(s *Session) {
		defer wg.Done()
		msg := make([]byte, 100)
		for i := 0; i < n; i++ {
			msg[0], msg[1], msg[2], msg[3] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
			if err := s.Send(msg); err != nil {
				t.Errorf("send: %v", err)
				return
			}
			// Paced like a game (one message per class per tick, just
			// faster): on TCP, a burst faster than the writer goroutine
			// would be superseded by design (latest-only).
			time.Sleep(time.Millisecond)
		}
	}
	wg.Add(4)
	go recv(a, &gotA)
	go recv(b, &gotB)
	go send(a)
	go send(b)
	wg.Wait()
	return gotA, gotB
}

func TestSessionRoomExchange(t *testing.T) {
	checkLeaks(t)
	url := startSignaling(t)
	a, b := pairByRoom(t, url, cfgWith(nil), cfgWith(nil))
	if a.Role() != RoleOfferer || b.Role() != RoleAnswerer {
		t.Fatalf("roles %v, %v", a.Role(), b.Role())
	}
	const n = 1000
	gotA, gotB := exchange(t, a, b, n)
	// Let the last messages settle, then compare with the stats.
	time.Sleep(100 * time.Millisecond)
	sa, sb := a.Stats(), b.Stats()
	t.Logf("offerer: transport %v (%s), rtt %v, recv %d, lost %d", sa.Transport, sa.ChoiceReason, sa.RTT.Smoothed, gotA, sa.Lost)
	t.Logf("answerer: transport %v, recv %d", sb.Transport, gotB)
	if sa.Transport != sb.Transport || sa.Transport == TransportUnknown {
		t.Errorf("transports differ: %v vs %v", sa.Transport, sb.Transport)
	}
	for _, c := range []struct {
		name string
		got  int
		st   Stats
	}{{"offerer", gotA, sa}, {"answerer", gotB, sb}} {
		if c.got < n*95/100 {
			t.Errorf("%s received %d of %d", c.name, c.got, n)
		}
		if c.st.Received != uint64(c.got) {
			t.Errorf("%s: Stats.Received %d, drained %d", c.name, c.st.Received, c.got)
		}
		if c.st.Sent != n {
			t.Errorf("%s: Stats.Sent %d, want %d", c.name, c.st.Sent, n)
		}
		if c.st.Duplicates != 0 || c.st.Malformed != 0 {
			t.Errorf("%s: %d duplicates, %d malformed", c.name, c.st.Duplicates, c.st.Malformed)
		}
	}
	_ = io.EOF
}
