package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/ragsync/ragsync/signaling"
	"github.com/ragsync/ragsync/signaling/internal/wire"
)

// Config configures a Server. Every zero field means the default given in
// its comment; negative values are invalid. New validates it.
type Config struct {
	// MaxMessageBytes bounds one client message. A larger one gets a
	// message_too_big error and the connection is closed. Default 16 KiB
	// (an SDP offer for a data-channel-only session is 1–3 KiB).
	MaxMessageBytes int
	// RatePerSec and RateBurst are each connection's token bucket: a message
	// costs one token; the bucket refills at RatePerSec up to RateBurst.
	// Defaults 20/s and 40 (room for a burst of trickled candidates).
	RatePerSec float64
	RateBurst  int
	// IdleTimeout closes a connection that has sent nothing (pings count) for
	// this long, with an idle_timeout error. Default 60s. The Client pings
	// every 15s by default.
	IdleTimeout time.Duration
	// MaxConns bounds concurrent WebSocket connections; more get server_full.
	// Default 10000.
	MaxConns int
	// MaxRooms bounds rooms (private and quick-match); more get
	// too_many_rooms. Default 5000.
	MaxRooms int
	// SendQueue is how many messages may wait to be written to one client; a
	// client that does not read is closed (slow_consumer). Default 32.
	SendQueue int
	// WriteTimeout bounds writing one message to a client, and one write to
	// a relay peer. Default 10s.
	WriteTimeout time.Duration
	// MaxRelays bounds concurrent relay streams (two TCP connections each);
	// more get too_many_relays. Default 1000.
	MaxRelays int
	// RelayWaitTimeout is how long a relay request waits for the other
	// player's; then peer_timeout. Default 30s.
	RelayWaitTimeout time.Duration
	// RelayIdleTimeout closes a relay stream when no byte has moved in either
	// direction for this long. Default 60s.
	RelayIdleTimeout time.Duration
	// RelayBufferBytes is the copy buffer of each relay direction. Default
	// 16 KiB.
	RelayBufferBytes int
	// MaxConnsPerAddr bounds the connections of one client address:
	// WebSockets, and relay requests and streams. More get too_many_conns.
	// Default 100 (room for the players behind one carrier-grade NAT).
	MaxConnsPerAddr int
	// MaxRoomsPerAddr bounds the rooms whose waiting offerer is from one
	// address, quick-match queue places included. More get too_many_rooms.
	// Default 50.
	MaxRoomsPerAddr int
	// AddrRatePerSec and AddrRateBurst are a token bucket shared by all the
	// WebSockets of one address, on top of each connection's own. A message
	// over it waits for its token (its connection is not read meanwhile),
	// so players behind one NAT are slowed down, not refused; one that
	// would wait more than 2 s is dropped with rate_limited. Defaults
	// 100/s and 200.
	AddrRatePerSec float64
	AddrRateBurst  int
	// FailedJoinRate and FailedJoinBurst bound guessing room codes. A join
	// that misses (room_not_found, room_full, or a join that creates the
	// room) takes a token from a bucket per address that refills at
	// FailedJoinRate per second up to FailedJoinBurst; with the bucket
	// empty, joins are refused with too_many_failed_joins without looking
	// the room up. Defaults 0.2/s (one every 5 s) and 10: one address then
	// needs about 62 days on average to land in one of 1,000 waiting rooms
	// of the 32⁶ codes.
	FailedJoinRate  float64
	FailedJoinBurst int
	// MaxHandshakesPerAddr bounds the TCP connections from one direct peer
	// address that have not yet become a WebSocket or an authenticated relay
	// request (plain HTTP requests, headers still arriving, refused
	// WebSockets still closing). More are answered 429 too_many_handshakes
	// and closed. Trusted proxies are exempt. Applies to Serve (and
	// ListenAndServe), not to a Server mounted in an http.Server of your
	// own. Default 16.
	MaxHandshakesPerAddr int
	// HandshakeTimeout bounds reading a request's headers, the TLS
	// handshake included, so slow clients cannot hold connections open.
	// Serve only. Default 5s.
	HandshakeTimeout time.Duration
	// TrustedProxies lists the reverse proxies in front of the server. When
	// a request's direct peer is in one of these prefixes, its client
	// address is taken from ClientIPHeader: the rightmost address there that
	// is not itself a trusted proxy. A request from a trusted proxy without
	// that header is refused (bad_message). Nil: no proxy is trusted and
	// the header is ignored, so clients cannot forge it.
	TrustedProxies []netip.Prefix
	// ClientIPHeader names the header trusted proxies put the client address
	// in: a comma-separated list of addresses, appended to by each proxy.
	// Default "X-Forwarded-For" (X-Real-IP and CF-Connecting-IP also work).
	ClientIPHeader string
	// IPv6PrefixLen groups IPv6 client addresses for the per-address limits:
	// one host usually holds a whole /64. Default 64; 128 counts each
	// address alone.
	IPv6PrefixLen int
	// IPv4Prefixes and IPv6Prefixes aggregate the per-address limits
	// (connections, rooms, handshakes, message rate and burst, failed-join
	// rate and burst) over the networks an address is in: each entry is a
	// prefix length and a factor, and all the addresses of one such
	// prefix together get the per-address limits times the factor. Nil:
	// IPv4 /24 at 10×, IPv6 /56 at 4× and /48 at 10× (with the defaults, a
	// /24 or /48 holds at most 1,000 connections and guesses 2 codes/s,
	// however many addresses it uses). An empty, non-nil slice: no
	// aggregation. Lengths must be shorter than the address (IPv4 < 32,
	// IPv6 < IPv6PrefixLen; the IPv6 defaults not shorter are left out);
	// factors at least 1.
	//
	// The trade-off: players behind one carrier-grade NAT already share
	// one address's limits; an aggregate also makes the neighbouring
	// addresses of the carrier's pool (a /24), or the customers of a
	// provider handing out /64s or /56s from one /48, share its limits.
	// A popular game with many players behind one such network should
	// raise the factor for it (or drop the aggregate); the refusals are
	// counted in ragsync_signal_refusals_total{reason="per_address"}.
	IPv4Prefixes, IPv6Prefixes []PrefixLimit
	// Secret keys relay tokens and TURN credentials (HMAC-SHA256 and
	// HMAC-SHA1 of keys derived from it). Servers with the same secret
	// accept each other's relay tokens, and a restarted server accepts the
	// ones it issued before. At least 16 bytes. Nil: a random secret for
	// this Server's lifetime.
	Secret []byte
	// CredentialTTL is how long relay tokens stay valid after the pairing
	// that issued them. Default 12h. (TURN credentials have their own,
	// TURNConfig.CredentialTTL.)
	CredentialTTL time.Duration
	// RejoinGrace is how long a paired player's place is kept when its
	// WebSocket ends without a leave (a dropped connection, a killed
	// process): the pairing and its relay tokens stay valid, the other
	// player gets peer_left with reason "dropped" at once, and the player
	// can take its place back with rejoin and its relay token (and so can
	// both players of a pairing made before a restart, on a server with
	// the same Secret). When it runs out, the pairing ends as if the
	// player had left, with peer_left "disconnected". Default 30s.
	RejoinGrace time.Duration
	// TURN, if not nil, runs an embedded TURN server, and every paired
	// message carries credentials for it. New opens its listeners;
	// Shutdown closes them. Nil: no TURN (and no STUN).
	TURN *TURNConfig
	// HideMetrics keeps /metrics off the handler, for a server on a public
	// address: serve MetricsHandler on a private one instead. False: the
	// handler serves /metrics.
	HideMetrics bool
	// MetricsToken, if not empty, guards the metrics (/metrics and
	// MetricsHandler): a scrape must send "Authorization: Bearer
	// <MetricsToken>" (compared in constant time) or gets 401. At least
	// 16 bytes. Empty: no token.
	MetricsToken string
	// Node names this server among several of one deployment: every
	// metric carries it as the label node, so the servers' series stay
	// apart when one Prometheus gathers them under one name. Empty: no
	// node label.
	Node string
	// Site, if set, serves every request for a path the server does not
	// own (not /ws, /relay, /healthz, /metrics): a web client at /, say,
	// so that pages of the server's own origin pass the Origin check. Nil:
	// such requests get 404 with an error message.
	Site http.Handler
	// OriginPatterns lists browser origins allowed to open WebSockets (see
	// websocket.AcceptOptions). Nil allows same-origin browsers only;
	// non-browser clients send no Origin and are always allowed.
	OriginPatterns []string
	// Logger receives structured logs: rooms and pairings at Info, each
	// connection and client error at Debug, never one line per relayed
	// message at Info. Nil means no logs at all: a server embedded in a
	// game stays quiet unless the game hands it a logger (cmd/signal
	// always does).
	Logger *slog.Logger
	// Now is the clock of the rate limits, relay token and TURN credential
	// expiry. Nil means time.Now.
	Now func() time.Time
	// NATS is the backbone that makes several servers one (see the
	// package doc, Clustering). The zero value is a single server, its
	// shared state in memory, on the same code path.
	NATS NATSConfig
}

