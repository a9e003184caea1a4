package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/logging"
	"github.com/pion/turn/v5"
	"github.com/ragsync/ragsync/signaling"
)

// TURNConfig configures the embedded TURN server (Config.TURN): players
// whose NATs block direct UDP relay their WebRTC traffic through it. Each
// player gets time-limited credentials for it in its paired message (the
// TURN REST scheme: username "expiry:id", password
// base64(HMAC-SHA1(key, username))). Zero fields mean the defaults in
// their comments.
type TURNConfig struct {
	// ListenUDP and ListenTCP are the addresses TURN listens on for
	// clients, e.g. ":3478" for both. Empty: no listener of that kind; at
	// least one is required.
	ListenUDP string
	ListenTCP string
	// RelayIP is the address at which clients and their peers reach the
	// relayed ports: the server's public IP. Required.
	RelayIP netip.Addr
	// RelayBind is the local address relay sockets bind to. Zero: every
	// interface of RelayIP's family (right behind a 1:1 NAT or in a
	// container, where RelayIP is not a local address).
	RelayBind netip.Addr
	// MinPort and MaxPort bound the relay ports (publish this range from a
	// container). Zero: any port the system gives.
	MinPort, MaxPort uint16
	// URLs are what clients are told to connect to, e.g.
	// "turn:turn.example.com:3478?transport=udp". Nil: "turn:" URLs for
	// RelayIP and each listener's port, and a "stun:" URL for the UDP one.
	URLs []string
	// Realm is the TURN realm. Default "ragsync".
	Realm string
	// MaxAllocations bounds allocations on the server; more are refused
	// (486 Allocation Quota Reached). Default 1000.
	MaxAllocations int
	// MaxPerAddr bounds the allocations of one client address, and its
	// TCP connections to the TURN listener. Default 8 (a player allocates
	// one per TURN URL it uses).
	MaxPerAddr int
	// AllowPeers lists peer addresses in loopback, private, link-local and
	// other special ranges that clients may relay to. Those are refused by
	// default, so the TURN server is no door into its own network; RelayIP
	// itself is always allowed, so two players relayed by this server reach
	// each other.
	AllowPeers []netip.Prefix
}

func (c *TURNConfig) validate() error {
	if c.ListenUDP == "" && c.ListenTCP == "" {
		return errors.New("signaling: invalid config: TURN needs ListenUDP or ListenTCP")
	}
	if !c.RelayIP.IsValid() || c.RelayIP.IsUnspecified() {
		return errors.New("signaling: invalid config: TURN needs RelayIP, the address peers reach the relay at")
	}
	if c.RelayBind.IsValid() && c.RelayBind.Is4() != c.RelayIP.Unmap().Is4() {
		return fmt.Errorf("signaling: invalid config: TURN RelayBind %s and RelayIP %s are of different families", c.RelayBind, c.RelayIP)
	}
	if (c.MinPort == 0) != (c.MaxPort == 0) || c.MinPort > c.MaxPort {
		return fmt.Errorf("signaling: invalid config: TURN ports %d-%d: give both MinPort and MaxPort with MinPort ≤ MaxPort", c.MinPort, c.MaxPort)
	}
	if c.MaxAllocations < 0 || c.MaxPerAddr < 0 {
		return errors.New("signaling: invalid config: negative TURN limit")
	}
	for _, u := range c.URLs {
		if !strings.HasPrefix(u, "turn:") && !strings.HasPrefix(u, "turns:") && !strings.HasPrefix(u, "stun:") {
			return fmt.Errorf("signaling: invalid config: TURN URL %q must have the scheme turn, turns or stun", u)
		}
		if len(u) > maxICEFieldLen {
			return fmt.Errorf("signaling: invalid config: TURN URL %q is too long", truncate(u, 32))
		}
	}
	if len(c.URLs) > maxICEURLs {
		return fmt.Errorf("signaling: invalid config: %d TURN URLs, limit %d", len(c.URLs), maxICEURLs)
	}
	return nil
}

// turnServer is the embedded TURN server and the credentials it accepts.
type turnServer struct {
	s     *Server
	srv   *turn.Server
	key   []byte
	realm string
	relay netip.Addr
	allow []netip.Prefix
	turn  []string // turn: URLs
	stun  []string // stun: URLs

	maxAllocs, maxPerAddr int

	mu      sync.Mutex
	allocs  int
	perAddr map[netip.Addr]int
}

// specialPeers are ranges refused as TURN peers besides loopback, private,
// link-local, multicast and unspecified addresses.
var specialPeers = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

