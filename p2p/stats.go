package p2p

import (
	"fmt"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/signaling"
)

// LinkState is the state of one transport.
type LinkState uint8

const (
	LinkUnknown    LinkState = 0
	LinkDisabled   LinkState = 1 // turned off in Config
	LinkConnecting LinkState = 2 // negotiating / dialling
	LinkUp         LinkState = 3 // open
	LinkDown       LinkState = 4 // failed to connect, or died; see LinkStats.Err
)

// String returns the state's name.
func (s LinkState) String() string {
	switch s {
	case LinkDisabled:
		return "disabled"
	case LinkConnecting:
		return "connecting"
	case LinkUp:
		return "up"
	case LinkDown:
		return "down"
	case LinkUnknown:
		return "unknown"
	}
	return fmt.Sprintf("LinkState(%d)", uint8(s))
}

// LinkStats describes one transport.
type LinkStats struct {
	Kind  TransportKind
	State LinkState
	// Healthy: open, and pings on it are answered (for the active
	// transport: within Config.FailoverAfter).
	Healthy bool
	Err     string // why it is down, if it is

	// Probe holds the initial three probe round trips (0 = lost), ProbeMax
	// their maximum (the figure the initial choice compares; a lost probe
	// counts as Config.ProbeTimeout) and ProbeLost how many were lost. Zero if the
	// transport was not up when the session chose.
	Probe     [3]time.Duration
	ProbeMax  time.Duration
	ProbeLost int
	// Last3Max is the maximum of the last three ping round trips: the
	// figure that mid-session switching compares.
	Last3Max time.Duration

	// RTT: the round trips of this transport's pings (clocksync's
	// samples), smoothed, and their quantiles over the last 10 s.
	RTT       clocksync.RTTStats
	Jitter    time.Duration // peer → us, RFC 3550 over ping/pong timestamps
	JitterOut time.Duration // us → peer

	PingsSent     uint64
	PongsReceived uint64
	RxPackets     uint64 // session messages received on this transport
	TxPackets     uint64 // session messages sent on this transport
	RxBytes       uint64
	TxBytes       uint64
	SinceLastRecv time.Duration // -1 if nothing was ever received
}

// Stats is a snapshot of a session's link statistics. Session.Stats fills
// it without allocating; reading it every frame is fine.
type Stats struct {
	State     ConnState
	Role      signaling.Role
	Transport TransportKind // the active transport both peers agreed on
	// ChoiceReason says why Transport is active (the initial choice or the
	// last switch).
	ChoiceReason string
	Switches     int           // transport changes after the initial choice
	Uptime       time.Duration // since Connect returned
	// ConnectTime is how long the session took from the pairing (its
	// creation) to running on its first transport (zero until then).
	ConnectTime time.Duration
	// SinceLastRecv is the time since anything arrived from the peer on
	// any transport.
	SinceLastRecv time.Duration

	// RTT, Jitter and JitterOut are those of the active transport (see
	// LinkStats).
	RTT       clocksync.RTTStats
	Jitter    time.Duration
	JitterOut time.Duration

	// Data messages, from the per-session sequence numbers.
	Sent        uint64  // handed to a transport
	SendDropped uint64  // dropped by Send: transport busy or down, or superseded on TCP
	Received    uint64  // unique messages put in the receive queue
	Expected    uint64  // newest − first sequence number + 1
	Lost        uint64  // Expected − Received
	Loss        float64 // Lost / Expected since the start, 0..1
	LossRecent  float64 // over the last second, 0..1
	Duplicates  uint64  // dropped: already received
	Reordered   uint64  // arrived after a newer one (delivered)
	Late        uint64  // dropped: older than the duplicate window (1024 messages)
	// RecvOverflow counts messages dropped from the receive queue because
	// the game did not drain it (oldest first).
	RecvOverflow uint64
	// WebRTCRenewals counts the new PeerConnections negotiated after the
	// first, when the WebRTC path had failed (on the answerer: those the
	// offerer started).
	WebRTCRenewals uint64
	// SignalingReconnects counts the times the signaling connection
	// dropped and the session connected again and rejoined its pairing.
	SignalingReconnects uint64
	// SignalingLost: the signaling connection is down and the session is
	// connecting to the server again (a server restart, a network
	// outage). Meanwhile a silent peer is waited for up to 30 s (the
	// server's rejoin grace) instead of Config.DisconnectAfter: a
	// relay-only match has no path at all until the server is back.
	SignalingLost bool

	// Malformed counts packets that failed to decode (dropped).
	Malformed uint64
	// RelayRejected counts relay streams that ended, or never started,
	// because TLS refused them: a record that failed to authenticate (a
	// frame forged, altered or replayed on the way) or a peer certificate
	// that is not the one pinned. Each time, nothing of the stream was
	// accepted, and the relay is dialled again.
	RelayRejected uint64

	// Rates over the last second, all session messages (headers included)
	// on all transports.
	TxPacketsPerSec float64
	RxPacketsPerSec float64
	TxBytesPerSec   float64
	RxBytesPerSec   float64

	// PeerProtocolErrors counts the peer's clock messages that break the
	// protocol in a way only a faulty client can: a pong from the leader
	// without game time (the follower's clock could never sync), or a
	// leader flag that says the peer has this side's role. They are
	// refused; LastPeerProtocolError says what the last one was.
	PeerProtocolErrors    uint64
	LastPeerProtocolError string

	// RelayWebSocket: this side's relay stream goes over a WebSocket
	// (Config.RelayWebSocket; always in a browser), not a raw stream.
	RelayWebSocket bool

	// The WebRTC selected candidate pair's types (Relay = through TURN;
	// see WebRTCViaTURN). Unknown until a pair is selected.
	LocalCandidate  CandidateType
	RemoteCandidate CandidateType

	// Clock synchronisation (clocksync): the peer's clock minus ours, and
	// the estimate's uncertainty. ClockSynced when the estimate has
	// converged.
	ClockOffset      time.Duration
	ClockUncertainty time.Duration
	ClockSynced      bool

	WebRTC LinkStats
	TCP    LinkStats

	// EventsMerged counts events folded into later ones because the
	// Events channel was full (see Session.Events); EventsDropped those
	// that could not be (none in practice).
	EventsMerged  uint64
	EventsDropped uint64
}

// WebRTCViaTURN says whether the WebRTC path runs through a TURN server:
// either end of its selected candidate pair is a relay candidate. (Such a
// path is encrypted end to end like any other; the TURN server only sees
// DTLS records.)
func (s *Stats) WebRTCViaTURN() bool {
	return s.LocalCandidate == CandidateRelay || s.RemoteCandidate == CandidateRelay
}

// Link returns the statistics of transport k.
func (s *Stats) Link(k TransportKind) *LinkStats {
	if k == TransportTCP {
		return &s.TCP
	}
	return &s.WebRTC
}