// PrefixLimit is one network aggregate of the per-address limits
// (Config.IPv4Prefixes, Config.IPv6Prefixes): the addresses in one prefix
// of length Bits together get the per-address limits times Factor.
type PrefixLimit struct {
	Bits   int
	Factor float64
}

func (c Config) withDefaults() (Config, error) {
	if c.MaxMessageBytes < 0 || c.RatePerSec < 0 || c.RateBurst < 0 || c.IdleTimeout < 0 ||
		c.MaxConns < 0 || c.MaxRooms < 0 || c.SendQueue < 0 || c.WriteTimeout < 0 || c.MaxRelays < 0 ||
		c.RelayWaitTimeout < 0 || c.RelayIdleTimeout < 0 || c.RelayBufferBytes < 0 ||
		c.MaxConnsPerAddr < 0 || c.MaxRoomsPerAddr < 0 || c.AddrRatePerSec < 0 || c.AddrRateBurst < 0 ||
		c.FailedJoinRate < 0 || c.FailedJoinBurst < 0 || c.MaxHandshakesPerAddr < 0 || c.HandshakeTimeout < 0 ||
		c.IPv6PrefixLen < 0 || c.CredentialTTL < 0 || c.RejoinGrace < 0 {
		return c, fmt.Errorf("signaling: invalid config: negative limit in %+v", c)
	}
	if c.RatePerSec != c.RatePerSec || c.AddrRatePerSec != c.AddrRatePerSec || c.FailedJoinRate != c.FailedJoinRate {
		return c, errors.New("signaling: invalid config: a rate is NaN")
	}
	if len(c.Node) > 64 || !utf8.ValidString(c.Node) {
		return c, fmt.Errorf("signaling: invalid config: node name %q is not UTF-8 of at most 64 bytes", truncate(c.Node, 80))
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	deff := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxMessageBytes, 16<<10)
	deff(&c.RatePerSec, 20)
	def(&c.RateBurst, 40)
	defd(&c.IdleTimeout, 60*time.Second)
	def(&c.MaxConns, 10000)
	def(&c.MaxRooms, 5000)
	def(&c.SendQueue, 32)
	defd(&c.WriteTimeout, 10*time.Second)
	def(&c.MaxRelays, 1000)
	defd(&c.RelayWaitTimeout, 30*time.Second)
	defd(&c.RelayIdleTimeout, 60*time.Second)
	def(&c.RelayBufferBytes, 16<<10)
	def(&c.MaxConnsPerAddr, 100)
	def(&c.MaxRoomsPerAddr, 50)
	deff(&c.AddrRatePerSec, 100)
	def(&c.AddrRateBurst, 200)
	deff(&c.FailedJoinRate, 0.2)
	def(&c.FailedJoinBurst, 10)
	def(&c.MaxHandshakesPerAddr, 16)
	defd(&c.HandshakeTimeout, 5*time.Second)
	def(&c.IPv6PrefixLen, 64)
	defd(&c.CredentialTTL, 12*time.Hour)
	defd(&c.RejoinGrace, 30*time.Second)
	if c.ClientIPHeader == "" {
		c.ClientIPHeader = "X-Forwarded-For"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxMessageBytes < 256 {
		return c, fmt.Errorf("signaling: invalid config: MaxMessageBytes %d is below 256", c.MaxMessageBytes)
	}
	if c.IPv4Prefixes == nil {
		c.IPv4Prefixes = []PrefixLimit{{Bits: 24, Factor: 10}}
	}
	if c.IPv6Prefixes == nil {
		c.IPv6Prefixes = []PrefixLimit{}
		for _, p := range []PrefixLimit{{Bits: 56, Factor: 4}, {Bits: 48, Factor: 10}} {
			if p.Bits < c.IPv6PrefixLen {
				c.IPv6Prefixes = append(c.IPv6Prefixes, p)
			}
		}
	}
	for _, p := range c.IPv4Prefixes {
		if p.Bits < 0 || p.Bits >= 32 || !(p.Factor >= 1) {
			return c, fmt.Errorf("signaling: invalid config: IPv4 prefix limit %+v: want 0 ≤ Bits < 32 and Factor ≥ 1", p)
		}
	}
	for _, p := range c.IPv6Prefixes {
		if p.Bits < 0 || p.Bits >= c.IPv6PrefixLen || !(p.Factor >= 1) {
			return c, fmt.Errorf("signaling: invalid config: IPv6 prefix limit %+v: want 0 ≤ Bits < IPv6PrefixLen (%d) and Factor ≥ 1", p, c.IPv6PrefixLen)
		}
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		return c, fmt.Errorf("signaling: invalid config: MetricsToken is %d bytes, want at least 16", len(c.MetricsToken))
	}
	if c.IPv6PrefixLen > 128 {
		return c, fmt.Errorf("signaling: invalid config: IPv6PrefixLen %d is over 128", c.IPv6PrefixLen)
	}
	if c.Secret == nil {
		c.Secret = make([]byte, 32)
		if _, err := rand.Read(c.Secret); err != nil {
			return c, fmt.Errorf("signaling: generating a secret: %w", err)
		}
	} else if len(c.Secret) < 16 {
		return c, fmt.Errorf("signaling: invalid config: Secret is %d bytes, want at least 16", len(c.Secret))
	}
	for _, p := range c.TrustedProxies {
		if !p.IsValid() {
			return c, fmt.Errorf("signaling: invalid config: trusted proxy prefix %v", p)
		}
	}
	if c.TURN != nil {
		if err := c.TURN.validate(); err != nil {
			return c, err
		}
	}
	if err := c.NATS.validate(); err != nil {
		return c, err
	}
	return c, nil
}

// Stats are the server's counters, served as JSON at /healthz.
type Stats struct {
	Status          string `json:"status"` // "ok" or "shutting_down"
	Version         int    `json:"version"`
	Clients         int    `json:"clients"`          // open WebSocket connections
	Rooms           int    `json:"rooms"`            // rooms with one or two players
	Queued          int    `json:"queued"`           // players waiting for quick match
	Pairings        uint64 `json:"pairings"`         // pairings made since start
	Relayed         uint64 `json:"relayed"`          // offers, answers and candidates relayed
	Errors          uint64 `json:"errors"`           // error messages sent to clients
	Rejected        uint64 `json:"rejected"`         // connections refused (server_full, version, shutdown)
	RelaysActive    int    `json:"relays_active"`    // relay streams now open
	Relays          uint64 `json:"relays"`           // relay streams established since start
	RelayBytes      uint64 `json:"relay_bytes"`      // bytes carried by relay streams
	RelaysRefused   uint64 `json:"relays_refused"`   // relay requests refused
	ConnsTotal      uint64 `json:"conns_total"`      // WebSocket connections accepted since start
	IdleTimeouts    uint64 `json:"idle_timeouts"`    // connections closed for idleness
	LimitViolations uint64 `json:"limit_violations"` // oversize, rate and slow-consumer closes
	RateLimited     uint64 `json:"rate_limited"`     // messages dropped by the rate limit
	// NATS is the cluster's health as this node sees it: connected,
	// routes, JetStream ready (server "local" for a single server).
	NATS *NATSStats `json:"nats,omitempty"`
}

// Server is the signaling server and TCP relay. It is an http.Handler
// (routes /ws, /relay, /healthz, /metrics); Serve and ListenAndServe run it
// on a listener of its own, with the per-address handshake limits. Create
// it with New.
type Server struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
	lim *addrLimiter
	met *metrics
	trn *turnServer // nil without TURN
	cl  *cluster    // the backbone side (cluster.go)

	instance     uint64 // this process's id in relay tokens
	tokenKey     []byte // relay token HMAC key
	seatKeyKey   []byte // derives seat keys from relay tokens
	challengeKey []byte // signs raw relay challenges

	chalMu         sync.Mutex
	usedChallenges map[string]time.Time // raw relay challenges answered, for relayChallengeTTL

	mu         sync.Mutex
	clients    map[*client]struct{}
	byID       map[uint64]*client   // local clients by id, for messages from other nodes
	proxies    map[proxyKey]*client // other nodes' clients in this node's rooms and queue
	reserved   int                  // connections being accepted
	rooms      map[signaling.RoomCode]*room
	queue      []*client
	rendezvous map[relayKey]*relayRendezvous
	relays     map[*relayStream]struct{} // established streams
	closing    bool
	shutdownCh chan struct{}
	https      []*http.Server
	nextID     uint64

	wsWG     sync.WaitGroup
	relayWG  sync.WaitGroup
	refusing atomic.Int32 // connections being refused by a trackListener

	pairings, relayed, errorsSent, rejected       atomic.Uint64
	relaysTotal, relayBytes, relaysRefused, conns atomic.Uint64
	idleTimeouts, limitViolations, rateLimited    atomic.Uint64
	delayed                                       atomic.Uint64 // messages held back by their address's rate

	feeds feedHub // the spectator feed (feed.go)
}

