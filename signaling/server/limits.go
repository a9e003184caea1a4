package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragsync/ragsync/internal/thintcp"
	"github.com/ragsync/ragsync/signaling"
)

// Per-address limits.
//
// Every limit below applies to one client address (IPv6 addresses grouped
// by Config.IPv6PrefixLen), on top of the server-wide ones:
//
//   - connections: WebSockets plus relay requests and streams
//     (Config.MaxConnsPerAddr, too_many_conns);
//   - rooms held as the waiting offerer, quick-match queue places included
//     (Config.MaxRoomsPerAddr, too_many_rooms);
//   - messages per second over all the address's WebSockets
//     (Config.AddrRatePerSec and AddrRateBurst): a message over it waits
//     (the connection is not read meanwhile, so TCP slows the sender down);
//     one that would wait over 2 s is dropped with rate_limited;
//   - joins that miss (Config.FailedJoinRate and FailedJoinBurst,
//     too_many_failed_joins), which bound how fast codes can be guessed;
//   - TCP connections still in their HTTP handshake, counted per direct
//     peer (Config.MaxHandshakesPerAddr, too_many_handshakes).
//
// Each limit also applies, scaled up, to the networks the address is in
// (Config.IPv4Prefixes, default the /24 at 10×; Config.IPv6Prefixes,
// default the /56 at 4× and the /48 at 10×), so that one host holding
// many addresses of its network (a /48 has 65,536 /64s) is still bounded:
// an address is refused when it, or any of its networks, is at its limit.
//
// The client address is the direct peer's, or, when the direct peer is one
// of Config.TrustedProxies, the one the proxy reports in
// Config.ClientIPHeader.

// addrState is what the server knows about one client address (a leaf),
// or about one network prefix aggregating several (an aggregate).
type addrState struct {
	key    netip.Addr   // a leaf's address
	prefix netip.Prefix // an aggregate's prefix; the zero Prefix for a leaf
	factor float64      // the limits are the per-address ones times this; 1 for a leaf
	up     []*addrState // a leaf's aggregates, narrowest first
	refs   int          // an aggregate's leaves

	// addrLimiter.mu
	conns      int // WebSockets and relay requests/streams
	rooms      int // rooms held as offerer, and queue places
	handshakes int // TCP connections not past their handshake (direct peers only)
	msgs       tokenBucket
	joins      tokenBucket // failed joins
}

// level returns st for i == 0 and its i-th aggregate after; there are
// 1+len(st.up) levels.
func (st *addrState) level(i int) *addrState {
	if i == 0 {
		return st
	}
	return st.up[i-1]
}

// limit scales a per-address limit to this level (never below it).
func (st *addrState) limit(n int) int {
	if st.factor <= 1 {
		return n
	}
	return max(n, int(float64(n)*st.factor))
}

// String names the level for error messages.
func (st *addrState) String() string {
	if st.prefix.IsValid() {
		return fmt.Sprintf("your network %s (%.3g× the limit of one address)", st.prefix, st.factor)
	}
	return "your address " + st.key.String()
}

func (st *addrState) idle(now time.Time) bool {
	return st.conns == 0 && st.rooms == 0 && st.handshakes == 0 && st.msgs.full(now) && st.joins.full(now)
}

// addrLimiter holds per-address state. Entries live while the address has
// something open or a bucket that has not refilled, so closing every
// connection does not reset an address's failed-join budget; aggregates
// live while a leaf refers to them, or longer on the same terms.
type addrLimiter struct {
	cfg *Config
	now func() time.Time

	mu        sync.Mutex
	m         map[netip.Addr]*addrState   // leaves
	agg       map[netip.Prefix]*addrState // aggregates
	nextSweep int
}

const minSweep = 1024

func newAddrLimiter(cfg *Config) *addrLimiter {
	return &addrLimiter{cfg: cfg, now: cfg.Now, m: make(map[netip.Addr]*addrState), agg: make(map[netip.Prefix]*addrState), nextSweep: minSweep}
}

