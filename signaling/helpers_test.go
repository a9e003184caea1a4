package signaling

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// checkLeaks fails the test if, after all its cleanups, more goroutines run
// than before it started. Register it first so it runs last.
func checkLeaks(t testing.TB) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		n := 0
		for {
			n = runtime.NumGoroutine()
			if n <= base || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n > base {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("goroutine leak: %d before, %d after\n%s", base, n, buf)
		}
	})
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("SIGNALING_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startServer runs a server on 127.0.0.1:0 and shuts it down at cleanup.
func startServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return s, "http://" + l.Addr().String()
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dial(t testing.TB, url string, cfg ClientConfig) *Client {
	t.Helper()
	c, err := Dial(ctxT(t), url, cfg)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// next returns the next event of kind, failing on any other event.
func next(t testing.TB, c *Client, kind EventKind) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := c.Recv(ctx)
	if err != nil {
		t.Fatalf("waiting for %v: %v", kind, err)
	}
	if ev.Kind != kind {
		t.Fatalf("got event %v (%+v), want %v", ev.Kind, ev, kind)
	}
	return ev
}

// pairByCode creates a room with a and joins it with b.
func pairByCode(t testing.TB, a, b *Client) (Pairing, Pairing) {
	t.Helper()
	code, err := a.CreateRoom(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.JoinRoom(ctxT(t), strings.ToLower(string(code))); err != nil {
		t.Fatal(err)
	}
	pa := next(t, a, EventPaired).Pairing
	pb := next(t, b, EventPaired).Pairing
	return pa, pb
}

// raw is a bare WebSocket connection for sending arbitrary bytes.
type raw struct {
	t    testing.TB
	conn *websocket.Conn
}

func dialRaw(t testing.TB, base, query string) *raw {
	t.Helper()
	u := strings.Replace(base, "http://", "ws://", 1) + "/ws?" + query
	conn, _, err := websocket.Dial(ctxT(t), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(1 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &raw{t: t, conn: conn}
}

func dialRawOK(t testing.TB, base string) *raw {
	r := dialRaw(t, base, "v=1")
	r.expect(TypeWelcome)
	return r
}

func (r *raw) send(s string) {
	r.t.Helper()
	if err := r.conn.Write(ctxT(r.t), websocket.MessageText, []byte(s)); err != nil {
		r.t.Fatalf("write %q: %v", s, err)
	}
}

func (r *raw) read() (Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, b, err := r.conn.Read(ctx)
		if err != nil {
			return Message{}, err
		}
		m, err := DecodeMessage(b)
		if err != nil {
			r.t.Fatalf("server sent undecodable %q: %v", b, err)
		}
		if m.Type == TypePong {
			continue
		}
		return m, nil
	}
}

func (r *raw) expect(typ MsgType) Message {
	r.t.Helper()
	m, err := r.read()
	if err != nil {
		r.t.Fatalf("waiting for %s: %v", typ, err)
	}
	if m.Type != typ {
		r.t.Fatalf("got %+v, want type %s", m, typ)
	}
	return m
}

func (r *raw) expectError(code ErrorCode) Message {
	r.t.Helper()
	m := r.expect(TypeError)
	if m.Code != code {
		r.t.Fatalf("got error %+v, want code %s", m, code)
	}
	if m.Text == "" {
		r.t.Fatalf("error %s has no human-readable message", code)
	}
	return m
}

// expectClosed waits for the server to close the connection with status.
func (r *raw) expectClosed(status websocket.StatusCode) {
	r.t.Helper()
	for {
		_, err := r.read()
		if err == nil {
			continue
		}
		if got := websocket.CloseStatus(err); got != status {
			r.t.Fatalf("connection ended with %v (status %v), want status %v", err, got, status)
		}
		return
	}
}

var _ = io.EOF