type room struct {
	code    signaling.RoomCode
	players [2]*client // [0] is the offerer; [0] is never nil while the room exists
	quick   bool
	holder  *addrState // the address charged for the room: its first player's (who created it, or waited in the queue)
	pairing uint64     // the current pairing's id, 0 while not paired
	// instance is the server instance the pairing's relay tokens name:
	// this one's, or a previous one's for a pairing rejoined after a
	// restart.
	instance uint64
	since    time.Time // when the offerer started waiting
	// away marks a paired player's place kept for RejoinGrace after its
	// connection ended (players[i] is then nil); expire ends it.
	away   [2]bool
	expire [2]*time.Timer
	// cands are each player's candidate addresses in this pairing, the
	// peers the other player's TURN allocations may reach.
	cands [2][]netip.AddrPort
	// rev is the revision of the room's key in the rooms bucket, once
	// registered (0 before).
	rev uint64
}

// full reports whether the room has no place for a new player.
func (r *room) full() bool {
	return r.players[1] != nil || r.away[0] || r.away[1]
}

// present reports whether both players are connected.
func (r *room) present() bool { return r.players[0] != nil && r.players[1] != nil }

// New returns a server with cfg's limits. With cfg.TURN set it
// starts the TURN server; Shutdown stops it.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:          cfg,
		log:          cfg.Logger,
		instance:     randUint64(),
		tokenKey:     deriveKey(cfg.Secret, "ragsync relay token v1"),
		seatKeyKey:   deriveKey(cfg.Secret, "ragsync seat key v1"),
		challengeKey: deriveKey(cfg.Secret, "ragsync relay challenge v1"),
		clients:      make(map[*client]struct{}),
		byID:         make(map[uint64]*client),
		proxies:      make(map[proxyKey]*client),
		rooms:        make(map[signaling.RoomCode]*room),
		rendezvous:   make(map[relayKey]*relayRendezvous),
		relays:       make(map[*relayStream]struct{}),
		shutdownCh:   make(chan struct{}),
	}
	s.cfg.shareLimits(natsNodes(cfg.NATS))
	s.lim = newAddrLimiter(&s.cfg)
	if s.cl, err = startCluster(s, cfg.NATS); err != nil {
		return nil, err
	}
	s.met = newMetrics(s)
	if cfg.TURN != nil {
		if s.trn, err = startTURN(s, cfg.TURN); err != nil {
			s.cl.close()
			return nil, err
		}
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/ws", s.handleWS)
	s.mux.HandleFunc("/relay", s.handleRelay)
	s.mux.HandleFunc("/feed", s.handleFeed)
	s.mux.HandleFunc("/healthz", s.handleHealth)
	if !cfg.HideMetrics {
		s.mux.Handle("/metrics", s.MetricsHandler())
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Site != nil {
			s.cfg.Site.ServeHTTP(w, r)
			return
		}
		writeHTTPError(w, http.StatusNotFound, &signaling.Error{Code: signaling.ErrBadMessage, Message: "no such endpoint " + truncate(r.URL.Path, 64) + " (use /ws, /relay, /healthz or /metrics)"})
	})
	return s, nil
}