// addrKey groups IPv6 addresses by prefix; IPv4 (and IPv4-mapped IPv6)
// addresses stand alone. The zero Addr (an unknown peer, e.g. an in-memory
// connection) is one key of its own.
func addrKey(a netip.Addr, v6Bits int) netip.Addr {
	a = a.Unmap()
	if a.Is6() && v6Bits < 128 {
		p, err := a.WithZone("").Prefix(v6Bits)
		if err == nil {
			return p.Addr()
		}
	}
	return a.WithZone("")
}

func (l *addrLimiter) newState(rateFactor float64, now time.Time) *addrState {
	return &addrState{
		factor: rateFactor,
		msgs:   newTokenBucket(l.cfg.AddrRatePerSec*rateFactor, max(l.cfg.AddrRateBurst, int(float64(l.cfg.AddrRateBurst)*rateFactor)), now),
		joins:  newTokenBucket(l.cfg.FailedJoinRate*rateFactor, max(l.cfg.FailedJoinBurst, int(float64(l.cfg.FailedJoinBurst)*rateFactor)), now),
	}
}

// get returns the state of key, creating it and linking it to its
// aggregates. Called with l.mu held.
func (l *addrLimiter) get(key netip.Addr) *addrState {
	if st := l.m[key]; st != nil {
		return st
	}
	now := l.now()
	if len(l.m) >= l.nextSweep {
		l.sweep(now)
	}
	st := l.newState(1, now)
	st.key = key
	prefixes := l.cfg.IPv6Prefixes
	if key.Is4() {
		prefixes = l.cfg.IPv4Prefixes
	}
	for _, pl := range prefixes {
		if !key.IsValid() {
			break
		}
		p, err := key.Prefix(pl.Bits)
		if err != nil {
			continue
		}
		a := l.agg[p]
		if a == nil {
			a = l.newState(pl.Factor, now)
			a.prefix = p
			l.agg[p] = a
		}
		a.refs++
		st.up = append(st.up, a)
	}
	l.m[key] = st
	return st
}

// sweep forgets addresses that hold nothing and whose buckets are full
// again, then aggregates no address refers to on the same terms.
// Amortised: it runs when the map has doubled since the last sweep.
func (l *addrLimiter) sweep(now time.Time) {
	for k, st := range l.m {
		if st.idle(now) {
			for _, a := range st.up {
				a.refs--
			}
			delete(l.m, k)
		}
	}
	for k, a := range l.agg {
		if a.refs == 0 && a.idle(now) {
			delete(l.agg, k)
		}
	}
	l.nextSweep = max(minSweep, 2*len(l.m))
}

// state returns key's state (for another node's client, whose room this
// node holds).
func (l *addrLimiter) state(key netip.Addr) *addrState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.get(key)
}

// size is the number of addresses tracked (for tests and metrics).
func (l *addrLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// reserveConn counts one more connection for key, or reports false when
// the address, or one of its networks, has its MaxConnsPerAddr already:
// the state returned is then that level's, for the error message.
func (l *addrLimiter) reserveConn(key netip.Addr) (*addrState, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.get(key)
	for i := range 1 + len(st.up) {
		if x := st.level(i); x.conns >= x.limit(l.cfg.MaxConnsPerAddr) {
			return x, false
		}
	}
	for i := range 1 + len(st.up) {
		st.level(i).conns++
	}
	return st, true
}

func (l *addrLimiter) releaseConn(st *addrState) {
	l.mu.Lock()
	for i := range 1 + len(st.up) {
		st.level(i).conns--
	}
	l.mu.Unlock()
}

// reserveRoom counts one more room (or queue place) held by st, or reports
// false at MaxRoomsPerAddr (of the address or one of its networks).
func (l *addrLimiter) reserveRoom(st *addrState) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range 1 + len(st.up) {
		if x := st.level(i); x.rooms >= x.limit(l.cfg.MaxRoomsPerAddr) {
			return false
		}
	}
	for i := range 1 + len(st.up) {
		st.level(i).rooms++
	}
	return true
}

// moveRoom transfers one held room from old to new (either may be nil).
// The new holder may go over its limit: it did not ask for the room, its
// host left it.
func (l *addrLimiter) moveRoom(old, new *addrState) {
	if old == new {
		return
	}
	l.mu.Lock()
	if old != nil {
		for i := range 1 + len(old.up) {
			old.level(i).rooms--
		}
	}
	if new != nil {
		for i := range 1 + len(new.up) {
			new.level(i).rooms++
		}
	}
	l.mu.Unlock()
}

