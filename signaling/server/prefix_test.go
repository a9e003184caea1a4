package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
)

// v6 returns the address ::1 in /64 number i of 2001:db8:<site>::/48.
// spread puts each /64 in a /56 of its own.
func v6(site uint16, i int, spread bool) netip.Addr {
	sub := uint16(i)
	if spread {
		sub = uint16(i) << 8
	}
	return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(site >> 8), byte(site), byte(sub >> 8), byte(sub), 15: 1})
}

// holdConns reserves as many connections as the limiter allows from each
// address and returns how many it got.
func holdConns(l *addrLimiter, addrs []netip.Addr, each int) int {
	n := 0
	for _, a := range addrs {
		for range each {
			if _, ok := l.reserveConn(addrKey(a, l.cfg.IPv6PrefixLen)); ok {
				n++
			}
		}
	}
	return n
}

// TestPrefixAggregates feeds the limiter addresses directly: 101 /64s of
// one /48 (the attack that held a whole server) hold the /48's share of
// connections, 101 /64s of one /56 the /56's, 100 addresses of one IPv4
// /24 the /24's; an address of another network still gets its own; and
// 300 /64s of one /48 guess codes at the /48's pace, not 300 times one
// address's.
func TestPrefixAggregates(t *testing.T) {
	clk := newFakeClock()
	cfg, err := Config{Now: clk.Now}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	per := cfg.MaxConnsPerAddr // 100
	l := newAddrLimiter(&cfg)
	var spread, one56, v4 []netip.Addr
	for i := range 101 {
		spread = append(spread, v6(0xaa, i, true))
		one56 = append(one56, v6(0xbb, i, false))
		v4 = append(v4, netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}))
	}
	v4 = v4[:100]
	if got, want := holdConns(l, spread, per), 10*per; got != want {
		t.Errorf("101 /64s spread over one /48 hold %d connections, want the /48's %d", got, want)
	}
	if got, want := holdConns(l, one56, per), 4*per; got != want {
		t.Errorf("101 /64s of one /56 hold %d connections, want the /56's %d", got, want)
	}
	if got, want := holdConns(l, v4, per), 10*per; got != want {
		t.Errorf("100 addresses of one /24 hold %d connections, want the /24's %d", got, want)
	}
	// The refusal names the network.
	st, ok := l.reserveConn(addrKey(v6(0xaa, 200, true), 64))
	if ok || st.String() != "your network 2001:db8:aa::/48 (10× the limit of one address)" {
		t.Errorf("refusal at %v (%v)", st, ok)
	}
	// Others are not affected: another /48, another /24.
	if got := holdConns(l, []netip.Addr{v6(0xcc, 0, false), netip.MustParseAddr("203.0.113.5")}, per); got != 2*per {
		t.Errorf("addresses of other networks got %d connections, want %d", got, 2*per)
	}
	// Releasing frees the aggregate too.
	st, _ = l.reserveConn(addrKey(v6(0xdd, 1, false), 64))
	for range per - 1 {
		l.reserveConn(addrKey(v6(0xdd, 1, false), 64))
	}
	for range per {
		l.releaseConn(st)
	}
	if a := l.agg[netip.MustParsePrefix("2001:db8:dd::/48")]; a == nil || a.conns != 0 {
		t.Errorf("aggregate after release: %+v", a)
	}

	// Guessing from 300 /64s of one /48: the /48's burst (10× one
	// address's), then its rate (10× one address's).
	guesses := func() int {
		n := 0
		for i := range 300 {
			st, _ := l.reserveConn(addrKey(v6(0xee, i, true), 64))
			for {
				if ok, _ := l.canGuess(st); !ok {
					break
				}
				l.missed(st)
				n++
			}
		}
		return n
	}
	if got, want := guesses(), 10*cfg.FailedJoinBurst; got != want {
		t.Errorf("300 /64s made %d failed joins at once, want the /48's burst %d", got, want)
	}
	clk.advance(10 * time.Second)
	if got, want := guesses(), int(10*cfg.FailedJoinRate*10); got != want {
		t.Errorf("300 /64s made %d failed joins in 10 s, want the /48's %d", got, want)
	}
}