// Config returns the configuration in force, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// ServeHTTP routes /ws, /relay, /healthz and /metrics, and the rest to
// Config.Site.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Serve accepts connections on l until Shutdown; it then returns
// http.ErrServerClosed. l may be a TLS listener (tls.NewListener).
func (s *Server) Serve(l net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.HandshakeTimeout,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		ConnContext:       withConn,
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		l.Close()
		return http.ErrServerClosed
	}
	s.https = append(s.https, hs)
	s.mu.Unlock()
	s.log.Info("signaling server listening", "addr", l.Addr().String())
	return hs.Serve(&trackListener{Listener: l, s: s})
}

// ListenAndServe listens on the TCP address addr and calls Serve.
func (s *Server) ListenAndServe(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("signaling: listen: %w", err)
	}
	return s.Serve(l)
}

// Shutdown stops the server gracefully: it stops accepting, sends every
// client a shutting_down error and closes its WebSocket with status 1001
// (going away), refuses waiting relay requests, stops the TURN server, and
// waits for open relay streams to finish. When ctx is done first it closes
// whatever is left and returns ctx.Err().
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	first := !s.closing
	if first {
		s.closing = true
		close(s.shutdownCh)
	}
	clients := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		clients = append(clients, c)
	}
	for _, r := range s.rooms {
		s.stopAway(r)
	}
	hss := s.https
	s.mu.Unlock()
	s.log.Info("signaling server shutting down", "clients", len(clients))

	for _, c := range clients {
		c.fatal(&signaling.Error{Code: signaling.ErrShuttingDown, Message: "server is shutting down; reconnect later"}, websocket.StatusGoingAway, "server shutting down")
	}
	var firstErr error
	if first && s.trn != nil {
		if err := s.trn.close(); err != nil {
			firstErr = fmt.Errorf("signaling: closing TURN: %w", err)
		}
	}
	for _, hs := range hss {
		if err := hs.Shutdown(ctx); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	done := make(chan struct{})
	go func() {
		s.wsWG.Wait()
		s.relayWG.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.clients {
			c.conn.CloseNow()
		}
		for p := range s.relays {
			p.closeConns()
		}
		s.mu.Unlock()
		<-done
		if firstErr == nil {
			firstErr = ctx.Err()
		}
	}
	if first {
		s.cl.close()
	}
	s.log.Info("signaling server stopped", "pairings", s.pairings.Load(), "relay_bytes", s.relayBytes.Load())
	return firstErr
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	st := Stats{
		Status:       "ok",
		Version:      signaling.ProtocolVersion,
		Clients:      len(s.clients),
		Rooms:        len(s.rooms),
		Queued:       len(s.queue),
		RelaysActive: len(s.relays),
	}
	if s.closing {
		st.Status = "shutting_down"
	}
	s.mu.Unlock()
	st.NATS = s.cl.stats()
	if st.Status == "ok" && !st.NATS.JetStream {
		st.Status = "starting"
	}
	st.Pairings = s.pairings.Load()
	st.Relayed = s.relayed.Load()
	st.Errors = s.errorsSent.Load()
	st.Rejected = s.rejected.Load()
	st.Relays = s.relaysTotal.Load()
	st.RelayBytes = s.relayBytes.Load()
	st.RelaysRefused = s.relaysRefused.Load()
	st.ConnsTotal = s.conns.Load()
	st.IdleTimeouts = s.idleTimeouts.Load()
	st.LimitViolations = s.limitViolations.Load()
	st.RateLimited = s.rateLimited.Load()
	return st
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeHTTPError(w, http.StatusMethodNotAllowed, &signaling.Error{Code: signaling.ErrBadMessage, Message: "use GET"})
		return
	}
	st := s.Stats()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if st.Status != "ok" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(st)
}

