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
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/testwait"
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

// memListener is an in-memory net.Listener: dial returns one end of a
// net.Pipe and Accept the other. Blocking on a pipe is durable in a
// testing/synctest bubble, so a signaling server served on it runs in
// virtual time.
type memListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *memListener) Addr() net.Addr { return memAddr{} }

func (l *memListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "signal.test:80" }

// startMemSignaling runs a signaling server on an in-memory listener (for
// a synctest bubble: call it inside) and returns its URL and a Config
// option that makes a session's signaling client reach it. Sessions using
// it must DisableTCP: the TCP relay dials the real network.
func startMemSignaling(t *testing.T) (string, func(*Config)) {
	t.Helper()
	srv, err := signaling.NewServer(signaling.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l := newMemListener()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("signaling server: %v", err)
		}
	}()
	tr := &http.Transport{DialContext: l.dial}
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		<-done
		tr.CloseIdleConnections()
	})
	return "http://signal.test", func(c *Config) { c.Signaling.HTTPClient = &http.Client{Transport: tr} }
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
	ctx, cancel := testwait.ContextFrom(context.Background(), t)
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
	ctx, cancel := testwait.ContextFrom(context.Background(), t)
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

// cfgWith returns the tests' session configuration, changed by f. WebRTC
// and the TCP relay get a minute to connect instead of 5 and 10 s: which
// transport a session starts on must not depend on whether a loaded
// machine opened pion's data channel within 5 s (tests about the timeout
// set their own).
func cfgWith(f func(*Config)) Config {
	c := testConfig()
	c.Logger = testLogger()
	c.WebRTCTimeout = time.Minute
	c.TCPTimeout = time.Minute
	if f != nil {
		f(&c)
	}
	return c
}

// exchange sends n numbered messages each way, paced, and returns how many
// each side received (checking they are intact and unique). It has no time
// limit of its own: each side receives until it has all n, or until the
// peer has sent all n and everything that can still arrive has (see
// drained); what is missing then was lost. A slow machine makes it take
// longer, never count less. When it returns, each side's Stats agree with
// what was drained.
func exchange(t *testing.T, a, b *Session, n int) (gotA, gotB int) {
	t.Helper()
	deadline, bounded := testwait.Deadline(t)
	var wg sync.WaitGroup
	var doneA, doneB atomic.Bool // the sender has sent all n
	recv := func(s, peer *Session, peerDone *atomic.Bool, got *int) {
		defer wg.Done()
		base := s.Stats()
		var tail *tailWatch
		seen := make(map[uint32]bool)
		buf := make([]byte, 2048)
		for pause := time.Duration(0); *got < n; {
			m, ok, err := s.TryRecv(buf)
			if err != nil {
				t.Errorf("recv: %v", err)
				return
			}
			if !ok {
				if peerDone.Load() {
					if tail == nil {
						tail = watchTail(peer)
					}
					if drained(s, base, *got, n, tail) {
						return
					}
				}
				if bounded && time.Now().After(deadline) {
					t.Errorf("recv: gave up near the test binary's deadline with %d of %d messages", *got, n)
					return
				}
				pause = min(max(2*pause, 50*time.Microsecond), 5*time.Millisecond)
				time.Sleep(pause)
				continue
			}
			pause = 0
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
	send := func(s *Session, done *atomic.Bool) {
		defer wg.Done()
		defer done.Store(true)
		msg := make([]byte, 100)
		for i := 0; i < n; i++ {
			msg[0], msg[1], msg[2], msg[3] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
			if err := s.Send(msg); err != nil {
				t.Errorf("send: %v", err)
				return
			}
			// Paced like a game (one message per class per tick, just
			// faster): on TCP, a message sent before the writer goroutine
			// wrote the previous one would supersede it by design
			// (latest-only), so the pace also waits for the writer
			// (which a loaded machine runs later).
			time.Sleep(time.Millisecond)
			if !testwait.Until(t, func() bool { return tcpWritten(s) }) {
				t.Errorf("send: the TCP writer never caught up (gave up near the test binary's deadline)")
				return
			}
		}
	}
	wg.Add(4)
	go recv(a, b, &doneB, &gotA)
	go recv(b, a, &doneA, &gotB)
	go send(a, &doneA)
	go send(b, &doneB)
	wg.Wait()
	return gotA, gotB
}

// tcpWritten reports whether s's TCP transport, if it carries the data,
// has written every frame it accepted.
func tcpWritten(s *Session) bool {
	tr := s.tcp.Load()
	return tr == nil || TransportKind(s.active.Load()) != TransportTCP || !tr.unwritten() || s.Stats().TCP.State != LinkUp
}

// tailWatch records, once a sender has sent its last message, how many
// pongs it had received on each transport.
type tailWatch struct {
	sender *Session
	pongs  [2]uint64 // WebRTC, TCP
}

func watchTail(sender *Session) *tailWatch {
	st := sender.Stats()
	return &tailWatch{sender: sender, pongs: [2]uint64{st.WebRTC.PongsReceived, st.TCP.PongsReceived}}
}

// pingedSince reports whether the sender has had two more pongs on its
// active transport since the watch began: then at least one ping it sent
// after its last message has reached the receiver, behind that message.
func (w *tailWatch) pingedSince() bool {
	st := w.sender.Stats()
	if st.Transport == TransportTCP {
		return st.TCP.PongsReceived >= w.pongs[1]+2
	}
	return st.WebRTC.PongsReceived >= w.pongs[0]+2
}

// drained reports whether the receiver s, having drained got messages, has
// nothing more to come from a sender that has sent all n: it has drained
// every message its session accepted since base, and either it has seen
// the sender's last message or a later ping of the sender's has arrived.
func drained(s *Session, base Stats, got, n int, tail *tailWatch) bool {
	st := s.Stats()
	accepted := (st.Received - st.RecvOverflow) - (base.Received - base.RecvOverflow)
	if accepted != uint64(got) {
		return false
	}
	return st.Expected-base.Expected >= uint64(n) || tail.pingedSince()
}

func TestSessionRoomExchange(t *testing.T) {
	checkLeaks(t)
	url := startSignaling(t)
	a, b := pairByRoom(t, url, cfgWith(nil), cfgWith(nil))
	if a.Role() != RoleOfferer || b.Role() != RoleAnswerer {
		t.Fatalf("roles %v, %v", a.Role(), b.Role())
	}
	const n = 1000
	gotA, gotB := exchange(t, a, b, n) // returns with the stats settled
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