func startTURN(s *Server, c *TURNConfig) (*turnServer, error) {
	t := &turnServer{
		s:          s,
		key:        deriveKey(s.cfg.Secret, "ragsync turn v1"),
		realm:      c.Realm,
		relay:      c.RelayIP.Unmap(),
		allow:      c.AllowPeers,
		maxAllocs:  c.MaxAllocations,
		maxPerAddr: c.MaxPerAddr,
		perAddr:    make(map[netip.Addr]int),
	}
	if t.realm == "" {
		t.realm = "ragsync"
	}
	if t.maxAllocs == 0 {
		t.maxAllocs = 1000
	}
	if t.maxPerAddr == 0 {
		t.maxPerAddr = 8
	}
	bind := c.RelayBind
	if !bind.IsValid() {
		bind = netip.IPv6Unspecified()
		if t.relay.Is4() {
			bind = netip.IPv4Unspecified()
		}
	}
	var gen turn.RelayAddressGenerator = &turn.RelayAddressGeneratorStatic{RelayAddress: t.relay.AsSlice(), Address: bind.String()}
	if c.MinPort != 0 {
		gen = &turn.RelayAddressGeneratorPortRange{RelayAddress: t.relay.AsSlice(), Address: bind.String(), MinPort: c.MinPort, MaxPort: c.MaxPort}
	}
	cfg := turn.ServerConfig{
		Realm:         t.realm,
		LoggerFactory: slogFactory{l: s.log.With("turn", true)},
		AuthHandler:   t.auth,
		QuotaHandler:  t.quota,
		EventHandler: turn.EventHandler{
			OnAllocationCreated: func(src, _ net.Addr, _, _, _ string, _ net.Addr, _ int) { t.allocated(src, 1) },
			OnAllocationDeleted: func(src, _ net.Addr, _, _, _ string) { t.allocated(src, -1) },
		},
	}
	hostURL := func(port int) string {
		return net.JoinHostPort(t.relay.String(), strconv.Itoa(port))
	}
	var closers []func() error
	fail := func(err error) (*turnServer, error) {
		for _, c := range closers {
			c()
		}
		return nil, err
	}
	if c.ListenUDP != "" {
		pc, err := net.ListenPacket("udp", c.ListenUDP)
		if err != nil {
			return fail(fmt.Errorf("signaling: TURN listen udp: %w", err))
		}
		closers = append(closers, pc.Close)
		cfg.PacketConnConfigs = append(cfg.PacketConnConfigs, turn.PacketConnConfig{PacketConn: pc, RelayAddressGenerator: gen, PermissionHandler: t.permit})
		port := pc.LocalAddr().(*net.UDPAddr).Port
		t.turn = append(t.turn, "turn:"+hostURL(port)+"?transport=udp")
		t.stun = append(t.stun, "stun:"+hostURL(port))
	}
	if c.ListenTCP != "" {
		l, err := net.Listen("tcp", c.ListenTCP)
		if err != nil {
			return fail(fmt.Errorf("signaling: TURN listen tcp: %w", err))
		}
		closers = append(closers, l.Close)
		cfg.ListenerConfigs = append(cfg.ListenerConfigs, turn.ListenerConfig{Listener: &turnListener{Listener: l, t: t, n: make(map[netip.Addr]int)}, RelayAddressGenerator: gen, PermissionHandler: t.permit})
		t.turn = append(t.turn, "turn:"+hostURL(l.Addr().(*net.TCPAddr).Port)+"?transport=tcp")
	}
	if c.URLs != nil {
		t.turn, t.stun = nil, nil
		for _, u := range c.URLs {
			if strings.HasPrefix(u, "stun:") {
				t.stun = append(t.stun, u)
			} else {
				t.turn = append(t.turn, u)
			}
		}
	}
	srv, err := turn.NewServer(cfg)
	if err != nil {
		return fail(fmt.Errorf("signaling: TURN: %w", err))
	}
	t.srv = srv
	s.log.Info("signaling: TURN server running", "urls", strings.Join(append(append([]string(nil), t.turn...), t.stun...), " "), "relay_ip", t.relay.String(), "relay_bind", bind.String())
	return t, nil
}

func (t *turnServer) close() error { return t.srv.Close() }

// credentials returns the ICE servers for one player of a pairing:
// the TURN URLs with credentials valid until expiry, and the STUN URLs.
func (t *turnServer) credentials(id string, expiry time.Time) []signaling.ICEServer {
	user := strconv.FormatInt(expiry.Unix(), 10) + ":" + id
	var out []signaling.ICEServer
	if len(t.turn) > 0 {
		out = append(out, signaling.ICEServer{URLs: t.turn, Username: user, Credential: t.password(user)})
	}
	if len(t.stun) > 0 {
		out = append(out, signaling.ICEServer{URLs: t.stun})
	}
	return out
}