// writeHTTPError answers a plain HTTP request with a JSON error message.
func writeHTTPError(w http.ResponseWriter, status int, e *signaling.Error) {
	b, _ := signaling.AppendMessage(nil, errMessage(e))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	addr, aerr := s.clientAddr(r)
	if aerr != nil {
		s.rejected.Add(1)
		s.refusal(aerr.Code, reasonClient)
		writeHTTPError(w, http.StatusBadRequest, aerr)
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.rejected.Add(1)
		s.refusal(signaling.ErrShuttingDown, reasonShutdown)
		writeHTTPError(w, http.StatusServiceUnavailable, &signaling.Error{Code: signaling.ErrShuttingDown, Message: "server is shutting down; reconnect later"})
		return
	}
	var refuse *signaling.Error
	var as *addrState
	status := websocket.StatusTryAgainLater
	if v := r.URL.Query().Get("v"); v != fmt.Sprint(signaling.ProtocolVersion) {
		refuse = &signaling.Error{Code: signaling.ErrUnsupportedVersion, Message: fmt.Sprintf("protocol version %q not supported; this server speaks v=%d", truncate(v, 16), signaling.ProtocolVersion)}
		status = websocket.StatusProtocolError
	} else if oe := s.checkOrigin(r); oe != nil {
		refuse, status = oe, websocket.StatusPolicyViolation
	} else if st, ok := s.lim.reserveConn(addr); !ok {
		refuse = &signaling.Error{Code: signaling.ErrTooManyConns, Message: fmt.Sprintf("%s has its maximum of %d connections; close some first", st, st.limit(s.cfg.MaxConnsPerAddr))}
		status = websocket.StatusPolicyViolation
	} else if len(s.clients)+s.reserved >= s.cfg.MaxConns {
		s.lim.releaseConn(st)
		refuse = &signaling.Error{Code: signaling.ErrServerFull, Message: fmt.Sprintf("server has its maximum of %d connections; try again later", s.cfg.MaxConns)}
	} else {
		as = st
		s.reserved++
	}
	s.wsWG.Add(1)
	s.mu.Unlock()
	defer s.wsWG.Done()

	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		OriginPatterns:  s.cfg.OriginPatterns,
		CompressionMode: websocket.CompressionDisabled,
		// A page of another origin is refused by an error message
		// after the upgrade (checkOrigin), which a browser can read,
		// rather than by a 403 it shows only as close code 1006.
		InsecureSkipVerify: refuse != nil && refuse.Code == signaling.ErrOriginNotAllowed,
	})
	if err != nil {
		s.log.Debug("signaling: websocket accept failed", "remote", r.RemoteAddr, "err", err)
		if as != nil {
			s.mu.Lock()
			s.reserved--
			s.mu.Unlock()
			s.lim.releaseConn(as)
		}
		return
	}
	if refuse != nil {
		// The connection stays counted as a handshake until it is closed.
		s.rejectConn(conn, refuse, status, r.RemoteAddr)
		return
	}
	establishedConn(r)
	c := s.newClient(conn, r.RemoteAddr, as)
	s.mu.Lock()
	s.reserved--
	if s.closing {
		s.mu.Unlock()
		s.lim.releaseConn(as)
		s.rejectConn(conn, &signaling.Error{Code: signaling.ErrShuttingDown, Message: "server is shutting down; reconnect later"}, websocket.StatusGoingAway, r.RemoteAddr)
		return
	}
	s.clients[c] = struct{}{}
	s.byID[c.id] = c
	s.mu.Unlock()
	s.conns.Add(1)
	c.run()
}

func (s *Server) rejectConn(conn *websocket.Conn, e *signaling.Error, status websocket.StatusCode, remote string) {
	s.rejected.Add(1)
	s.errorsSent.Add(1)
	s.refusal(e.Code, defaultReason(e.Code))
	s.log.Debug("signaling: connection refused", "remote", remote, "code", e.Code)
	b, _ := signaling.AppendMessage(nil, errMessage(e))
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	err := conn.Write(ctx, websocket.MessageText, b)
	cancel()
	if err != nil {
		conn.CloseNow()
		return
	}
	conn.Close(status, string(e.Code))
}

// handle processes one valid client message, read at t0.
func (s *Server) handle(c *client, m *signaling.Message, t0 time.Time) {
	if m.Type == signaling.TypePing {
		c.send(&signaling.Message{Type: signaling.TypePong})
		return
	}
	if c.remote == nil && s.route(c, m) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dispatch(c, m, t0, false)
}

// dispatch handles m for c (a local client, or another node's client's
// proxy). verified: a rejoin's proof was checked by the client's node.
// Called with s.mu held.
func (s *Server) dispatch(c *client, m *signaling.Message, t0 time.Time, verified bool) {
	switch m.Type {
	case signaling.TypeCreate:
		s.handleCreate(c, earlyOffer{m.SDP, m.Spare})
	case signaling.TypeJoin:
		s.handleJoin(c, m.Room, m.Create, earlyOffer{m.SDP, m.Spare}, t0)
	case signaling.TypeQuick:
		s.handleQuick(c, earlyOffer{m.SDP, m.Spare}, t0)
	case signaling.TypeLeave:
		s.handleLeave(c)
	case signaling.TypeRejoin:
		s.handleRejoin(c, m.Token, m.Proof, verified)
	case signaling.TypeICEServers:
		s.handleICEServers(c)
	case signaling.TypeOffer, signaling.TypeAnswer, signaling.TypeCandidate:
		s.handleSignal(c, m)
	}
}

func (c *client) where() string {
	switch {
	case c.room != nil:
		return "in room " + string(c.room.code)
	case c.queued:
		return "in the quick-match queue"
	}
	return "nowhere"
}

// Called with s.mu held.
func (s *Server) busy(c *client, ref signaling.MsgType) bool {
	if c.room == nil && !c.queued {
		return false
	}
	c.sendError(&signaling.Error{Code: signaling.ErrWrongState, Message: fmt.Sprintf("you are already %s; send leave first", c.where()), Ref: ref})
	return true
}

// roomQuota reserves one room (or queue place) for c's address, or
// reports too_many_rooms to c. Called with s.mu held.
func (s *Server) roomQuota(c *client, ref signaling.MsgType) bool {
	if s.lim.reserveRoom(c.addr) {
		return true
	}
	c.sendLimit(&signaling.Error{Code: signaling.ErrTooManyRooms, Message: fmt.Sprintf("your address holds its maximum of %d rooms and quick-match places (or its network holds its share); leave one first", s.cfg.MaxRoomsPerAddr), Ref: ref}, reasonPerAddress)
	return false
}

