package p2p

import "fmt"

// TransportKind names one of the session's two transports. The zero value
// means "none / unknown".
type TransportKind uint8

const (
	TransportUnknown TransportKind = 0
	TransportWebRTC  TransportKind = 1 // unreliable, unordered SCTP data channel over ICE/DTLS
	TransportTCP     TransportKind = 2 // length-prefixed frames through the signaling server's relay
)

// String returns "webrtc", "tcp" or "none".
func (k TransportKind) String() string {
	switch k {
	case TransportWebRTC:
		return "webrtc"
	case TransportTCP:
		return "tcp"
	case TransportUnknown:
		return "none"
	default:
		return fmt.Sprintf("TransportKind(%d)", uint8(k))
	}
}

// other returns the other transport.
func (k TransportKind) other() TransportKind {
	switch k {
	case TransportWebRTC:
		return TransportTCP
	case TransportTCP:
		return TransportWebRTC
	}
	return TransportUnknown
}

// idx maps a valid kind to 0 (WebRTC) or 1 (TCP).
func (k TransportKind) idx() int { return int(k) - 1 }

// ConnState is the session's connection state as the game should show it.
type ConnState uint8

const (
	StateUnknown      ConnState = 0
	StateConnecting   ConnState = 1 // pairing, gathering, probing transports
	StateConnected    ConnState = 2 // packets arrive
	StateInterrupted  ConnState = 3 // nothing received for Config.InterruptAfter
	StateDisconnected ConnState = 4 // nothing received for Config.DisconnectAfter, or the peer left; final
	StateClosed       ConnState = 5 // Close was called; final
)

// String returns the lower-case state name.
func (s ConnState) String() string {
	switch s {
	case StateUnknown:
		return "unknown"
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateInterrupted:
		return "interrupted"
	case StateDisconnected:
		return "disconnected"
	case StateClosed:
		return "closed"
	default:
		return fmt.Sprintf("ConnState(%d)", uint8(s))
	}
}

// CandidateType is the ICE candidate type of one end of the selected
// WebRTC candidate pair. Relay means the traffic goes through a TURN server.
type CandidateType uint8

const (
	CandidateUnknown CandidateType = 0
	CandidateHost    CandidateType = 1
	CandidateSrflx   CandidateType = 2
	CandidatePrflx   CandidateType = 3
	CandidateRelay   CandidateType = 4
)

// String returns the ICE name ("host", "srflx", "prflx", "relay") or "unknown".
func (c CandidateType) String() string {
	switch c {
	case CandidateHost:
		return "host"
	case CandidateSrflx:
		return "srflx"
	case CandidatePrflx:
		return "prflx"
	case CandidateRelay:
		return "relay"
	case CandidateUnknown:
		return "unknown"
	default:
		return fmt.Sprintf("CandidateType(%d)", uint8(c))
	}
}