func (t *turnServer) password(user string) string {
	m := hmac.New(sha1.New, t.key)
	m.Write([]byte(user))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// auth accepts usernames "expiry:id" whose expiry (Unix seconds) has not
// passed, with the password credentials gave them.
func (t *turnServer) auth(ra *turn.RequestAttributes) (string, []byte, bool) {
	exp, _, ok := strings.Cut(ra.Username, ":")
	sec, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil || !t.s.cfg.Now().Before(time.Unix(sec, 0)) || len(ra.Username) > maxICEFieldLen {
		t.s.met.turnRefusals.WithLabelValues("auth").Inc()
		t.s.log.Debug("signaling: TURN credentials refused", "user", truncate(ra.Username, 64), "from", ra.SrcAddr)
		return "", nil, false
	}
	return ra.Username, turn.GenerateAuthKey(ra.Username, ra.Realm, t.password(ra.Username)), true
}

func (t *turnServer) addrOf(a net.Addr) netip.Addr {
	return addrKey(peerAddr(a.String()), t.s.cfg.IPv6PrefixLen)
}

// quota refuses an allocation over MaxAllocations or MaxPerAddr.
func (t *turnServer) quota(_, _ string, src net.Addr) bool {
	t.mu.Lock()
	ok := t.allocs < t.maxAllocs && t.perAddr[t.addrOf(src)] < t.maxPerAddr
	t.mu.Unlock()
	if !ok {
		t.s.met.turnRefusals.WithLabelValues("quota").Inc()
	}
	return ok
}

func (t *turnServer) allocated(src net.Addr, d int) {
	k := t.addrOf(src)
	t.mu.Lock()
	t.allocs += d
	if n := t.perAddr[k] + d; n > 0 {
		t.perAddr[k] = n
	} else {
		delete(t.perAddr, k)
	}
	t.mu.Unlock()
	t.s.met.turnAllocs.Add(float64(d))
	if d > 0 {
		t.s.met.turnAllocsTot.Inc()
	}
}

// permit refuses relaying to special-purpose addresses (see AllowPeers).
func (t *turnServer) permit(_ net.Addr, peer net.IP) bool {
	a, ok := netip.AddrFromSlice(peer)
	a = a.Unmap()
	allowed := ok && t.peerAllowed(a)
	if !allowed {
		t.s.met.turnRefusals.WithLabelValues("peer").Inc()
	}
	return allowed
}

func (t *turnServer) peerAllowed(a netip.Addr) bool {
	if a == t.relay {
		return true
	}
	for _, p := range t.allow {
		if p.Contains(a) {
			return true
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range specialPeers {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// turnListener bounds the TCP connections of one address to the TURN
// listener (TURNConfig.MaxPerAddr).
type turnListener struct {
	net.Listener
	t  *turnServer
	mu sync.Mutex
	n  map[netip.Addr]int
}

func (l *turnListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		k := l.t.addrOf(c.RemoteAddr())
		l.mu.Lock()
		ok := l.n[k] < l.t.maxPerAddr
		if ok {
			l.n[k]++
		}
		l.mu.Unlock()
		if !ok {
			l.t.s.met.turnRefusals.WithLabelValues("quota").Inc()
			c.Close()
			continue
		}
		return &turnConn{Conn: c, l: l, k: k}, nil
	}
}

type turnConn struct {
	net.Conn
	l      *turnListener
	k      netip.Addr
	closed atomic.Bool
}

func (c *turnConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.mu.Lock()
		if c.l.n[c.k]--; c.l.n[c.k] <= 0 {
			delete(c.l.n, c.k)
		}
		c.l.mu.Unlock()
	}
	return c.Conn.Close()
}

// slogFactory routes pion's logs into a *slog.Logger, a level lower than
// pion's (its errors are mostly about clients going away).
type slogFactory struct{ l *slog.Logger }

func (f slogFactory) NewLogger(scope string) logging.LeveledLogger {
	return slogLeveled{l: f.l.With("pion", scope)}
}

type slogLeveled struct{ l *slog.Logger }

func (s slogLeveled) logf(level slog.Level, format string, args ...any) {
	if s.l.Enabled(context.Background(), level) {
		s.l.Log(context.Background(), level, fmt.Sprintf(format, args...))
	}
}

const levelTrace = slog.LevelDebug - 4

func (s slogLeveled) Trace(msg string)                  { s.logf(levelTrace, "%s", msg) }
func (s slogLeveled) Tracef(format string, args ...any) { s.logf(levelTrace, format, args...) }
func (s slogLeveled) Debug(msg string)                  { s.logf(levelTrace, "%s", msg) }
func (s slogLeveled) Debugf(format string, args ...any) { s.logf(levelTrace, format, args...) }
func (s slogLeveled) Info(msg string)                   { s.logf(slog.LevelDebug, "%s", msg) }
func (s slogLeveled) Infof(format string, args ...any)  { s.logf(slog.LevelDebug, format, args...) }
func (s slogLeveled) Warn(msg string)                   { s.logf(slog.LevelDebug, "%s", msg) }
func (s slogLeveled) Warnf(format string, args ...any)  { s.logf(slog.LevelDebug, format, args...) }
func (s slogLeveled) Error(msg string)                  { s.logf(slog.LevelInfo, "%s", msg) }
func (s slogLeveled) Errorf(format string, args ...any) { s.logf(slog.LevelInfo, format, args...) }
