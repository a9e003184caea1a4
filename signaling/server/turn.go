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
	"slices"
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
// player gets short-lived credentials for it in its paired message (the
// TURN REST scheme: username "expiry:id", password
// base64(HMAC-SHA1(key, username))), renewed on request (ice_servers)
// while the pairing lasts. Zero fields mean the defaults in their
// comments.
//
// What the TURN server lends, and to whom:
//
//   - credentials are accepted while their pairing is current on this
//     server, and after it ended (both players left) only until their
//     expiry, CredentialTTL after they were issued;
//   - a client may relay only to the IP addresses in the other player's
//     candidates of that pairing (as the signaling server forwarded them,
//     at most 32 per player), never to other addresses;
//   - never to loopback, private, link-local, cloud metadata or other
//     special-purpose addresses (unless LAN, or AllowPeers), nor to the
//     server's own addresses, except RelayIP to reach the relayed ports of
//     other allocations: a packet to one of the server's own addresses on
//     any other port (its TURN, signaling or any other service) is dropped.
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
	// other special ranges that clients may relay to (still only the other
	// player's candidates). Those are refused by default, so the TURN
	// server is no door into its own network; RelayIP itself is allowed
	// for its relayed ports only, so two players relayed by this server
	// reach each other. Cloud metadata addresses (169.254.169.254,
	// fd00:ec2::254, 100.100.100.200) are always refused.
	AllowPeers []netip.Prefix
	// LAN allows relaying to loopback, private and link-local peers (the
	// other player's candidates only, never metadata addresses), and to the
	// other player's candidates on the server's own addresses (never on
	// its TURN ports): for a server on a LAN, or tests on one machine.
	// False: refused, as above.
	LAN bool
	// CredentialTTL is how long TURN credentials stay valid once their
	// pairing has ended; while it lasts they are valid, and a player
	// may ask for fresh ones (ice_servers). Default 5m.
	CredentialTTL time.Duration
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
	if c.MaxAllocations < 0 || c.MaxPerAddr < 0 || c.CredentialTTL < 0 {
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

	lan   bool
	ttl   time.Duration
	own   []netip.Addr    // the host's own addresses (loopback is always own)
	ports map[uint16]bool // the TURN listeners' ports

	maxAllocs, maxPerAddr int

	mu         sync.Mutex
	allocs     int
	perAddr    map[netip.Addr]int
	users      map[string]string // client address (allocation source) → user id
	relayPorts map[uint16]int    // relayed ports of live allocations
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

// metadataPeers are cloud metadata services, refused even on a LAN.
var metadataPeers = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
}

