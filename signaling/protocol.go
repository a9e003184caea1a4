package signaling

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ragsync/ragsync/signaling/internal/wire"
)

// ProtocolVersion is the version of the JSON protocol described in the
// package documentation. Clients put it in the WebSocket URL (?v=1); the
// server repeats it in its welcome message.
const ProtocolVersion = 1

// MsgType is the "type" field of a protocol message. The zero value is
// invalid. MsgType, Message, DecodeMessage and AppendMessage are the wire
// codec of the signaling protocol, exported for third-party clients and
// tools (a client in another program, a proxy, a load generator); Go games
// use p2p, which speaks it through Client.
type MsgType string

// Message types. Which side sends each one is listed in the package doc.
const (
	// Client → server.
	TypeCreate MsgType = "create" // create a private room; reply joined
	TypeJoin   MsgType = "join"   // join a room by code; reply joined, then paired
	TypeQuick  MsgType = "quick"  // quick match; reply queued, later paired
	TypeLeave  MsgType = "leave"  // leave the room or the queue; reply left
	// TypeRejoin takes a paired player's place back after its connection
	// dropped (or the server restarted), with its relay token; reply
	// joined, then paired to both once both are there.
	TypeRejoin MsgType = "rejoin"
	TypePing   MsgType = "ping" // keepalive; reply pong
	// TypeICEServers asks, while paired, for fresh ICE servers (TURN
	// credentials); the reply, of the same type, carries them.
	TypeICEServers MsgType = "ice_servers"

	// Both ways: a client sends it, the server relays it to the other player.
	TypeOffer     MsgType = "offer"
	TypeAnswer    MsgType = "answer"
	TypeCandidate MsgType = "candidate"

	// Server → client.
	TypeWelcome  MsgType = "welcome"
	TypeJoined   MsgType = "joined"
	TypeQueued   MsgType = "queued"
	TypePaired   MsgType = "paired"
	TypePeerLeft MsgType = "peer_left"
	TypeLeft     MsgType = "left"
	TypePong     MsgType = "pong"
	TypeError    MsgType = "error"
)

// fromClient reports whether clients may send t.
func (t MsgType) fromClient() bool {
	switch t {
	case TypeCreate, TypeJoin, TypeQuick, TypeLeave, TypeRejoin, TypePing, TypeOffer, TypeAnswer, TypeCandidate, TypeICEServers:
		return true
	}
	return false
}

// known reports whether t is any message type of this protocol version.
func (t MsgType) known() bool {
	if t.fromClient() {
		return true
	}
	switch t {
	case TypeWelcome, TypeJoined, TypeQueued, TypePaired, TypePeerLeft, TypeLeft, TypePong, TypeError:
		return true
	}
	return false
}

// Role is a player's part in a pairing, and ragsync's one role type. The
// first player in a room (the host, or the player who waited longest in
// quick match) is the offerer; the second is the answerer. The zero value
// is RoleUnknown.
//
// The offerer sends the WebRTC offer; in a p2p session it also decides
// the transport and leads the game clock (clocksync.Config.Leader). In a
// ragsync.Match the offerer is side 1 and ownership.PeerID 1, the answerer
// side 2 and PeerID 2 (ragsync.NewMatch applies the rule).
type Role uint8

// Roles.
const (
	RoleUnknown Role = iota
	RoleOfferer
	RoleAnswerer
)

// String returns "offerer", "answerer" or "unknown".
func (r Role) String() string {
	switch r {
	case RoleOfferer:
		return "offerer"
	case RoleAnswerer:
		return "answerer"
	}
	return "unknown"
}