// newRoom makes a room with the given code, or a fresh random one if code
// is empty, or reports too_many_rooms to c. Called with s.mu held; code
// must not be in use.
func (s *Server) newRoom(c *client, ref signaling.MsgType, code signaling.RoomCode) *room {
	if len(s.rooms) >= s.cfg.MaxRooms {
		c.sendError(&signaling.Error{Code: signaling.ErrTooManyRooms, Message: fmt.Sprintf("server has its maximum of %d rooms; try again later", s.cfg.MaxRooms), Ref: ref})
		return nil
	}
	for code == "" || s.rooms[code] != nil {
		code = newRoomCode()
	}
	r := &room{code: code, since: time.Now(), instance: s.instance}
	s.rooms[code] = r
	s.register(r)
	return r
}

func (s *Server) handleCreate(c *client, offer earlyOffer) {
	if s.busy(c, signaling.TypeCreate) {
		return
	}
	s.createRoom(c, signaling.TypeCreate, "", offer)
}

// createRoom makes a room (code "" for a random one) with c as its first
// player, the offerer, holding its early offer (if any) for the pairing.
// Called with s.mu held.
func (s *Server) createRoom(c *client, ref signaling.MsgType, code signaling.RoomCode, offer earlyOffer) {
	if !s.roomQuota(c, ref) {
		if code != "" {
			s.cl.releaseLater(string(code))
		}
		return
	}
	r := s.newRoom(c, ref, code)
	if r == nil {
		s.lim.moveRoom(c.addr, nil)
		if code != "" {
			s.cl.releaseLater(string(code))
		}
		return
	}
	r.players[0] = c
	r.holder = c.addr
	c.room = r
	c.offer = offer
	c.send(&signaling.Message{Type: signaling.TypeJoined, Room: r.code, Role: signaling.RoleOfferer})
	s.log.Info("signaling: room created", "room", r.code, "client", c.id, "chosen_code", code != "")
}

// handleJoin joins c to the room code (or creates it, with create). The
// room's creator is the offerer, unless only the joiner brought an early
// offer (see the package doc, Roles).
func (s *Server) handleJoin(c *client, code signaling.RoomCode, create bool, offer earlyOffer, t0 time.Time) {
	if s.busy(c, signaling.TypeJoin) {
		return
	}
	// A join that misses tells the sender a code is not in use (or full):
	// each costs a token of the address's failed-join bucket, and with
	// none left the room is not even looked up.
	if ok, wait := s.lim.canGuess(c.addr); !ok {
		c.sendLimit(&signaling.Error{Code: signaling.ErrTooManyFailedJoins, Message: fmt.Sprintf("your address (or its network) made too many joins that found no room, or a full one (%d, then one per %.3gs per address); try again in %v", s.cfg.FailedJoinBurst, 1/s.cfg.FailedJoinRate, wait.Round(100*time.Millisecond)), Ref: signaling.TypeJoin}, reasonPerAddress)
		return
	}
	r := s.rooms[code]
	switch {
	case r == nil && create:
		s.lim.missed(c.addr)
		s.createRoom(c, signaling.TypeJoin, code, offer)
		return
	case r == nil:
		s.lim.missed(c.addr)
		c.sendError(&signaling.Error{Code: signaling.ErrRoomNotFound, Message: fmt.Sprintf("no room %s (codes are case-insensitive; the room ends when its players leave)", code), Ref: signaling.TypeJoin})
		return
	case r.full():
		s.lim.missed(c.addr)
		c.sendError(&signaling.Error{Code: signaling.ErrRoomFull, Message: fmt.Sprintf("room %s already has two players", code), Ref: signaling.TypeJoin})
		return
	}
	r.players = offererFirst(r.players[0], c, offer)
	c.room = r
	role := signaling.RoleAnswerer
	if r.players[0] == c {
		role = signaling.RoleOfferer
	}
	c.send(&signaling.Message{Type: signaling.TypeJoined, Room: r.code, Role: role})
	s.pair(r, t0)
}

// earlyOffer is an early offer from create, join or quick: its SDP ("":
// none) and whether it is spare (it yields to the other player's).
type earlyOffer struct {
	sdp   string
	spare bool
}

// offererFirst orders the two players of a pairing, the offerer first:
// first (who waited in the queue or created the room), unless second
// brought an early offer (offer) and first none, or second's is not spare
// and first's is; then second, keeping its offer for the pairing (see the
// package doc, Roles).
func offererFirst(first, second *client, offer earlyOffer) [2]*client {
	if offer.sdp != "" && (first.offer.sdp == "" || first.offer.spare && !offer.spare) {
		second.offer = offer
		return [2]*client{second, first}
	}
	return [2]*client{first, second}
}

// handleQuick queues c, or pairs it with the player waiting. The offerer
// is the waiting player, unless only c brought an early offer: then c is
// (see the package doc, Roles).
func (s *Server) handleQuick(c *client, offer earlyOffer, t0 time.Time) {
	if s.busy(c, signaling.TypeQuick) {
		return
	}
	if len(s.queue) == 0 {
		// The queue place turns into the room when a second player comes.
		if !s.roomQuota(c, signaling.TypeQuick) {
			return
		}
		s.queue = append(s.queue, c)
		c.queued = true
		c.queuedAt = time.Now()
		c.offer = offer
		c.send(&signaling.Message{Type: signaling.TypeQueued})
		return
	}
	r := s.newRoom(c, signaling.TypeQuick, "")
	if r == nil {
		return
	}
	w := s.queue[0]
	s.queue[0] = nil
	s.queue = s.queue[1:]
	w.queued = false
	r.quick = true
	r.holder = w.addr // its queue place was charged to it
	r.since = w.queuedAt
	r.players = offererFirst(w, c, offer)
	w.room, c.room = r, r
	c.send(&signaling.Message{Type: signaling.TypeQueued})
	s.pair(r, t0)
}