// TestPrefixConfig: the defaults, turning aggregation off, and invalid
// entries.
func TestPrefixConfig(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil || fmt.Sprint(c.IPv4Prefixes, c.IPv6Prefixes) != "[{24 10}] [{56 4} {48 10}]" {
		t.Fatalf("defaults %v %v %v", c.IPv4Prefixes, c.IPv6Prefixes, err)
	}
	if c, err = (Config{IPv6PrefixLen: 48}).withDefaults(); err != nil || len(c.IPv6Prefixes) != 0 {
		t.Fatalf("IPv6PrefixLen 48: %v %v", c.IPv6Prefixes, err)
	}
	c, _ = Config{IPv4Prefixes: []PrefixLimit{}, IPv6Prefixes: []PrefixLimit{}}.withDefaults()
	l := newAddrLimiter(&c)
	if got := holdConns(l, []netip.Addr{netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")}, 1000); got != 2*c.MaxConnsPerAddr {
		t.Fatalf("without aggregates two addresses of a /24 hold %d", got)
	}
	for _, bad := range []Config{
		{IPv4Prefixes: []PrefixLimit{{Bits: 32, Factor: 2}}},
		{IPv4Prefixes: []PrefixLimit{{Bits: 24, Factor: 0.5}}},
		{IPv6Prefixes: []PrefixLimit{{Bits: 64, Factor: 2}}},
		{IPv6Prefixes: []PrefixLimit{{Bits: -1, Factor: 2}}},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%v %v accepted", bad.IPv4Prefixes, bad.IPv6Prefixes)
		}
	}
}

// TestPrefixLimitIPv4Loopback: real connections from 100 addresses of one
// /24 (127.0.0.2 to 127.0.0.101) hold the /24's share only, and an honest
// pair from another /24 (127.0.1.x) still connects and pairs. Without the
// aggregate they would hold 200 and fill the server (MaxConns 60).
func TestPrefixLimitIPv4Loopback(t *testing.T) {
	leaktest.Check(t)
	_, base := startServer(t, Config{MaxConns: 60, MaxConnsPerAddr: 2})
	held, refused := 0, 0
	for i := 2; i <= 101; i++ {
		f := newFrom(t, fmt.Sprintf("127.0.0.%d", i))
		for range 2 {
			c, err := signaling.Dial(ctxT(t), base, f.client(signaling.ClientConfig{}))
			switch {
			case err == nil:
				held++
				t.Cleanup(func() { c.Close() })
			case errors.Is(err, signaling.ErrTooManyConns):
				refused++
			default:
				t.Fatalf("from 127.0.0.%d: %v", i, err)
			}
		}
	}
	if held != 20 || refused != 180 {
		t.Fatalf("100 addresses of 127.0.0.0/24 hold %d connections (%d refused), want the /24's 20", held, refused)
	}
	h1, h2 := newFrom(t, "127.0.1.1").dial(t, base), newFrom(t, "127.0.1.2").dial(t, base)
	pairByCode(t, h1, h2)
}

// TestPrefixLimitIPv6ThroughProxy: WebSockets whose client addresses
// (reported by a trusted proxy, as the only way to have many IPv6
// addresses on one loopback) are spread over 101 /64s of one /48 hold
// the /48's share only, and an honest pair from another /48 pairs.
func TestPrefixLimitIPv6ThroughProxy(t *testing.T) {
	leaktest.Check(t)
	_, base := startServer(t, Config{MaxConns: 60, MaxConnsPerAddr: 2, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	from := func(a netip.Addr) signaling.ClientConfig {
		return signaling.ClientConfig{Header: http.Header{"X-Forwarded-For": {a.String()}}}
	}
	held, refused := 0, 0
	for i := range 101 {
		for range 2 {
			c, err := signaling.Dial(ctxT(t), base, from(v6(0xaa, i, true)))
			switch {
			case err == nil:
				held++
				t.Cleanup(func() { c.Close() })
			case errors.Is(err, signaling.ErrTooManyConns):
				refused++
			default:
				t.Fatalf("from %s: %v", v6(0xaa, i, true), err)
			}
		}
	}
	if held != 20 || refused != 182 {
		t.Fatalf("101 /64s of 2001:db8:aa::/48 hold %d connections (%d refused), want the /48's 20", held, refused)
	}
	h1 := dial(t, base, from(netip.MustParseAddr("2001:db8:bb::1")))
	h2 := dial(t, base, from(netip.MustParseAddr("2001:db8:bb::2")))
	pairByCode(t, h1, h2)
}