// maxPeerCandidates bounds the candidate addresses recorded per player of
// a pairing, and so the peers its TURN allocations may reach.
const maxPeerCandidates = 32

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
		lan:        c.LAN,
		ttl:        c.CredentialTTL,
		ports:      make(map[uint16]bool),
		users:      make(map[string]string),
		relayPorts: make(map[uint16]int),
	}
	if t.ttl == 0 {
		t.ttl = 5 * time.Minute
	}
	t.own = append(t.own, t.relay)
	if c.RelayBind.IsValid() {
		t.own = append(t.own, c.RelayBind.Unmap())
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				t.own = append(t.own, p.Addr().Unmap())
			}
		}
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
	var base turn.RelayAddressGenerator = &turn.RelayAddressGeneratorStatic{RelayAddress: t.relay.AsSlice(), Address: bind.String()}
	if c.MinPort != 0 {
		base = &turn.RelayAddressGeneratorPortRange{RelayAddress: t.relay.AsSlice(), Address: bind.String(), MinPort: c.MinPort, MaxPort: c.MaxPort}
	}
	gen := &relayGen{RelayAddressGenerator: base, t: t}
	cfg := turn.ServerConfig{
		Realm:         t.realm,
		LoggerFactory: slogFactory{l: s.log.With("turn", true)},
		AuthHandler:   t.auth,
		QuotaHandler:  t.quota,
		EventHandler: turn.EventHandler{
			OnAllocationCreated: func(src, _ net.Addr, _, user, _ string, _ net.Addr, _ int) { t.allocated(src, user, 1) },
			OnAllocationDeleted: func(src, _ net.Addr, _, user, _ string) { t.allocated(src, user, -1) },
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
		t.ports[uint16(port)] = true
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
		t.ports[uint16(l.Addr().(*net.TCPAddr).Port)] = true
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

// turnUser is what a TURN user id ("<room>-<pairing hex>-<role>") names.
type turnUser struct {
	room    signaling.RoomCode
	pairing uint64
	side    int
}

func turnUserID(room signaling.RoomCode, pairing uint64, side int) string {
	role := signaling.RoleOfferer
	if side == 1 {
		role = signaling.RoleAnswerer
	}
	return fmt.Sprintf("%s-%016x-%s", room, pairing, role)
}

func parseTURNUser(id string) (turnUser, bool) {
	parts := strings.Split(id, "-")
	if len(parts) != 3 || len(parts[1]) != 16 {
		return turnUser{}, false
	}
	room, err := signaling.ParseRoomCode(parts[0])
	pairing, err2 := strconv.ParseUint(parts[1], 16, 64)
	if err != nil || err2 != nil || string(room) != parts[0] {
		return turnUser{}, false
	}
	u := turnUser{room: room, pairing: pairing}
	switch parts[2] {
	case "offerer":
	case "answerer":
		u.side = 1
	default:
		return turnUser{}, false
	}
	return u, true
}

// auth accepts usernames "expiry:id" whose pairing is current here, or
// whose expiry (Unix seconds) has not passed, with the password
// credentials gave them. The user id is the id without the expiry, so
// renewed credentials keep working on an allocation made with older ones.
func (t *turnServer) auth(ra *turn.RequestAttributes) (string, []byte, bool) {
	exp, id, ok := strings.Cut(ra.Username, ":")
	sec, err := strconv.ParseInt(exp, 10, 64)
	u, uok := parseTURNUser(id)
	if ok && err == nil && uok && len(ra.Username) <= maxICEFieldLen &&
		(t.s.cfg.Now().Before(time.Unix(sec, 0)) || t.s.pairingLive(u.room, u.pairing)) {
		return id, turn.GenerateAuthKey(ra.Username, ra.Realm, t.password(ra.Username)), true
	}
	t.s.met.turnRefusals.With("auth").Inc()
	t.s.log.Debug("signaling: TURN credentials refused", "user", truncate(ra.Username, 64), "from", ra.SrcAddr)
	return "", nil, false
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
		t.s.met.turnRefusals.With("quota").Inc()
	}
	return ok
}

func (t *turnServer) allocated(src net.Addr, user string, d int) {
	k := t.addrOf(src)
	t.mu.Lock()
	if d > 0 {
		t.users[src.String()] = user
	} else {
		delete(t.users, src.String())
	}
	t.allocs += d
	if n := t.perAddr[k] + d; n > 0 {
		t.perAddr[k] = n
	} else {
		delete(t.perAddr, k)
	}
	t.mu.Unlock()
	t.s.met.turnAllocs.Add(int64(d))
	if d > 0 {
		t.s.met.turnAllocsTot.Inc()
	}
}

// permit allows a client to relay to peer only if peer is one of the
// other player's candidate addresses in the client's pairing, and an
// address TURN may reach (peerAllowed).
func (t *turnServer) permit(client net.Addr, peer net.IP) bool {
	a, ok := netip.AddrFromSlice(peer)
	a = a.Unmap()
	allowed := ok && t.peerAllowed(a)
	if allowed {
		t.mu.Lock()
		id, known := "", false
		if client != nil {
			id, known = t.users[client.String()]
		}
		t.mu.Unlock()
		u, uok := parseTURNUser(id)
		allowed = known && uok && t.s.peerCandidate(u, a, 0)
	}
	if !allowed {
		t.s.met.turnRefusals.With("peer").Inc()
		t.s.log.Debug("signaling: TURN permission refused", "client", client, "peer", a)
	}
	return allowed
}

// peerAllowed reports whether TURN may relay to a at all (see
// TURNConfig).
func (t *turnServer) peerAllowed(a netip.Addr) bool {
	if slices.Contains(metadataPeers, a) {
		return false
	}
	if a == t.relay {
		return true // its relayed ports only: see relayPacketConn
	}
	for _, p := range t.allow {
		if p.Contains(a) {
			return true
		}
	}
	if t.lan && (a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast()) {
		return true
	}
	if t.isOwn(a) || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range specialPeers {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// isOwn reports whether a is one of the server host's own addresses.
func (t *turnServer) isOwn(a netip.Addr) bool {
	return a.IsLoopback() || a.IsUnspecified() || slices.Contains(t.own, a)
}

// sendAllowed reports whether a relay socket of user may exchange
// packets with ap: any address its permissions allow, but on the
// server's own addresses only the relayed ports of live allocations (or,
// on a LAN, the other player's candidates that are not TURN ports).
func (t *turnServer) sendAllowed(user string, ap netip.AddrPort) bool {
	a := ap.Addr().Unmap()
	if !t.isOwn(a) {
		return true
	}
	t.mu.Lock()
	relayed := t.relayPorts[ap.Port()] > 0
	t.mu.Unlock()
	if relayed {
		return true
	}
	if !t.lan || t.ports[ap.Port()] {
		return false
	}
	u, ok := parseTURNUser(user)
	return ok && t.s.peerCandidate(u, a, ap.Port())
}

// relayGen makes relay sockets that keep to sendAllowed, and tracks the
// relayed ports.
type relayGen struct {
	turn.RelayAddressGenerator
	t *turnServer
}

func (g *relayGen) AllocatePacketConn(c turn.AllocateListenerConfig) (net.PacketConn, net.Addr, error) {
	pc, addr, err := g.RelayAddressGenerator.AllocatePacketConn(c)
	if err != nil {
		return pc, addr, err
	}
	port := uint16(0)
	if ua, ok := addr.(*net.UDPAddr); ok {
		port = uint16(ua.Port)
	}
	g.t.mu.Lock()
	g.t.relayPorts[port]++
	g.t.mu.Unlock()
	return &relayPacketConn{PacketConn: pc, t: g.t, user: c.UserID, port: port}, addr, nil
}

func (g *relayGen) AllocateConn(c turn.AllocateConnConfig) (net.Conn, error) {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr.String()); err != nil || !g.t.sendAllowed(c.UserID, ap) {
		g.t.s.met.turnRefusals.With("peer").Inc()
		return nil, fmt.Errorf("signaling: TURN: relaying to %s is not allowed", c.RemoteAddr)
	}
	return g.RelayAddressGenerator.AllocateConn(c)
}

// relayPacketConn is one allocation's relay socket: packets to or from
// addresses sendAllowed refuses are dropped.
type relayPacketConn struct {
	net.PacketConn
	t      *turnServer
	user   string
	port   uint16
	closed atomic.Bool
}

func addrPortOf(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

func (c *relayPacketConn) WriteTo(p []byte, a net.Addr) (int, error) {
	if !c.t.sendAllowed(c.user, addrPortOf(a)) {
		c.t.s.met.turnRefusals.With("peer").Inc()
		return len(p), nil
	}
	return c.PacketConn.WriteTo(p, a)
}

func (c *relayPacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, a, err := c.PacketConn.ReadFrom(p)
		if err != nil || c.t.sendAllowed(c.user, addrPortOf(a)) {
			return n, a, err
		}
	}
}

func (c *relayPacketConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.t.mu.Lock()
		if c.t.relayPorts[c.port]--; c.t.relayPorts[c.port] <= 0 {
			delete(c.t.relayPorts, c.port)
		}
		c.t.mu.Unlock()
	}
	return c.PacketConn.Close()
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
			l.t.s.met.turnRefusals.With("quota").Inc()
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

// candidateAddr parses the address and port of an ICE candidate line
// ("candidate:1 1 udp 2130706431 198.51.100.7 5000 typ host ...", with or
// without "a="). Hostnames (mDNS .local) are not addresses: false.
func candidateAddr(line string) (netip.AddrPort, bool) {
	f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "a="))
	if len(f) < 8 || !strings.HasPrefix(f[0], "candidate:") || f[6] != "typ" {
		return netip.AddrPort{}, false
	}
	a, err := netip.ParseAddr(f[4])
	port, err2 := strconv.ParseUint(f[5], 10, 16)
	if err != nil || err2 != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a.Unmap().WithZone(""), uint16(port)), true
}