// pair starts a pairing: a pairing id, relay tokens and TURN credentials,
// and tells both players. t0 is when the request that completed it was
// read. Called with s.mu held.
func (s *Server) pair(r *room, t0 time.Time) {
	if r.pairing == 0 {
		r.cands = [2][]netip.AddrPort{}
	}
	for r.pairing == 0 {
		r.pairing = randUint64()
	}
	kind := "code"
	if r.quick {
		kind = "quick"
	}
	s.pairings.Add(1)
	s.met.pairings.With(kind).Inc()
	s.met.pairingWait.With(kind).Observe(time.Since(r.since).Seconds())
	expiry := s.cfg.Now().Add(s.cfg.CredentialTTL)
	for i, pl := range r.players {
		role := signaling.RoleOfferer
		if i == 1 {
			role = signaling.RoleAnswerer
		}
		tok := mintRelayToken(s.tokenKey, relayClaims{instance: r.instance, pairing: r.pairing, room: r.code, side: i, expiry: expiry})
		m := &signaling.Message{Type: signaling.TypePaired, Room: r.code, Role: role, Token: tok, Key: s.seatKey(string(tok))}
		if s.trn != nil {
			m.ICE = s.trn.credentials(turnUserID(r.code, r.pairing, i), s.cfg.Now().Add(s.trn.ttl))
		}
		pl.sendTimed(m, t0)
	}
	// The offerer's early offer goes to the answerer right after paired,
	// as if the offerer had sent it then. Each is used once.
	if off := r.players[0].offer.sdp; off != "" {
		r.noteCandidates(0, off, nil)
		r.players[1].send(&signaling.Message{Type: signaling.TypeOffer, SDP: off})
		s.relayed.Add(1)
	}
	early := r.players[0].offer.sdp != ""
	r.players[0].offer, r.players[1].offer = earlyOffer{}, earlyOffer{}
	s.log.Info("signaling: paired", "room", r.code, "quick", r.quick, "offerer", r.players[0].id, "answerer", r.players[1].id, "early_offer", early)
}

func (s *Server) handleLeave(c *client) {
	switch {
	case c.queued:
		s.dequeue(c)
		c.send(&signaling.Message{Type: signaling.TypeLeft})
	case c.room != nil:
		code := c.room.code
		s.leaveRoom(c, "left")
		c.send(&signaling.Message{Type: signaling.TypeLeft, Room: code})
	default:
		c.sendError(&signaling.Error{Code: signaling.ErrWrongState, Message: "you are not in a room or the queue", Ref: signaling.TypeLeave})
	}
}

func (s *Server) dequeue(c *client) {
	for i, q := range s.queue {
		if q == c {
			copy(s.queue[i:], s.queue[i+1:])
			s.queue[len(s.queue)-1] = nil
			s.queue = s.queue[:len(s.queue)-1]
			break
		}
	}
	c.queued = false
	s.lim.moveRoom(c.addr, nil)
}

// leaveRoom removes c from its room; the other player, if any, becomes the
// offerer of the half-empty room. The pairing ends: its relay tokens are
// no longer accepted here (an established stream lives on). Called with
// s.mu held.
func (s *Server) leaveRoom(c *client, reason string) {
	r := c.room
	c.room = nil
	if r.pairing != 0 {
		s.endPairing(relayKey{r.instance, r.pairing})
		r.pairing = 0
	}
	other := r.players[0]
	if other == c {
		other = r.players[1]
	}
	s.stopAway(r)
	r.players = [2]*client{other, nil}
	if other == nil {
		delete(s.rooms, r.code)
		s.roomClosed(r)
		s.lim.moveRoom(r.holder, nil)
		s.log.Info("signaling: room closed", "room", r.code)
		return
	}
	s.lim.moveRoom(r.holder, other.addr)
	r.holder = other.addr
	r.since = time.Now()
	other.send(&signaling.Message{Type: signaling.TypePeerLeft, Room: r.code, Reason: reason})
	s.log.Info("signaling: player left", "room", r.code, "client", c.id, "reason", reason)
}

func (s *Server) handleSignal(c *client, m *signaling.Message) {
	r := c.room
	if r != nil && r.pairing != 0 && !r.present() {
		c.sendError(&signaling.Error{Code: signaling.ErrWrongState, Message: fmt.Sprintf("cannot send %s: the other player's connection dropped; wait for paired when it is back", m.Type), Ref: m.Type})
		return
	}
	if m.Type == signaling.TypeOffer && (c.queued || r != nil && r.players[1] == nil) {
		// A late early offer: kept for the pairing as if it had come
		// with the join (see the package doc, Early offers).
		c.offer = earlyOffer{sdp: m.SDP}
		return
	}
	if r == nil || r.players[1] == nil {
		c.sendError(&signaling.Error{Code: signaling.ErrWrongState, Message: fmt.Sprintf("cannot send %s: not paired yet (you are %s); wait for paired", m.Type, c.where()), Ref: m.Type})
		return
	}
	idx := 0
	if r.players[1] == c {
		idx = 1
	}
	switch {
	case m.Type == signaling.TypeOffer && idx != 0:
		c.sendError(&signaling.Error{Code: signaling.ErrWrongState, Message: "only the offerer sends offers; you are the answerer", Ref: m.Type})
		return
	case m.Type == signaling.TypeAnswer && idx != 1:
		c.sendError(&signaling.Error{Code: signaling.ErrWrongState, Message: "only the answerer sends answers; you are the offerer", Ref: m.Type})
		return
	}
	r.noteCandidates(idx, m.SDP, m.Candidate)
	// Re-encode only the fields of this type, so nothing else is forwarded.
	r.players[1-idx].send(&signaling.Message{Type: m.Type, SDP: m.SDP, Candidate: m.Candidate})
	s.relayed.Add(1)
}

// removeClient is the cleanup when a connection ends.
func (s *Server) removeClient(c *client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.away != "" {
		s.cl.publish(c.away, &envelope{K: kindGone, N: s.cl.id, ID: c.id, V: !s.closing && (c.closedNormally || c.closing.Load())})
		c.away = ""
	}
	s.leaveAll(c)
	delete(s.clients, c)
	delete(s.byID, c.id)
	s.lim.releaseConn(c.addr)
}

