package server

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestClientAddr(t *testing.T) {
	s, err := New(Config{Logger: testLogger(t), TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("fd00::/8"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, remote string
		xff          []string
		want         string // "" means an error
	}{
		{"direct v4", "203.0.113.7:5000", nil, "203.0.113.7"},
		{"direct ignores the header", "203.0.113.7:5000", []string{"198.51.100.1"}, "203.0.113.7"},
		{"direct v6 grouped by /64", "[2001:db8:1:2:aaaa::1]:5000", nil, "2001:db8:1:2::"},
		{"v4-mapped v6", "[::ffff:203.0.113.7]:5000", nil, "203.0.113.7"},
		{"proxy", "127.0.0.1:40000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"proxy chain, forged left part", "127.1.1.1:40000", []string{"192.0.2.66, 198.51.100.1, 127.2.2.2"}, "198.51.100.1"},
		{"several header lines", "127.1.1.1:40000", []string{"192.0.2.66", "198.51.100.1", "127.2.2.2"}, "198.51.100.1"},
		{"port and brackets", "127.0.0.1:1", []string{"[2001:db8::1]:443"}, "2001:db8::"},
		{"ip with port", "127.0.0.1:1", []string{"198.51.100.1:1234"}, "198.51.100.1"},
		{"only proxies", "127.1.1.1:1", []string{"127.3.3.3, 127.2.2.2"}, "127.3.3.3"},
		{"proxy without header", "127.0.0.1:1", nil, ""},
		{"proxy with junk", "127.0.0.1:1", []string{"198.51.100.1, unknown"}, ""},
		{"in-memory peer", "pipe", nil, "invalid IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			a, e := s.clientAddr(r)
			if tc.want == "" {
				if e == nil || e.Code != signaling.ErrBadMessage || !strings.Contains(e.Message, "X-Forwarded-For") {
					t.Fatalf("got %v, %v; want a bad_message naming the header", a, e)
				}
				return
			}
			if e != nil || a.String() != tc.want {
				t.Fatalf("got %v, %v; want %s", a, e, tc.want)
			}
		})
	}
}

// joinRaw sends a join for code on r and returns the reply's type or
// error code.
func joinRaw(r *raw, code signaling.RoomCode, create bool) string {
	r.t.Helper()
	r.send(fmt.Sprintf(`{"type":"join","room":%q,"create":%v}`, code, create))
	m, err := r.read()
	if err != nil {
		r.t.Fatalf("join: %v", err)
	}
	if m.Type == signaling.TypeError {
		return string(m.Code)
	}
	return string(m.Type)
}

// TestFailedJoinLimit: joins that miss are limited per address, on an
// injected clock; successful joins cost nothing; other addresses are not
// affected; reconnecting does not reset the budget.
func TestFailedJoinLimit(t *testing.T) {
	leaktest.Check(t)
	clk := newFakeClock()
	s, url := startServer(t, Config{FailedJoinBurst: 3, FailedJoinRate: 0.5, Now: clk.Now})
	attacker, honest := newFrom(t, "127.0.0.2"), newFrom(t, "127.0.0.3")

	a := attacker.raw(t, url)
	for i, want := range []string{"room_not_found", "room_not_found", "room_not_found", "too_many_failed_joins", "too_many_failed_joins"} {
		if got := joinRaw(a, signaling.RoomCode(fmt.Sprintf("ZZZZZ%c", signaling.RoomCodeAlphabet[i])), false); got != want {
			t.Fatalf("guess %d: %s, want %s", i, got, want)
		}
	}
	// Refused without looking: even an existing room is not found.
	h1 := honest.dial(t, url)
	code, err := h1.CreateRoom(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := joinRaw(a, code, false); got != "too_many_failed_joins" {
		t.Fatalf("join of a real room while limited: %s", got)
	}
	// A new connection from the same address is limited too.
	a2 := attacker.raw(t, url)
	if got := joinRaw(a2, "ZZZZZZ", true); got != "too_many_failed_joins" {
		t.Fatalf("new connection: %s", got)
	}
	// Another address is not.
	h2 := honest.dial(t, url)
	if err := h2.JoinRoom(ctxT(t), "ZZZZZZ"); !errors.Is(err, signaling.ErrRoomNotFound) {
		t.Fatalf("honest miss: %v", err)
	}
	if err := h2.JoinRoom(ctxT(t), string(code)); err != nil {
		t.Fatalf("honest join: %v", err)
	}
	next(t, h1, signaling.EventPaired)
	next(t, h2, signaling.EventPaired)
	// Two seconds refill one guess; a miss by room_full costs one too.
	clk.advance(2 * time.Second)
	if got := joinRaw(a, code, false); got != "room_full" {
		t.Fatalf("after refill: %s", got)
	}
	if got := joinRaw(a, code, false); got != "too_many_failed_joins" {
		t.Fatalf("after the refilled guess: %s", got)
	}
	// A join that creates the room is a miss as well.
	clk.advance(2 * time.Second)
	if got := joinRaw(a, "YYYYYY", true); got != "joined" {
		t.Fatalf("join-create: %s", got)
	}
	a.send(`{"type":"leave"}`)
	a.expect(signaling.TypeLeft)
	if got := joinRaw(a, "YYYYYY", true); got != "too_many_failed_joins" {
		t.Fatalf("join-create after the last guess: %s", got)
	}
	// The error says when to come back.
	a.send(`{"type":"join","room":"XXXXXX"}`)
	if m := a.expectError(signaling.ErrTooManyFailedJoins); !strings.Contains(m.Text, "try again in 2s") || m.Ref != signaling.TypeJoin {
		t.Fatalf("error %+v", m)
	}
	// Closing everything does not reset the budget.
	a.conn.CloseNow()
	a2.conn.CloseNow()
	waitFor(t, func() bool { return s.Stats().Clients == 2 })
	a3 := attacker.raw(t, url)
	if got := joinRaw(a3, "XXXXXX", false); got != "too_many_failed_joins" {
		t.Fatalf("after reconnecting: %s", got)
	}
}

func TestConnsPerAddr(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{MaxConnsPerAddr: 3})
	attacker, honest := newFrom(t, "127.0.0.2"), newFrom(t, "127.0.0.3")
	var as []*signaling.Client
	for i := 0; i < 3; i++ {
		as = append(as, attacker.dial(t, url))
	}
	_, err := signaling.Dial(ctxT(t), url, attacker.client(signaling.ClientConfig{}))
	var e *signaling.Error
	if !errors.As(err, &e) || e.Code != signaling.ErrTooManyConns || !strings.Contains(e.Message, "127.0.0.2") {
		t.Fatalf("4th connection: %v", err)
	}
	h := honest.dial(t, url)
	h2 := honest.dial(t, url)
	pairByCode(t, h, h2)
	// A closed connection frees its place.
	as[0].Close()
	waitFor(t, func() bool { return s.Stats().Clients == 4 })
	attacker.dial(t, url)
	// Relay requests count too: with its 3 WebSockets open, the address
	// cannot attach to a relay.
	px, _ := pairByCode(t, as[1], as[2])
	if _, err := signaling.DialRelay(ctxT(t), url, px.Token, attacker.relayDialer()); !errors.Is(err, signaling.ErrTooManyConns) {
		t.Fatalf("relay over the per-address limit: %v", err)
	}
	if st := s.Stats(); st.Rejected != 1 || st.RelaysRefused != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRoomsPerAddr(t *testing.T) {
	leaktest.Check(t)
	_, url := startServer(t, Config{MaxRoomsPerAddr: 2})
	attacker, honest := newFrom(t, "127.0.0.2"), newFrom(t, "127.0.0.3")
	a1, a2, a3 := attacker.dial(t, url), attacker.dial(t, url), attacker.dial(t, url)
	code1, err := a1.CreateRoom(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := a2.QuickMatch(ctxT(t)); err != nil { // a queue place counts
		t.Fatal(err)
	}
	var e *signaling.Error
	if _, err := a3.CreateRoom(ctxT(t)); !errors.As(err, &e) || e.Code != signaling.ErrTooManyRooms || !strings.Contains(e.Message, "your address") {
		t.Fatalf("3rd room: %v", err)
	}
	if _, err := a3.JoinOrCreateRoom(ctxT(t), "ABCDEF"); !errors.Is(err, signaling.ErrTooManyRooms) {
		t.Fatalf("3rd room by join-create: %v", err)
	}
	// Another address creates rooms, and joining the attacker's is fine.
	h1, h2 := honest.dial(t, url), honest.dial(t, url)
	if _, err := h1.CreateRoom(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := h2.JoinRoom(ctxT(t), string(code1)); err != nil {
		t.Fatal(err)
	}
	next(t, a1, signaling.EventPaired)
	next(t, h2, signaling.EventPaired)
	// The attacker's host leaves: the honest player now holds the room,
	// and the attacker's address may create one again.
	if err := a1.Leave(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	next(t, h2, signaling.EventPeerLeft)
	if _, err := a3.CreateRoom(ctxT(t)); err != nil {
		t.Fatalf("after handing a room over: %v", err)
	}
	// Quick match pairing the attacker's waiting player with an honest one
	// turns the queue place into the room; it stays charged to the attacker.
	h3 := honest.dial(t, url)
	if err := h3.QuickMatch(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	next(t, a2, signaling.EventPaired)
	next(t, h3, signaling.EventPaired)
	if err := a1.QuickMatch(ctxT(t)); !errors.Is(err, signaling.ErrTooManyRooms) {
		t.Fatalf("quick over the limit: %v", err)
	}
	if err := a2.Leave(ctxT(t)); err != nil { // h3 now holds it
		t.Fatal(err)
	}
	next(t, h3, signaling.EventPeerLeft)
	if err := a1.QuickMatch(ctxT(t)); err != nil {
		t.Fatalf("quick after the room went to h3: %v", err)
	}
}

// TestAddrRateLimit: the messages of all an address's connections share
// one bucket; over it they wait their turn, none is lost; another address
// does not wait.
func TestAddrRateLimit(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{AddrRatePerSec: 5, AddrRateBurst: 2})
	attacker, honest := newFrom(t, "127.0.0.2"), newFrom(t, "127.0.0.3")
	r1, r2 := attacker.raw(t, url), attacker.raw(t, url)
	for i := 0; i < 4; i++ {
		r1.send(`{"type":"leave"}`)
		r2.send(`{"type":"leave"}`)
	}
	h := honest.raw(t, url)
	h.send(`{"type":"create"}`)
	h.expect(signaling.TypeJoined)
	for i := 0; i < 4; i++ {
		r1.expectError(signaling.ErrWrongState)
		r2.expectError(signaling.ErrWrongState)
	}
	if st := s.Stats(); st.RateLimited != 0 || s.delayed.Load() == 0 {
		t.Fatalf("stats %+v, delayed %d", st, s.delayed.Load())
	}
}

// TestAddrMessageReservations checks the waits of the address bucket on an
// injected clock.
func TestAddrMessageReservations(t *testing.T) {
	clk := newFakeClock()
	cfg, err := Config{AddrRatePerSec: 10, AddrRateBurst: 2, Now: clk.Now}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	l := newAddrLimiter(&cfg)
	st, _ := l.reserveConn(netip.MustParseAddr("192.0.2.1"))
	want := []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	for i, w := range want {
		if got, ok := l.reserveMsg(st); !ok || got != w {
			t.Fatalf("reservation %d: %v %v, want %v", i, got, ok, w)
		}
	}
	clk.advance(500 * time.Millisecond) // pays the debt of 3, refills 2
	for i, w := range []time.Duration{0, 0, 100 * time.Millisecond} {
		if got, ok := l.reserveMsg(st); !ok || got != w {
			t.Fatalf("after refill %d: %v %v, want %v", i, got, ok, w)
		}
	}
	for i := 0; i < 19; i++ {
		l.reserveMsg(st)
	}
	if got, ok := l.reserveMsg(st); ok || got <= maxMsgDelay {
		t.Fatalf("reservation past the max delay: %v %v", got, ok)
	}
	if got, ok := l.reserveMsg(st); ok || got <= maxMsgDelay {
		t.Fatalf("a refused reservation was kept: %v %v", got, ok)
	}
}

// slowConn opens a TCP connection from f and sends the start of an HTTP
// request without finishing its headers.
func (f *from) slowConn(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := f.dialer.DialContext(ctxT(t), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET /ws?v=1 HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// refusedHandshake reads a too_many_handshakes HTTP answer from c.
func refusedHandshake(t testing.TB, c net.Conn) {
	t.Helper()
	readDeadline(t, c)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the refusal: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m, err := signaling.DecodeMessage(body)
	if resp.StatusCode != http.StatusTooManyRequests || err != nil || m.Code != signaling.ErrTooManyHandshakes {
		t.Fatalf("got %s %q", resp.Status, body)
	}
}

// TestHandshakeLimit: an address may hold MaxHandshakesPerAddr unfinished
// handshakes; more are refused with 429, the slow ones are cut after
// HandshakeTimeout (2 s: honest handshakes meanwhile must not run into it
// on a loaded machine), and WebSockets do not count.
func TestHandshakeLimit(t *testing.T) {
	leaktest.Check(t)
	s, base := startServer(t, Config{MaxHandshakesPerAddr: 2, HandshakeTimeout: 2 * time.Second})
	addr := strings.TrimPrefix(base, "http://")
	attacker, honest := newFrom(t, "127.0.0.2"), newFrom(t, "127.0.0.3")
	// Established WebSockets do not count.
	a1, a2 := attacker.dial(t, base), attacker.dial(t, base)
	pairByCode(t, a1, a2)
	slow := []net.Conn{attacker.slowConn(t, addr), attacker.slowConn(t, addr)}
	// Wait until the server has accepted both (they count from Accept on).
	waitFor(t, func() bool {
		s.lim.mu.Lock()
		defer s.lim.mu.Unlock()
		st := s.lim.m[netip.MustParseAddr("127.0.0.2")]
		return st != nil && st.handshakes == 2
	})
	third := attacker.slowConn(t, addr)
	refusedHandshake(t, third)
	// Honest players connect and pair meanwhile.
	h1, h2 := honest.dial(t, base), honest.dial(t, base)
	pairByCode(t, h1, h2)
	// The slow ones are cut off by the handshake timeout...
	for _, c := range slow {
		readDeadline(t, c)
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("slow connection: %v", err)
		}
	}
	// ...after which the address may connect again.
	waitFor(t, func() bool {
		s.lim.mu.Lock()
		defer s.lim.mu.Unlock()
		return s.lim.m[netip.MustParseAddr("127.0.0.2")].handshakes == 0
	})
	attacker.dial(t, base)
}

// startProxy runs a reverse proxy on 127.0.0.1 in front of the server at
// base; it appends the client address to X-Forwarded-For.
func startProxy(t testing.TB, base string) string {
	t.Helper()
	u, _ := url.Parse(base)
	p := httputil.NewSingleHostReverseProxy(u)
	tr := &http.Transport{}
	p.Transport = tr
	p.ErrorLog = nil
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: p}
	go hs.Serve(l)
	t.Cleanup(func() {
		hs.Close()
		tr.CloseIdleConnections()
	})
	return "http://" + l.Addr().String()
}

func TestTrustedProxy(t *testing.T) {
	leaktest.Check(t)
	s, base := startServer(t, Config{MaxConnsPerAddr: 4, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	proxy := startProxy(t, base)
	attacker, honest := newFrom(t, "127.0.0.2"), newFrom(t, "127.0.0.3")
	for i := 0; i < 4; i++ {
		attacker.dial(t, proxy)
	}
	if _, err := signaling.Dial(ctxT(t), proxy, attacker.client(signaling.ClientConfig{})); !errors.Is(err, signaling.ErrTooManyConns) {
		t.Fatalf("5th connection through the proxy: %v", err)
	}
	// Honest players behind the same proxy are counted apart, and pair
	// and relay through it.
	h1, h2 := honest.dial(t, proxy), honest.dial(t, proxy)
	p1, p2 := pairByCode(t, h1, h2)
	r1, r2, err := dialRelayPair(t, honest.relayDialer(), proxy, p1, p2)
	if err != nil {
		t.Fatal(err)
	}
	r1.Write([]byte("via proxy"))
	buf := make([]byte, 9)
	readDeadline(t, r2)
	if _, err := io.ReadFull(r2, buf); err != nil || string(buf) != "via proxy" {
		t.Fatalf("relay through proxy: %q %v", buf, err)
	}
	// A client that is not a trusted proxy cannot forge the header: its
	// connection counts under its own address, which is full.
	forged := attacker.client(signaling.ClientConfig{Header: http.Header{"X-Forwarded-For": {"127.0.0.9"}}})
	if _, err := signaling.Dial(ctxT(t), base, forged); !errors.Is(err, signaling.ErrTooManyConns) {
		t.Fatalf("direct connection with a forged header: %v", err)
	}
	// A trusted proxy that sends no client address is refused.
	_, err = signaling.Dial(ctxT(t), base, newFrom(t, "127.0.0.1").client(signaling.ClientConfig{}))
	var e *signaling.Error
	if !errors.As(err, &e) || e.Code != signaling.ErrBadMessage || !strings.Contains(e.Message, "X-Forwarded-For") {
		t.Fatalf("proxy without the header: %v", err)
	}
	if st := s.Stats(); st.Clients != 6 {
		t.Fatalf("stats %+v", st)
	}
}

// TestAddrLimiterSweep: addresses that hold nothing and whose buckets have
// refilled are forgotten; one that used its failed-join budget is kept
// until the budget is back, so disconnecting does not reset it.
func TestAddrLimiterSweep(t *testing.T) {
	clk := newFakeClock()
	cfg, err := Config{Now: clk.Now}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	l := newAddrLimiter(&cfg)
	guesser, _ := l.reserveConn(netip.MustParseAddr("192.0.2.1"))
	for i := 0; i < cfg.FailedJoinBurst; i++ {
		l.missed(guesser)
	}
	l.releaseConn(guesser)
	l.reserveConn(netip.MustParseAddr("192.0.2.2")) // still connected
	// Many addresses that sent a message and left: the sweep the 1024th
	// triggers finds none whose bucket has refilled, and doubles.
	for i := 0; i < minSweep; i++ {
		st, ok := l.reserveConn(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}))
		if !ok {
			t.Fatal("refused")
		}
		l.reserveMsg(st)
		l.releaseConn(st)
	}
	if n := l.size(); n != minSweep+2 || l.nextSweep != 2*minSweep {
		t.Fatalf("%d addresses, next sweep at %d", n, l.nextSweep)
	}
	clk.advance(10 * time.Second) // message buckets full again, the guesser's not
	l.mu.Lock()
	l.sweep(clk.Now())
	l.mu.Unlock()
	if n := l.size(); n != 2 || l.nextSweep != minSweep {
		t.Fatalf("%d addresses after the sweep (next at %d), want the guesser and the connected one", n, l.nextSweep)
	}
	if st := l.m[netip.MustParseAddr("192.0.2.1")]; st == nil || st.joins.full(clk.Now()) {
		t.Fatal("the guesser's budget was reset")
	}
	clk.advance(time.Minute) // the guesser's budget is back: forgotten
	l.mu.Lock()
	l.sweep(clk.Now())
	l.mu.Unlock()
	if n := l.size(); n != 1 {
		t.Fatalf("%d addresses, want the connected one", n)
	}
}
