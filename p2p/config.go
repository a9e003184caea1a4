package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"runtime"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/p2p/internal/transport"
	"github.com/ragsync/ragsync/signaling"
)

// InterfacePolicy says which local network interfaces WebRTC gathers ICE
// candidates on. The zero value is InterfacesAuto.
type InterfacePolicy uint8

const (
	// InterfacesAuto: if the signaling URL's host is a loopback address
	// (127.0.0.0/8, ::1 or "localhost") and Config.Net is nil, both peers
	// are on this machine, so gather only loopback candidates (as
	// InterfacesLoopback); otherwise as InterfacesAll.
	InterfacesAuto InterfacePolicy = iota
	// InterfacesLoopback gathers only on loopback interfaces, with
	// loopback candidates enabled: traffic never leaves the machine.
	InterfacesLoopback
	// InterfacesAll gathers on every interface pion sees (loopback only if
	// Config.IncludeLoopback).
	InterfacesAll
)

// String returns the policy's name.
func (p InterfacePolicy) String() string {
	switch p {
	case InterfacesAuto:
		return "auto"
	case InterfacesLoopback:
		return "loopback"
	case InterfacesAll:
		return "all"
	}
	return fmt.Sprintf("InterfacePolicy(%d)", uint8(p))
}

// Config configures a session. The zero value is ready to use; every zero
// field means the default stated in its comment. Connect validates it and
// returns an error wrapping ErrBadConfig for out-of-range values.
type Config struct {
	// Signaling configures the signaling client (see signaling.ClientConfig).
	// Its Logger nil means Logger.
	Signaling signaling.ClientConfig
	// Resume, if set, is a seat token (Session.SeatToken of an earlier
	// session, maybe of a process that crashed): Connect then takes back
	// that seat in its match instead of joining a room, within the
	// server's RejoinGrace, and the session reports Resumed. It is a
	// secret: keep it like a password, never in logs or URLs. Empty: a
	// new seat. See Resuming a match in the package doc.
	Resume string

	// ---- WebRTC ----

	// DisableWebRTC makes the session use only the TCP relay.
	DisableWebRTC bool
	// ICEServers are STUN/TURN servers for NAT traversal. Nil means those
	// the signaling server hands out with the pairing (its embedded TURN
	// server, with per-pairing credentials; none if it runs no TURN):
	// without any, only host (and peer-reflexive) candidates are used,
	// which works on one machine and within a LAN. An empty, non-nil
	// slice means none at all.
	ICEServers []signaling.ICEServer
	// Net is the network pion uses (SettingEngine.SetNet; pion/transport/v5), e.g. a pion vnet
	// for tests. Nil means the real network.
	Net transport.Net
	// Interfaces is the candidate-gathering policy; see InterfacePolicy.
	Interfaces InterfacePolicy
	// InterfaceFilter, if set, replaces the policy's interface filter: only
	// interfaces for which it returns true are used.
	InterfaceFilter func(name string) bool
	// IncludeLoopback also gathers loopback candidates under InterfacesAll.
	IncludeLoopback bool
	// UDP4Only restricts ICE to UDP over IPv4.
	UDP4Only bool
	// WebRTCTimeout is how long to wait for the data channel to open before
	// settling on TCP. Zero means 5s. A connection that is getting there
	// (its answer applied, then ICE connected) has until WebRTCTimeout
	// after its latest step instead. Once the relay is open, the offerer
	// waits for WebRTC until a fifth of it (1 s) after the pairing at
	// most. WebRTC keeps trying in the
	// background (the offerer negotiates a new PeerConnection when one
	// fails, or has not connected within 10 s); when it opens and pings as
	// well, the session moves to it.
	WebRTCTimeout time.Duration
	// SendBuffer is the most bytes the WebRTC data channel may have queued
	// (SCTP buffered amount) before Send drops messages instead of queueing
	// more. Zero means 64 KiB.
	SendBuffer int

	// ---- TCP relay ----

	// DisableTCP makes the session use only WebRTC.
	DisableTCP bool
	// TCPTimeout bounds one attempt at dialling the relay, the peer
	// attaching to it and the TLS handshake. Zero means 10s. A relay that
	// fails or drops is dialled again, after 100 ms doubling up to 1 s.
	// With TCP preferred, once WebRTC is open the offerer waits for the
	// relay until a fifth of it (2 s) after the pairing at most.
	TCPTimeout time.Duration
	// RelayDialer, if set, opens the TCP connections to the relay (the
	// signaling server's address), e.g. through a proxy, or in tests an
	// in-memory or faulty network. Nil means the dialer of
	// Signaling.HTTPClient's transport when it is an *http.Transport with
	// DialContext set, else a net.Dialer.
	RelayDialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// RelayWebSocket reaches the relay over a WebSocket
	// (signaling.DialRelayWebSocket) instead of a raw stream after an HTTP
	// Upgrade. Always on in a browser (js/wasm), which can open no raw
	// stream; the server joins the two kinds, so either side may use
	// either. False: the raw stream.
	RelayWebSocket bool

	// ---- Transport choice and failover ----

	// Prefer, if set, is the transport to use whenever it works, regardless
	// of ping; the other one is then only a fallback. Zero means the lower
	// 3-probe ping wins (ties go to WebRTC), except that the session starts
	// on WebRTC as soon as its channel opens unless the relay is open and
	// answered a probe faster (see the package doc, Choosing the transport).
	Prefer TransportKind
	// ProbeTimeout is how long one probe ping may take before it counts as
	// lost. Zero means 1s.
	ProbeTimeout time.Duration
	// SwitchMargin: mid-session, the offerer moves to the other working
	// transport only if its 3-probe ping is lower by more than this (and
	// by more than 10%). Zero means 15ms: about a tick at 60 Hz, less than
	// a player feels and more than a busy machine's scheduling moves a
	// loopback ping (9.8 against 18.1 ms, seen beside two busy loops). It
	// stops flapping between two transports with similar pings. TCP must beat WebRTC by this margin,
	// in the initial choice and mid-session; closer pings are a tie, which
	// WebRTC wins (mid-session too: the session moves back to WebRTC when
	// it pings no worse than TCP by half the margin).
	SwitchMargin time.Duration
	// PingInterval is the interval of keepalive pings on the active
	// transport when the clock calibrator does not ping more often. Zero
	// means 100ms. It bounds how quickly a dead path is noticed.
	PingInterval time.Duration
	// StandbyPingInterval is the interval of pings on the inactive
	// transport, to know it still works. Zero means 500ms. While the
	// active transport has a ping outstanding for longer than
	// PingInterval, and for 3 s after a switch or the standby coming up,
	// the standby is pinged every PingInterval instead.
	StandbyPingInterval time.Duration
	// FailoverAfter: a ping unanswered for this long plus the path's
	// smoothed RTT counts against the path (unless a stall of this
	// process or a silence of every path explains it; see the package
	// doc); the session then leaves the active transport for the other if
	// that one answered a ping sent since. Zero means 300ms. It must be
	// less than InterruptAfter, so a failover normally happens before the
	// game sees an interruption.
	FailoverAfter time.Duration

	// ---- Liveness ----

	// InterruptAfter raises EventInterrupted when nothing at all has been
	// received for this long. Zero means 1s: a silence the player sees
	// (a rival standing still for a second), while the silences a match
	// shrugs off stay below it: a failover (FailoverAfter plus a round
	// trip), a GC pause, a Wi-Fi scan, or the peer's process frozen for
	// half a second, which the game's own extrapolation and correction
	// carry; a banner that flashes at each of them tells the player
	// nothing. Time this process itself stood still does not count.
	InterruptAfter time.Duration
	// DisconnectAfter ends the session with EventDisconnected when nothing
	// has been received for this long. Zero means 5s.
	DisconnectAfter time.Duration

	// ---- Data path ----

	// MaxMessageSize is the largest payload Send accepts; a longer data
	// message from the peer is dropped (Stats.Malformed), so both peers
	// should use the same. Zero means DefaultMaxMessageSize (1200 bytes).
	// At most MaxMessageSizeLimit.
	MaxMessageSize int
	// RecvQueue is how many received messages are kept for Poll; when
	// the game does not drain them, the oldest is dropped (counted in
	// Stats.RecvOverflow). Zero means 256.
	RecvQueue int
	// EventBuffer is the capacity of the Events channel. Zero means 64;
	// less than 8 means 8 (room for the merged transitions, see
	// Session.Events).
	EventBuffer int

	// ---- Clock ----

	// Clock is the local monotonic clock the session stamps pings with and
	// times everything by. Nil means the wall time at Connect advancing
	// monotonically, so the offset between two machines' clocks is their
	// real wall-clock difference.
	Clock clocksync.Clock
	// ClockSync configures the clock calibrator (pings, estimator, game
	// clock). Its Leader is ignored: the offerer is the clock leader, the
	// answerer follows.
	ClockSync clocksync.Config

	// Logger receives the session's logs (and pion's, at Debug level). Nil
	// discards them.
	Logger *slog.Logger
}