// leaveAll takes c out of the queue and its room when its connection
// ended. Called with s.mu held.
func (s *Server) leaveAll(c *client) {
	if c.queued {
		s.dequeue(c)
	}
	if s.closing {
		// The server is going away, with every connection: nobody is
		// told the other left (their pairing goes on with its tokens,
		// on a restarted server too).
		c.room = nil
	}
	if c.room != nil {
		// A connection that just ended (not closed by the client, nor by
		// the server for a limit) keeps its paired player's place.
		if r := c.room; r.pairing != 0 && !s.closing && !c.closedNormally && !c.closing.Load() {
			s.dropPlayer(c)
		} else {
			s.leaveRoom(c, "disconnected")
		}
	}
}

// dropPlayer keeps the place of a paired player whose connection ended
// without a leave for RejoinGrace, and tells the other player at once
// (peer_left "dropped"). Called with s.mu held.
func (s *Server) dropPlayer(c *client) {
	r := c.room
	c.room = nil
	side := 0
	if r.players[1] == c {
		side = 1
	}
	r.players[side] = nil
	s.keepPlace(r, side)
	if other := r.players[1-side]; other != nil {
		other.send(&signaling.Message{Type: signaling.TypePeerLeft, Room: r.code, Reason: "dropped"})
	}
	s.log.Info("signaling: paired player dropped; place kept", "room", r.code, "client", c.id, "grace", s.cfg.RejoinGrace)
}

// keepPlace marks place side of r as kept for a player who may rejoin,
// until RejoinGrace runs out. Called with s.mu held.
func (s *Server) keepPlace(r *room, side int) {
	r.away[side] = true
	if t := r.expire[side]; t != nil {
		t.Stop()
	}
	r.expire[side] = time.AfterFunc(s.cfg.RejoinGrace, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.placeExpired(r, side)
	})
}

// stopAway forgets r's kept places. Called with s.mu held.
func (s *Server) stopAway(r *room) {
	for i := range r.away {
		r.away[i] = false
		if t := r.expire[i]; t != nil {
			t.Stop()
			r.expire[i] = nil
		}
	}
}

// placeExpired ends the pairing of a room whose player did not come back
// within RejoinGrace: the other player, if there, is told it left
// (peer_left "disconnected") and waits as the offerer of a half-empty
// room, as after a leave. Called with s.mu held.
func (s *Server) placeExpired(r *room, side int) {
	if s.rooms[r.code] != r || !r.away[side] {
		return
	}
	r.away[side] = false
	r.expire[side] = nil
	if r.pairing != 0 {
		s.endPairing(relayKey{r.instance, r.pairing})
		r.pairing = 0
	}
	other := r.players[1-side]
	s.stopAway(r)
	if other == nil {
		delete(s.rooms, r.code)
		s.roomClosed(r)
		s.lim.moveRoom(r.holder, nil)
		s.log.Info("signaling: room closed; no player came back", "room", r.code)
		return
	}
	r.players = [2]*client{other, nil}
	s.lim.moveRoom(r.holder, other.addr)
	r.holder = other.addr
	r.since = time.Now()
	other.send(&signaling.Message{Type: signaling.TypePeerLeft, Room: r.code, Reason: "disconnected"})
	s.log.Info("signaling: dropped player did not come back", "room", r.code, "grace", s.cfg.RejoinGrace)
}

// handleRejoin puts c back in the place its relay token names: in the
// room of a pairing this server made whose player dropped (or whose
// connection the server still holds: that one is closed), or, for a
// pairing of a previous server instance with the same secret, in a room
// made again with the token's code, keeping the other place for
// RejoinGrace. Once both players are there, both get paired again.
// Called with s.mu held.
func (s *Server) handleRejoin(c *client, tok signaling.RelayToken, proof string, verified bool) {
	if s.busy(c, signaling.TypeRejoin) {
		return
	}
	if perr := s.checkProof(tok, wire.ProofRejoin, c.challenge, proof); perr != nil && !verified {
		perr.Ref = signaling.TypeRejoin
		c.sendError(perr)
		return
	}
	cl, terr := verifyRelayToken(s.tokenKey, tok, s.cfg.Now())
	if terr != nil {
		terr.Ref = signaling.TypeRejoin
		c.sendError(terr)
		return
	}
	side := cl.side
	r := s.rooms[cl.room]
	switch {
	case r != nil && r.pairing == cl.pairing && r.instance == cl.instance:
		if old := r.players[side]; old != nil && old != c {
			// The same player on a connection the server has not seen
			// drop yet: the newer one wins.
			old.room = nil
			r.players[side] = nil
			old.fatal(&signaling.Error{Code: signaling.ErrTokenUsed, Message: "your place was taken back by a newer connection with your token"}, websocket.StatusPolicyViolation, "replaced")
		}
		if t := r.expire[side]; t != nil {
			t.Stop()
			r.expire[side] = nil
		}
		r.away[side] = false
	case r == nil && cl.instance != s.instance:
		if !s.roomQuota(c, signaling.TypeRejoin) {
			return
		}
		if r = s.newRoom(c, signaling.TypeRejoin, cl.room); r == nil {
			s.lim.moveRoom(c.addr, nil)
			return
		}
		r.pairing, r.instance, r.holder = cl.pairing, cl.instance, c.addr
		s.keepPlace(r, 1-side)
	default:
		c.sendError(&signaling.Error{Code: signaling.ErrBadToken, Message: fmt.Sprintf("the pairing in room %s has ended; pair again", cl.room), Ref: signaling.TypeRejoin})
		return
	}
	r.players[side] = c
	c.room = r
	role := signaling.RoleOfferer
	if side == 1 {
		role = signaling.RoleAnswerer
	}
	c.send(&signaling.Message{Type: signaling.TypeJoined, Room: r.code, Role: role})
	s.log.Info("signaling: player rejoined", "room", r.code, "client", c.id, "role", role)
	if r.present() {
		s.pair(r, time.Now())
	}
}

// newRoomCode returns a random room code.
func newRoomCode() signaling.RoomCode {
	var b [signaling.RoomCodeLen]byte
	// 256 is a multiple of 32, so b%32 is unbiased.
	if _, err := rand.Read(b[:]); err != nil {
		panic("signaling: crypto/rand failed: " + err.Error())
	}
	for i := range b {
		b[i] = signaling.RoomCodeAlphabet[b[i]%32]
	}
	return signaling.RoomCode(b[:])
}

func truncate(s string, n int) string { return wire.Truncate(s, n) }

const (
	maxICEURLs     = wire.MaxICEURLs
	maxICEFieldLen = wire.MaxICEFieldLen
)