// maxMsgDelay bounds how long a message may wait for its address's rate
// limit; past it, the message is dropped. Each connection waits for one
// message at a time, so the wait is at most MaxConnsPerAddr/AddrRatePerSec
// (1 s with the defaults).
const maxMsgDelay = 2 * time.Second

// reserveMsg takes one token from the message bucket of the address and
// of each of its networks, going into debt if it must, and returns how
// long the message has to wait for them. ok is false when that is longer
// than maxMsgDelay; the tokens are then given back and the message must be
// dropped.
func (l *addrLimiter) reserveMsg(st *addrState) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for i := range 1 + len(st.up) {
		b := &st.level(i).msgs
		b.refill(now)
		b.tokens--
		if b.tokens < 0 {
			wait = max(wait, time.Duration(-b.tokens/b.rate*float64(time.Second)))
		}
	}
	if wait > maxMsgDelay {
		for i := range 1 + len(st.up) {
			st.level(i).msgs.tokens++
		}
		return wait, false
	}
	return wait, true
}

// canGuess reports whether the address may make a join that could miss,
// and if not, how long until it may (its own budget and its networks').
func (l *addrLimiter) canGuess(st *addrState) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	ok, wait := true, time.Duration(0)
	for i := range 1 + len(st.up) {
		if o, w := st.level(i).joins.peek(now); !o {
			ok, wait = false, max(wait, w)
		}
	}
	return ok, wait
}

// missed takes one token from the failed-join bucket of the address and
// of each of its networks.
func (l *addrLimiter) missed(st *addrState) {
	l.mu.Lock()
	now := l.now()
	for i := range 1 + len(st.up) {
		st.level(i).joins.allow(now)
	}
	l.mu.Unlock()
}

// beginHandshake counts a TCP connection from key that has not yet become a
// WebSocket or relay stream, or reports false at MaxHandshakesPerAddr (of
// the address or one of its networks, whose state is then returned).
func (l *addrLimiter) beginHandshake(key netip.Addr) (*addrState, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.get(key)
	for i := range 1 + len(st.up) {
		if x := st.level(i); x.handshakes >= x.limit(l.cfg.MaxHandshakesPerAddr) {
			return x, false
		}
	}
	for i := range 1 + len(st.up) {
		st.level(i).handshakes++
	}
	return st, true
}

func (l *addrLimiter) endHandshake(st *addrState) {
	l.mu.Lock()
	for i := range 1 + len(st.up) {
		st.level(i).handshakes--
	}
	l.mu.Unlock()
}

// peek reports whether a token is available without taking it, and if not,
// how long until one is.
func (b *tokenBucket) peek(now time.Time) (bool, time.Duration) {
	b.refill(now)
	if b.tokens >= 1 {
		return true, 0
	}
	if b.rate <= 0 {
		return false, time.Duration(1<<63 - 1)
	}
	return false, time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// full reports whether the bucket would be full at now.
func (b *tokenBucket) full(now time.Time) bool {
	dt := now.Sub(b.last).Seconds()
	if dt < 0 {
		dt = 0
	}
	return b.tokens+dt*b.rate >= b.burst
}

// peerAddr parses a net/http RemoteAddr or a net.Addr string. An address
// that is not IP:port (an in-memory pipe) is the zero Addr.
func peerAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}