// MarshalText encodes a known role as its name; RoleUnknown is an error.
func (r Role) MarshalText() ([]byte, error) {
	if r != RoleOfferer && r != RoleAnswerer {
		return nil, fmt.Errorf("signaling: cannot encode role %d", uint8(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText decodes "offerer" or "answerer".
func (r *Role) UnmarshalText(b []byte) error {
	switch string(b) {
	case "offerer":
		*r = RoleOfferer
	case "answerer":
		*r = RoleAnswerer
	default:
		return fmt.Errorf("signaling: unknown role %q", truncate(string(b), 32))
	}
	return nil
}

// Room codes: RoomCodeLen characters from RoomCodeAlphabet (Crockford-like
// base32 without 0, 1, I, O, so codes read aloud or typed by hand survive).
// 32^6 ≈ 1.07e9 codes.
const (
	RoomCodeLen      = 6
	RoomCodeAlphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
)

// RoomCode identifies a room. The zero value is invalid; obtain one from
// ParseRoomCode, CreateRoom or a pairing.
type RoomCode string

// ParseRoomCode validates s as a room code. Lower-case letters are accepted
// and upper-cased; anything else not in RoomCodeAlphabet, or a length other
// than RoomCodeLen, is an error with code ErrBadRoomCode.
func ParseRoomCode(s string) (RoomCode, error) {
	if len(s) != RoomCodeLen {
		return "", &Error{Code: ErrBadRoomCode, Message: fmt.Sprintf("room code %q must be %d characters from %s", truncate(s, 32), RoomCodeLen, RoomCodeAlphabet)}
	}
	var b [RoomCodeLen]byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if strings.IndexByte(RoomCodeAlphabet, c) < 0 {
			return "", &Error{Code: ErrBadRoomCode, Message: fmt.Sprintf("room code %q has invalid character %q (allowed: %s)", truncate(s, 32), s[i], RoomCodeAlphabet)}
		}
		b[i] = c
	}
	return RoomCode(b[:]), nil
}

// String returns the code.
func (c RoomCode) String() string { return string(c) }

// RelayToken is one player's seat in one pairing: what DialRelay,
// DialRelayWebSocket and Client.Rejoin need. It is the server's token
// (signed with its secret, so a server restarted with the same secret, or
// another instance with it, still accepts it; format in the package
// documentation) and the seat key paired gave with it, joined by ".".
// Only the token goes on the wire, with a proof of possession made with
// the key over a server challenge: the token alone, seen in a log or on
// the wire, takes nothing. It may be used again to re-attach after a
// stream dropped, until the pairing ends or the token expires. String
// redacts it so tokens do not end up in logs.
type RelayToken string

// String returns a redacted form of the token, safe for logs.
func (t RelayToken) String() string {
	if len(t) <= 4 {
		return "<token>"
	}
	return string(t[:4]) + "…"
}

// seat splits t into the wire token and the seat key ("" if t has none).
func (t RelayToken) seat() (token RelayToken, key string) {
	tok, key, _ := strings.Cut(string(t), ".")
	return RelayToken(tok), key
}

// Candidate is a trickled ICE candidate. Its JSON form matches
// webrtc.ICECandidateInit (pion, browsers), so p2p code can convert field by
// field. An empty Candidate string signals the end of candidates.
type Candidate struct {
	Candidate        string  `json:"candidate"`
	SDPMid           *string `json:"sdpMid,omitempty"`
	SDPMLineIndex    *uint16 `json:"sdpMLineIndex,omitempty"`
	UsernameFragment *string `json:"usernameFragment,omitempty"`
}

// ICEServer is a STUN or TURN server for WebRTC, handed to both players in
// paired when the signaling server runs TURN. Its JSON form matches
// RTCIceServer (browsers) and webrtc.ICEServer (pion): "urls", "username",
// "credential". TURN credentials are time-limited (see the package doc).
type ICEServer struct {
	URLs       []string `json:"urls"`
	Username   string   `json:"username,omitempty"`
	Credential string   `json:"credential,omitempty"`
}

// Limits are the server limits announced in the welcome message.
type Limits struct {
	MaxMessageBytes int     `json:"max_message_bytes"`
	RatePerSec      float64 `json:"rate_per_sec"`
	RateBurst       int     `json:"rate_burst"`
	IdleTimeoutMS   int64   `json:"idle_timeout_ms"`
}

// Message is one protocol message, in either direction: part of the wire
// codec for third-party clients and tools (see MsgType). Which fields are
// used depends on Type; see the package doc. Unknown JSON fields are ignored
// so later versions can add optional fields.
type Message struct {
	Type      MsgType     `json:"type"`
	V         int         `json:"v,omitempty"`           // welcome: protocol version
	Limits    *Limits     `json:"limits,omitempty"`      // welcome
	Room      RoomCode    `json:"room,omitempty"`        // join, joined, paired, peer_left, left
	Create    bool        `json:"create,omitempty"`      // join: create the room if there is none
	Role      Role        `json:"role,omitempty"`        // joined, paired
	Token     RelayToken  `json:"token,omitempty"`       // paired, rejoin
	Key       string      `json:"key,omitempty"`         // paired: the seat key, for proofs of possession
	Challenge string      `json:"challenge,omitempty"`   // welcome: this connection's rejoin challenge
	Proof     string      `json:"proof,omitempty"`       // rejoin: proof of possession of the seat key
	ICE       []ICEServer `json:"ice_servers,omitempty"` // paired, ice_servers: STUN/TURN servers to use, if any
	SDP       string      `json:"sdp,omitempty"`         // offer, answer; create, join, quick: an early offer
	Spare     bool        `json:"spare,omitempty"`       // create, join, quick: the early offer yields to the other player's
	TURN      bool        `json:"turn,omitempty"`        // welcome: paired carries TURN servers (early offers lack them)
	Candidate *Candidate  `json:"candidate,omitempty"`   // candidate
	Reason    string      `json:"reason,omitempty"`      // peer_left
	Code      ErrorCode   `json:"code,omitempty"`        // error
	Text      string      `json:"message,omitempty"`     // error: human-readable
	Ref       MsgType     `json:"ref,omitempty"`         // error: type of the message that caused it
}

// Field size limits checked by Validate, independent of the server's
// message-size limit.
const (
	maxSDPLen       = 64 << 10
	maxCandidateLen = 1024
	maxTextLen      = 1024
	maxICEServers   = 4
	maxICEURLs      = wire.MaxICEURLs
	maxICEFieldLen  = wire.MaxICEFieldLen
)

// DecodeMessage parses one JSON message and validates it (see
// Message.Validate); with AppendMessage, the wire codec for third-party
// clients and tools. Errors are *Error with code ErrBadJSON (not a JSON
// object, or a field of the wrong JSON type), ErrUnknownType,
// ErrBadMessage or ErrBadRoomCode.
func DecodeMessage(data []byte) (Message, error) {
	var m Message
	if !utf8.Valid(data) {
		return Message{}, &Error{Code: ErrBadJSON, Message: "message is not valid UTF-8"}
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Message{}, &Error{Code: ErrBadJSON, Message: "cannot decode message: " + truncate(err.Error(), 200)}
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

// Validate checks that m is a known type with the fields that type needs,
// each within its size limit, and normalises the room code.
func (m *Message) Validate() error {
	bad := func(format string, args ...any) error {
		return &Error{Code: ErrBadMessage, Message: fmt.Sprintf(string(m.Type)+": "+format, args...), Ref: m.Type}
	}
	if m.Type == "" {
		return &Error{Code: ErrBadMessage, Message: `message has no "type" field`}
	}
	if !m.Type.known() {
		return &Error{Code: ErrUnknownType, Message: fmt.Sprintf("unknown message type %q", truncate(string(m.Type), 32))}
	}
	if m.Room != "" {
		rc, err := ParseRoomCode(string(m.Room))
		if err != nil {
			err.(*Error).Ref = m.Type
			return err
		}
		m.Room = rc
	}
	if m.Create && m.Type != TypeJoin {
		return bad(`"create" is only valid in join`)
	}
	if len(m.SDP) > maxSDPLen {
		return bad("sdp is %d bytes, limit %d", len(m.SDP), maxSDPLen)
	}
	switch m.Type {
	case TypeJoin:
		if m.Room == "" {
			return &Error{Code: ErrBadRoomCode, Message: `join: missing "room" code`, Ref: m.Type}
		}
	case TypeRejoin:
		if m.Token == "" {
			return &Error{Code: ErrBadToken, Message: `rejoin: missing "token"`, Ref: m.Type}
		}
	case TypeOffer, TypeAnswer:
		if m.SDP == "" {
			return bad(`missing "sdp"`)
		}
	case TypeCandidate:
		if m.Candidate == nil {
			return bad(`missing "candidate"`)
		}
		c := m.Candidate
		n := len(c.Candidate)
		if c.SDPMid != nil {
			n += len(*c.SDPMid)
		}
		if c.UsernameFragment != nil {
			n += len(*c.UsernameFragment)
		}
		if n > maxCandidateLen {
			return bad("candidate is %d bytes, limit %d", n, maxCandidateLen)
		}
	case TypeJoined, TypePaired:
		if m.Room == "" || m.Role == RoleUnknown {
			return bad(`missing "room" or "role"`)
		}
		if m.Type == TypePaired && m.Token == "" {
			return bad(`missing "token"`)
		}
		if err := validICEServers(m.ICE); err != "" {
			return bad("%s", err)
		}
	case TypeICEServers:
		if err := validICEServers(m.ICE); err != "" {
			return bad("%s", err)
		}
	case TypeError:
		if m.Code == "" {
			return bad(`missing "code"`)
		}
	case TypeWelcome:
		if m.V == 0 {
			return bad(`missing "v"`)
		}
	}
	if len(m.Text) > maxTextLen || len(m.Reason) > maxTextLen || len(m.Token) > 256 || len(m.Key) > 256 || len(m.Challenge) > 256 || len(m.Proof) > 256 || len(m.Code) > 64 || len(m.Ref) > 64 {
		return bad("a text field is too long")
	}
	return nil
}

func validICEServers(ss []ICEServer) string {
	if len(ss) > maxICEServers {
		return fmt.Sprintf("%d ice_servers, limit %d", len(ss), maxICEServers)
	}
	for _, is := range ss {
		if len(is.URLs) == 0 || len(is.URLs) > maxICEURLs {
			return fmt.Sprintf("an ice_servers entry has %d urls, want 1 to %d", len(is.URLs), maxICEURLs)
		}
		for _, u := range is.URLs {
			if u == "" || len(u) > maxICEFieldLen {
				return fmt.Sprintf("ice_servers url %q is empty or too long", truncate(u, 32))
			}
		}
		if len(is.Username) > maxICEFieldLen || len(is.Credential) > maxICEFieldLen {
			return "ice_servers username or credential too long"
		}
	}
	return ""
}

// AppendMessage appends the JSON encoding of m to dst. It does not validate m.
// With DecodeMessage, it is the wire codec for third-party clients and tools.
func AppendMessage(dst []byte, m *Message) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return dst, fmt.Errorf("signaling: encode %s message: %w", m.Type, err)
	}
	return append(dst, b...), nil
}

// ErrorCode is the stable, machine-readable code of an error message (its
// "code" field). It is also an error, like syscall.Errno: the *Error a
// client gets matches its code with errors.Is, as in
// errors.Is(err, signaling.ErrRoomFull).
type ErrorCode string

// Error returns "signaling: " and the code.
func (c ErrorCode) Error() string { return "signaling: " + string(c) }

// Error codes. "Fatal" ones are followed by the server closing the
// WebSocket; the others leave the connection usable.
const (
	ErrBadJSON            ErrorCode = "bad_json"              // not a JSON object of the right shape
	ErrBadMessage         ErrorCode = "bad_message"           // missing/oversized field, binary frame, server-only type
	ErrUnknownType        ErrorCode = "unknown_type"          // "type" not in this protocol version
	ErrMessageTooBig      ErrorCode = "message_too_big"       // fatal: over Config.MaxMessageBytes
	ErrRateLimited        ErrorCode = "rate_limited"          // message dropped; fatal if the client keeps flooding
	ErrIdleTimeout        ErrorCode = "idle_timeout"          // fatal: nothing received for Config.IdleTimeout
	ErrUnsupportedVersion ErrorCode = "unsupported_version"   // fatal: ?v= missing or not ProtocolVersion
	ErrWrongState         ErrorCode = "wrong_state"           // e.g. answer before paired, join while in a room
	ErrBadRoomCode        ErrorCode = "bad_room_code"         // malformed room code
	ErrRoomNotFound       ErrorCode = "room_not_found"        // no room with that code
	ErrRoomFull           ErrorCode = "room_full"             // the room already has two players
	ErrTooManyRooms       ErrorCode = "too_many_rooms"        // Config.MaxRooms reached
	ErrServerFull         ErrorCode = "server_full"           // fatal: Config.MaxConns reached
	ErrShuttingDown       ErrorCode = "shutting_down"         // fatal: server is shutting down
	ErrSlowConsumer       ErrorCode = "slow_consumer"         // fatal (close reason only): client does not read
	ErrBadToken           ErrorCode = "bad_token"             // relay: unknown, revoked or malformed token
	ErrTokenUsed          ErrorCode = "token_used"            // relay: token already attached
	ErrPeerTimeout        ErrorCode = "peer_timeout"          // relay: the other player did not attach in time
	ErrTooManyRelays      ErrorCode = "too_many_relays"       // relay: Config.MaxRelays reached
	ErrTooManyConns       ErrorCode = "too_many_conns"        // fatal: your address has Config.MaxConnsPerAddr connections
	ErrTooManyHandshakes  ErrorCode = "too_many_handshakes"   // HTTP 429: your address has Config.MaxHandshakesPerAddr unfinished handshakes
	ErrTooManyFailedJoins ErrorCode = "too_many_failed_joins" // join refused: your address missed too many joins (Config.FailedJoinRate)
	ErrOriginNotAllowed   ErrorCode = "origin_not_allowed"    // fatal: a browser page from an origin not in Config.OriginPatterns
	ErrUnavailable        ErrorCode = "unavailable"           // a server of a cluster cannot reach the cluster's store or the node holding the room now; try again
)

// Error is a protocol error: one the server sent in an error message, or a
// relay refusal. errors.Is matches it against its ErrorCode (ErrRoomFull,
// ...), or against another *Error with the same Code.
type Error struct {
	Code    ErrorCode
	Message string  // human-readable detail, carries the offending input
	Ref     MsgType // type of the message that caused it, if known
}

func (e *Error) Error() string {
	s := "signaling: " + string(e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is reports whether target is e's ErrorCode, or an *Error with the same
// Code.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case ErrorCode:
		return t == e.Code
	case *Error:
		return t.Code == e.Code
	}
	return false
}

func truncate(s string, n int) string { return wire.Truncate(s, n) }
