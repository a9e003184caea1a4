package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
)

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
	s, err := New(cfg)
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
		if err := s.Shutdown(testwait.Context(t)); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return s, "http://" + l.Addr().String()
}

// ctxT is the context of the test's calls: it has no time limit of its
// own, only the test binary's (testwait), so a loaded machine makes a call
// slower, never a failure.
func ctxT(t testing.TB) context.Context { return testwait.Context(t) }

func dial(t testing.TB, url string, cfg signaling.ClientConfig) *signaling.Client {
	t.Helper()
	c, err := signaling.Dial(ctxT(t), url, cfg)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// next returns the next event of kind, failing on any other event.
func next(t testing.TB, c *signaling.Client, kind signaling.EventKind) signaling.Event {
	t.Helper()
	ev, err := c.Recv(ctxT(t))
	if err != nil {
		t.Fatalf("waiting for %v: %v", kind, err)
	}
	if ev.Kind != kind {
		t.Fatalf("got event %v (%+v), want %v", ev.Kind, ev, kind)
	}
	return ev
}

// pairByCode creates a room with a and joins it with b.
func pairByCode(t testing.TB, a, b *signaling.Client) (signaling.Pairing, signaling.Pairing) {
	t.Helper()
	code, err := a.CreateRoom(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.JoinRoom(ctxT(t), strings.ToLower(string(code))); err != nil {
		t.Fatal(err)
	}
	pa := next(t, a, signaling.EventPaired).Pairing
	pb := next(t, b, signaling.EventPaired).Pairing
	return pa, pb
}

// raw is a bare WebSocket connection for sending arbitrary bytes.
type raw struct {
	t    testing.TB
	conn *websocket.Conn
}

func dialRaw(t testing.TB, base, query string) *raw {
	t.Helper()
	return dialRawVia(t, nil, base, query)
}

// dialRawVia is dialRaw through hc (nil: http.DefaultClient).
func dialRawVia(t testing.TB, hc *http.Client, base, query string) *raw {
	t.Helper()
	u := strings.Replace(base, "http://", "ws://", 1) + "/ws?" + query
	conn, _, err := websocket.Dial(ctxT(t), u, &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(1 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &raw{t: t, conn: conn}
}

func dialRawOK(t testing.TB, base string) *raw {
	r := dialRaw(t, base, "v=1")
	r.expect(signaling.TypeWelcome)
	return r
}

func (r *raw) send(s string) {
	r.t.Helper()
	if err := r.conn.Write(ctxT(r.t), websocket.MessageText, []byte(s)); err != nil {
		r.t.Fatalf("write %q: %v", s, err)
	}
}

func (r *raw) read() (signaling.Message, error) {
	ctx := ctxT(r.t)
	for {
		_, b, err := r.conn.Read(ctx)
		if err != nil {
			return signaling.Message{}, err
		}
		m, err := signaling.DecodeMessage(b)
		if err != nil {
			r.t.Fatalf("server sent undecodable %q: %v", b, err)
		}
		if m.Type == signaling.TypePong {
			continue
		}
		return m, nil
	}
}

func (r *raw) expect(typ signaling.MsgType) signaling.Message {
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

func (r *raw) expectError(code signaling.ErrorCode) signaling.Message {
	r.t.Helper()
	m := r.expect(signaling.TypeError)
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

// memNet serves a Server on an in-memory listener: net.Pipe connections,
// on which blocking is durable in a testing/synctest bubble, so the
// server, its clients and relays run in virtual time there (timeouts and
// keepalives included, whatever the machine's load).
type memNet struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	hc     *http.Client
	tr     *http.Transport
}

// startMemServer is startServer on a memNet (call it inside the bubble).
func startMemServer(t *testing.T, cfg Config) (*Server, string, *memNet) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &memNet{conns: make(chan net.Conn), closed: make(chan struct{})}
	m.tr = &http.Transport{DialContext: m.dial}
	m.hc = &http.Client{Transport: m.tr}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(m) }()
	t.Cleanup(func() {
		if err := s.Shutdown(ctxT(t)); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		m.tr.CloseIdleConnections()
	})
	return s, "http://signal.test", m
}

func (m *memNet) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.closed:
		return nil, net.ErrClosed
	}
}

func (m *memNet) Close() error   { m.once.Do(func() { close(m.closed) }); return nil }
func (m *memNet) Addr() net.Addr { return memAddr{} }

func (m *memNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case m.conns <- s:
		return c, nil
	case <-m.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// client returns cfg with the memNet's HTTP client.
func (m *memNet) client(cfg signaling.ClientConfig) signaling.ClientConfig {
	cfg.HTTPClient = m.hc
	return cfg
}

// relayDialer dials relays through the memNet.

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "signal.test:80" }

var _ = io.EOF

// relayWaiting reports whether the holder of tok has a relay request
// waiting for its peer on s.
func relayWaiting(s *Server, tok signaling.RelayToken) bool {
	c, err := verifyRelayToken(s.tokenKey, wireToken(tok), s.cfg.Now())
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rv := s.rendezvous[c.key()]
	return rv != nil && rv.waiting[c.side] != nil
}

// from is a client network bound to one loopback source address, so a
// test can play several client addresses (127.0.0.2 an attacker, 127.0.0.3
// honest players) against one server.
type from struct {
	ip     net.IP
	dialer *net.Dialer
	tr     *http.Transport
	hc     *http.Client
}

func newFrom(t testing.TB, ip string) *from {
	t.Helper()
	f := &from{ip: net.ParseIP(ip)}
	f.dialer = &net.Dialer{LocalAddr: &net.TCPAddr{IP: f.ip}}
	f.tr = &http.Transport{DialContext: f.dialer.DialContext, MaxIdleConnsPerHost: -1}
	f.hc = &http.Client{Transport: f.tr}
	t.Cleanup(f.tr.CloseIdleConnections)
	return f
}

// client returns cfg dialing from f's address.
func (f *from) client(cfg signaling.ClientConfig) signaling.ClientConfig {
	cfg.HTTPClient = f.hc
	return cfg
}

// relayDialer dials relays from f's address.
func (f *from) relayDialer() signaling.ClientConfig { return f.client(signaling.ClientConfig{}) }

// dial connects a Client from f's address.
func (f *from) dial(t testing.TB, url string) *signaling.Client {
	t.Helper()
	return dial(t, url, f.client(signaling.ClientConfig{}))
}

// raw connects a bare WebSocket from f's address.
func (f *from) raw(t testing.TB, base string) *raw {
	t.Helper()
	r := dialRawVia(t, f.hc, base, "v=1")
	r.expect(signaling.TypeWelcome)
	return r
}

// fakeClock is an injected clock the test advances by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// wireToken is the token part of a seat (what goes on the wire), without
// its key.
func wireToken(seat signaling.RelayToken) signaling.RelayToken {
	tok, _, _ := strings.Cut(string(seat), ".")
	return signaling.RelayToken(tok)
}