// noteCandidates records the candidate addresses in one player's offer,
// answer or candidate message, up to maxPeerCandidates per player, for
// the other player's TURN permissions. Called with s.mu held.
func (r *room) noteCandidates(side int, sdp string, c *signaling.Candidate) {
	add := func(line string) {
		ap, ok := candidateAddr(line)
		if !ok || len(r.cands[side]) >= maxPeerCandidates || slices.Contains(r.cands[side], ap) {
			return
		}
		r.cands[side] = append(r.cands[side], ap)
	}
	if c != nil {
		add(c.Candidate)
	}
	for line := range strings.Lines(sdp) {
		if strings.HasPrefix(line, "a=candidate:") {
			add(line)
		}
	}
}

// pairingLive reports whether room's current pairing is pairing.
func (s *Server) pairingLive(room signaling.RoomCode, pairing uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[room]
	return r != nil && r.pairing == pairing
}

// peerCandidate reports whether a (with port, unless port is 0) is a
// candidate address of the other player of u's pairing, which must be
// current.
func (s *Server) peerCandidate(u turnUser, a netip.Addr, port uint16) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[u.room]
	if r == nil || r.pairing != u.pairing {
		return false
	}
	for _, ap := range r.cands[1-u.side] {
		if ap.Addr() == a && (port == 0 || ap.Port() == port) {
			return true
		}
	}
	return false
}

// handleICEServers answers a player's request for fresh ICE servers
// (TURN credentials) while its pairing lasts. Called with s.mu held.
func (s *Server) handleICEServers(c *client) {
	r := c.room
	if r == nil || r.pairing == 0 || !r.present() {
		c.sendError(&signaling.Error{Code: signaling.ErrWrongState, Message: fmt.Sprintf("ice_servers are for paired players; you are %s", c.where()), Ref: signaling.TypeICEServers})
		return
	}
	m := &signaling.Message{Type: signaling.TypeICEServers}
	if s.trn != nil {
		side := 0
		if r.players[1] == c {
			side = 1
		}
		m.ICE = s.trn.credentials(turnUserID(r.code, r.pairing, side), s.cfg.Now().Add(s.trn.ttl))
	}
	c.send(m)
}