// MaxMessageSizeLimit is the largest allowed Config.MaxMessageSize.
const MaxMessageSizeLimit = 16 << 10

// ErrBadConfig is wrapped by configuration errors.
var ErrBadConfig = errors.New("p2p: bad config")

// DefaultMaxMessageSize is Config.MaxMessageSize's default: one SCTP
// packet on a typical path.
const DefaultMaxMessageSize = 1200

// Defaults of the other Config fields (documented there).
const (
	defaultWebRTCTimeout       = 5 * time.Second
	defaultSendBuffer          = 64 << 10
	defaultTCPTimeout          = 10 * time.Second
	defaultProbeTimeout        = time.Second
	defaultSwitchMargin        = 15 * time.Millisecond
	defaultPingInterval        = 100 * time.Millisecond
	defaultStandbyPingInterval = 500 * time.Millisecond
	defaultFailoverAfter       = 300 * time.Millisecond
	defaultInterruptAfter      = time.Second
	defaultDisconnectAfter     = 5 * time.Second
	defaultRecvQueue           = 256
	defaultEventBuffer         = 64
	minEventBuffer             = 8
)

func badConfig(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...)
}

// withDefaults fills in defaults and validates. signalingURL decides the
// InterfacesAuto policy.
func (c Config) withDefaults(signalingURL string) (Config, error) {
	durs := []struct {
		name string
		p    *time.Duration
		def  time.Duration
	}{
		{"WebRTCTimeout", &c.WebRTCTimeout, defaultWebRTCTimeout},
		{"TCPTimeout", &c.TCPTimeout, defaultTCPTimeout},
		{"ProbeTimeout", &c.ProbeTimeout, defaultProbeTimeout},
		{"SwitchMargin", &c.SwitchMargin, defaultSwitchMargin},
		{"PingInterval", &c.PingInterval, defaultPingInterval},
		{"StandbyPingInterval", &c.StandbyPingInterval, defaultStandbyPingInterval},
		{"FailoverAfter", &c.FailoverAfter, defaultFailoverAfter},
		{"InterruptAfter", &c.InterruptAfter, defaultInterruptAfter},
		{"DisconnectAfter", &c.DisconnectAfter, defaultDisconnectAfter},
	}
	for _, d := range durs {
		if *d.p < 0 {
			return c, badConfig("%s is negative (%v)", d.name, *d.p)
		}
		if *d.p == 0 {
			*d.p = d.def
		}
	}
	ints := []struct {
		name string
		p    *int
		def  int
	}{
		{"SendBuffer", &c.SendBuffer, defaultSendBuffer},
		{"MaxMessageSize", &c.MaxMessageSize, DefaultMaxMessageSize},
		{"RecvQueue", &c.RecvQueue, defaultRecvQueue},
		{"EventBuffer", &c.EventBuffer, defaultEventBuffer},
	}
	for _, d := range ints {
		if *d.p < 0 {
			return c, badConfig("%s is negative (%d)", d.name, *d.p)
		}
		if *d.p == 0 {
			*d.p = d.def
		}
	}
	switch {
	case c.DisableWebRTC && c.DisableTCP:
		return c, badConfig("both transports disabled")
	case c.MaxMessageSize > MaxMessageSizeLimit:
		return c, badConfig("MaxMessageSize %d exceeds %d", c.MaxMessageSize, MaxMessageSizeLimit)
	case c.RecvQueue > 1<<16:
		return c, badConfig("RecvQueue %d exceeds 65536", c.RecvQueue)
	case c.FailoverAfter >= c.InterruptAfter:
		return c, badConfig("FailoverAfter (%v) must be less than InterruptAfter (%v)", c.FailoverAfter, c.InterruptAfter)
	case c.InterruptAfter >= c.DisconnectAfter:
		return c, badConfig("InterruptAfter (%v) must be less than DisconnectAfter (%v)", c.InterruptAfter, c.DisconnectAfter)
	case c.PingInterval >= c.FailoverAfter:
		return c, badConfig("PingInterval (%v) must be less than FailoverAfter (%v)", c.PingInterval, c.FailoverAfter)
	case c.Prefer != TransportUnknown && c.Prefer != TransportWebRTC && c.Prefer != TransportTCP:
		return c, badConfig("Prefer is not a transport (%d)", c.Prefer)
	case c.Interfaces > InterfacesAll:
		return c, badConfig("unknown Interfaces policy %d", c.Interfaces)
	}
	if c.Interfaces == InterfacesAuto {
		c.Interfaces = InterfacesAll
		if c.Net == nil && isLoopbackURL(signalingURL) {
			c.Interfaces = InterfacesLoopback
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Signaling.Logger == nil {
		c.Signaling.Logger = c.Logger
	}
	if runtime.GOOS == "js" {
		c.RelayWebSocket = true
	}
	return c, nil
}

// isLoopbackURL reports whether the URL's host is "localhost" or a
// loopback IP.
func isLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}

// isLoopbackInterface reports whether the named interface is a loopback
// interface ("lo" on Linux, "lo0" on macOS).
func isLoopbackInterface(name string) bool {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return name == "lo" || name == "lo0"
	}
	return ifi.Flags&net.FlagLoopback != 0
}