func (s *Server) trusted(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	a = a.Unmap()
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr returns the address r's per-address limits apply to: the
// direct peer's, or, when the direct peer is a trusted proxy, the rightmost
// address in the client address header that is not itself a trusted proxy.
// A request from a trusted proxy without a usable header is an error: the
// proxy is misconfigured, and counting all its clients as one address
// would let one of them lock the others out.
func (s *Server) clientAddr(r *http.Request) (netip.Addr, *signaling.Error) {
	direct := peerAddr(r.RemoteAddr)
	if !s.trusted(direct) {
		return addrKey(direct, s.cfg.IPv6PrefixLen), nil
	}
	h := s.cfg.ClientIPHeader
	vals := r.Header.Values(h)
	var elems []string
	for _, v := range vals {
		elems = append(elems, strings.Split(v, ",")...)
	}
	var last netip.Addr
	for i := len(elems) - 1; i >= 0; i-- {
		a, ok := parseForwarded(strings.TrimSpace(elems[i]))
		if !ok {
			break
		}
		last = a
		if !s.trusted(a) {
			return addrKey(a, s.cfg.IPv6PrefixLen), nil
		}
	}
	if last.IsValid() {
		// Every hop is a trusted proxy: the leftmost is the client.
		return addrKey(last, s.cfg.IPv6PrefixLen), nil
	}
	return netip.Addr{}, &signaling.Error{Code: signaling.ErrBadMessage, Message: fmt.Sprintf("request came through trusted proxy %s without a valid %s header (got %q); configure the proxy to set it", direct, h, truncate(strings.Join(vals, ","), 64))}
}

// parseForwarded parses one element of X-Forwarded-For (or a similar
// header): an IP address, optionally with a port ("1.2.3.4:5",
// "[::1]:5") or brackets.
func parseForwarded(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// trackListener counts, per direct peer address, the accepted connections
// that have not yet become a WebSocket or an authenticated relay request,
// and refuses more than MaxHandshakesPerAddr with an HTTP 429.
type trackListener struct {
	net.Listener
	s *Server
}

// maxRefusing bounds the connections being refused at once; past it,
// refused connections are closed without an answer.
const maxRefusing = 256

func (l *trackListener) Accept() (net.Conn, error) {
	s := l.s
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		thintcp.Set(c)
		ip := peerAddr(c.RemoteAddr().String())
		if s.trusted(ip) {
			return &trackedConn{Conn: c, s: s}, nil
		}
		st, ok := s.lim.beginHandshake(addrKey(ip, s.cfg.IPv6PrefixLen))
		if ok {
			return &trackedConn{Conn: c, s: s, st: st}, nil
		}
		e := &signaling.Error{Code: signaling.ErrTooManyHandshakes, Message: fmt.Sprintf("%s has %d connections that have not completed their HTTP handshake; finish or close them first", st, st.limit(s.cfg.MaxHandshakesPerAddr))}
		s.refusal(e.Code, reasonPerAddress)
		s.log.Debug("signaling: connection refused", "remote", c.RemoteAddr().String(), "code", e.Code)
		if s.refusing.Add(1) > maxRefusing {
			s.refusing.Add(-1)
			c.Close()
			continue
		}
		go func() {
			defer s.refusing.Add(-1)
			refuseRaw(c, http.StatusTooManyRequests, e)
		}()
	}
}

// refuseRaw answers a connection whose request was not read with a JSON
// error and closes it. It reads (and discards) what the client sent for up
// to a second, so the close does not reset the connection before the
// client has read the answer.
func refuseRaw(c net.Conn, status int, e *signaling.Error) {
	defer c.Close()
	body, _ := signaling.AppendMessage(nil, errMessage(e))
	body = append(body, '\n')
	c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", status, http.StatusText(status), len(body), body)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	var buf [512]byte
	for n := 0; n < 64<<10; {
		m, err := c.Read(buf[:])
		n += m
		if err != nil {
			return
		}
	}
}

// trackedConn is a connection accepted by a trackListener. established
// (when it becomes a WebSocket or relay stream) or Close ends its handshake.
type trackedConn struct {
	net.Conn
	s    *Server
	st   *addrState // nil for a trusted proxy
	done atomic.Bool
}

func (c *trackedConn) established() {
	if c.st != nil && c.done.CompareAndSwap(false, true) {
		c.s.lim.endHandshake(c.st)
	}
}

func (c *trackedConn) Close() error {
	c.established()
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

type connCtxKey struct{}

// establishedConn marks the connection of r as past its handshake.
func establishedConn(r *http.Request) {
	if c, ok := r.Context().Value(connCtxKey{}).(*trackedConn); ok {
		c.established()
	}
}

func withConn(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*trackedConn); ok {
		return context.WithValue(ctx, connCtxKey{}, tc)
	}
	return ctx
}
