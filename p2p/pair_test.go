package p2p

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/transport/v5/vnet"

	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
	"github.com/ragsync/ragsync/signaling/server"
)

// The tests' ways of getting two connected sessions, from the most real to
// the most controlled:
//
//   - pairByRoom, pairQuick: through a signaling server (startSignaling on
//     127.0.0.1, or startMemSignaling in memory for a synctest bubble),
//     as a game does;
//   - newNetPair: in-process, without a server, WebRTC over a pion vnet and
//     TCP over a net.Pipe, both of which the test can cut or silence; in a
//     synctest bubble everything runs in virtual time;
//   - newPipeSessions: in-process, TCP over a net.Pipe only, no pion at
//     all (allocation counts, malformed input).

// testConfig is the loopback-only configuration the tests use (the network
// rule: loopback candidates, lo only, UDP4, no mDNS, no ICE servers).
func testConfig() Config {
	return Config{Interfaces: InterfacesLoopback, UDP4Only: true}
}

func testLogger() *slog.Logger {
	if os.Getenv("P2P_DEBUG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
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
	url, _, stop := startSignalingServer(t)
	return url, stop
}

// startSignalingServer is startSignalingStop that also returns the server.
func startSignalingServer(t testing.TB) (string, *server.Server, func()) {
	t.Helper()
	return startSignalingServerWith(t, server.Config{}, nil)
}

// startSignalingServerWith is startSignalingServer for a server with cfg
// (a nil Logger discards), served over TLS with tlsCfg if it is not nil
// (the URL is then https://).
func startSignalingServerWith(t testing.TB, cfg server.Config, tlsCfg *tls.Config) (string, *server.Server, func()) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "http://"
	if tlsCfg != nil {
		l = tls.NewListener(l, tlsCfg)
		scheme = "https://"
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
	return scheme + l.Addr().String(), srv, stop
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
// option that makes a session's signaling client, and its TCP relay, reach
// it.
func startMemSignaling(t *testing.T) (string, func(*Config)) {
	t.Helper()
	srv, err := server.New(server.Config{Logger: slog.New(slog.DiscardHandler)})
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

// pairQuick connects two sessions through quick match and returns the
// offerer first.
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
	if a.Role() == b.Role() || a.Role() == signaling.RoleUnknown || b.Role() == signaling.RoleUnknown {
		t.Fatalf("roles %v and %v", a.Role(), b.Role())
	}
	if a.Role() == signaling.RoleAnswerer {
		a, b = b, a
	}
	return a, b
}

// Addresses of the two hosts of newVNet.
const (
	vnetIPA = "192.0.2.1"
	vnetIPB = "192.0.2.2"
)

// newVNet builds a virtual network: one router with a one-way delay of
// delay that passes the packets (chunks) pass accepts (nil: all), and two
// hosts on it, at vnetIPA and vnetIPB. The router stops with the test.
func newVNet(t testing.TB, delay time.Duration, pass func(vnet.Chunk) bool) (na, nb *vnet.Net) {
	t.Helper()
	r, err := vnet.NewRouter(&vnet.RouterConfig{CIDR: "192.0.2.0/24", MinDelay: delay, LoggerFactory: slogFactory{l: testLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	if pass != nil {
		r.AddChunkFilter(pass)
	}
	na, err = vnet.NewNet(&vnet.NetConfig{StaticIPs: []string{vnetIPA}})
	if err != nil {
		t.Fatal(err)
	}
	nb, err = vnet.NewNet(&vnet.NetConfig{StaticIPs: []string{vnetIPB}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*vnet.Net{na, nb} {
		if err := r.AddNet(n); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop() })
	return na, nb
}

// netPair is an offerer (a) and an answerer (b) connected in-process,
// without a signaling server, over networks the test controls: WebRTC over
// a pion vnet (negotiated through pipeSignalers), TCP over a net.Pipe.
// The test breaks them the way networks break:
//
//   - cut drops every WebRTC packet both ways (ICE included): a dead path;
//   - muteA, muteB silence a peer: the vnet drops its packets and what it
//     writes to its TCP stream is held back until it is unmuted, as the
//     kernel holds what a stopped process cannot send (or a stalled TCP
//     connection), while it still receives.
type netPair struct {
	a, b         *Session
	cut          atomic.Bool
	muteA, muteB atomic.Bool
}

// faultConn is one end of the TCP pipe; its writes are held back while
// mute is set, and written before the next write after it is cleared.
type faultConn struct {
	net.Conn
	mute *atomic.Bool
	mu   sync.Mutex
	held []byte
}

func (c *faultConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mute.Load() {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	if len(c.held) > 0 {
		if _, err := c.Conn.Write(c.held); err != nil {
			return 0, err
		}
		c.held = nil
	}
	return c.Conn.Write(p)
}

// newNetPair connects the pair over a vnet with the given one-way delay.
// fa and fb, if not nil, change the two sessions' configurations. It
// returns once both sessions have chosen their transport; they close with
// the test.
func newNetPair(t *testing.T, delay time.Duration, fa, fb func(*Config)) *netPair {
	t.Helper()
	np := &netPair{}
	na, nb := newVNet(t, delay, func(c vnet.Chunk) bool {
		src := c.SourceAddr().String()
		return !np.cut.Load() &&
			!(np.muteA.Load() && strings.HasPrefix(src, vnetIPA+":")) &&
			!(np.muteB.Load() && strings.HasPrefix(src, vnetIPB+":"))
	})
	pa, pb := net.Pipe()
	sigA, sigB := newPipeSignaler(), newPipeSignaler()
	mk := func(role signaling.Role, n *vnet.Net, conn net.Conn, sig *pipeSignaler, f func(*Config)) *Session {
		cfg := cfgWith(func(c *Config) {
			c.Net = n
			c.Interfaces = InterfacesAll
		})
		if f != nil {
			f(&cfg)
		}
		c, err := cfg.withDefaults("http://signal.test")
		if err != nil {
			t.Fatal(err)
		}
		s, err := newSession(sessionParams{
			cfg:     c,
			role:    role,
			sig:     sig,
			dialTCP: func(context.Context) (net.Conn, error) { return conn, nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	np.a = mk(signaling.RoleOfferer, na, &faultConn{Conn: pa, mute: &np.muteA}, sigA, fa)
	np.b = mk(signaling.RoleAnswerer, nb, &faultConn{Conn: pb, mute: &np.muteB}, sigB, fb)
	sigA.run(np.b) // the offer the offerer sent is waiting in sigA
	sigB.run(np.a)
	t.Cleanup(func() {
		// Cut the vnet first: pion's PeerConnection.Close, when the peer's
		// SCTP abort or DTLS close_notify arrives while it runs, holds a
		// lock across a 200 ms timer that another of its goroutines waits
		// on; a goroutine blocked on a mutex does not count as idle in a
		// synctest bubble, so virtual time would stand still. With the
		// path cut, nothing arrives. The bye still goes over TCP.
		np.cut.Store(true)
		np.a.Close()
		np.b.Close()
		sigA.stop()
		sigB.stop()
	})
	ctx := testCtx(t)
	for _, s := range []*Session{np.a, np.b} {
		if err := s.life.waitReady(ctx); err != nil {
			t.Fatalf("%v: %v", s.Role(), err)
		}
	}
	return np
}

// testIdentity is a new session identity.
func testIdentity(t testing.TB) *identity {
	t.Helper()
	id, err := newIdentity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// newPipeSessions connects two sessions in-process over net.Pipe, with
// the TCP transport only: everything on the data path is this package's
// code, with no pion underneath, so allocation counts are ours.
func newPipeSessions(t testing.TB, cfg Config) (a, b *Session) {
	t.Helper()
	return newPipeSessionsWrapped(t, cfg, nil)
}

// newPipeSessionsWrapped is newPipeSessions with the answerer's end of the
// pipe wrapped by wrapB (if not nil), to break it.
func newPipeSessionsWrapped(t testing.TB, cfg Config, wrapB func(net.Conn) net.Conn) (a, b *Session) {
	t.Helper()
	c, err := cfg.withDefaults("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := net.Pipe()
	if wrapB != nil {
		cb = wrapB(cb)
	}
	ida, idb := testIdentity(t), testIdentity(t)
	mk := func(role signaling.Role, conn net.Conn) *Session {
		id, peer := ida, idb
		if role == signaling.RoleAnswerer {
			id, peer = idb, ida
		}
		s, err := newSession(sessionParams{
			cfg:     c,
			role:    role,
			dialTCP: func(context.Context) (net.Conn, error) { return conn, nil },
			id:      id,
			peerFP:  peer.fp,
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b = mk(signaling.RoleOfferer, ca), mk(signaling.RoleAnswerer, cb)
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx := testCtx(t)
	if err := a.life.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.life.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return a, b
}
