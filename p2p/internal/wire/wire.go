// Package wire is the p2p session's wire format: the 5-byte header every
// session message starts with, on either transport, and the session's
// control messages. The session protocol built on them is described in the
// p2p package doc.
//
//	 0        1        2        3        4        5
//	+--------+--------+--------+--------+--------+---------------
//	|ver|type|          seq (uint32, big endian)  | payload ...
//	+--------+--------+--------+--------+--------+---------------
//
//	ver  high nibble of byte 0: Version (1). Another version is refused.
//	type low nibble: 1 data, 2 ping, 3 pong, 4 control (MsgType).
//	seq  data: the per-session data sequence number, 0 for the first data
//	     message and +1 for each data message handed to a transport (it
//	     wraps at 2^32); the receiver derives loss, duplicates and
//	     reordering from it and drops duplicates. Other types: a separate
//	     per-session control counter, diagnostics only.
//
// Payloads:
//
//	data     the application's bytes.
//	ping     a clocksync ping (15 bytes: magic, kind, flags, seq, t1;
//	         see internal/clockwire).
//	pong     a clocksync pong (39 bytes: the ping's seq and t1, t2, t3,
//	         the responder's game time and flags).
//	control  kind byte, then:
//	           1 select      epoch uint32 BE, transport byte (1 webrtc, 2 tcp)
//	           2 select-ack  epoch uint32 BE, transport byte
//	           3 bye         reason byte (1: closed by the application)
//	           4 hello       bitmask of the sender's enabled transports
//	                         (bit 0 webrtc, bit 1 tcp), not zero
//
// Control messages have exactly these lengths: a longer one is refused, so
// that a future version's longer message is not silently misread. Every
// decoding error is an *Error that carries the start of the offending
// message. The encoders append to the caller's buffer; nothing here
// allocates on success.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MsgType is the type of a session message (the low nibble of the first
// header byte). The zero value is invalid.
type MsgType uint8

// Message types. See the package doc for the wire format of each.
const (
	MsgUnknown MsgType = 0 // invalid
	MsgData    MsgType = 1 // application payload
	MsgPing    MsgType = 2 // clock/RTT probe carrying a clocksync ping
	MsgPong    MsgType = 3 // answer to MsgPing carrying a clocksync pong
	MsgControl MsgType = 4 // session control (transport selection, bye)

	msgTypeMax = MsgControl
)

// String returns the lower-case name of t.
func (t MsgType) String() string {
	switch t {
	case MsgData:
		return "data"
	case MsgPing:
		return "ping"
	case MsgPong:
		return "pong"
	case MsgControl:
		return "control"
	default:
		return fmt.Sprintf("MsgType(%d)", uint8(t))
	}
}

const (
	// Version is the session wire-format version carried in the high
	// nibble of every message's first byte.
	Version = 1

	// HeaderLen is the size in bytes of the session message header.
	HeaderLen = 5
)

// Header is the fixed 5-byte prefix of every session message.
type Header struct {
	Type MsgType
	// Seq is the sender's sequence number. For MsgData it is the per-session
	// data sequence (consecutive, wrapping at 2^32) from which the receiver
	// derives loss, duplicates and reordering; for the other types it is a
	// separate per-session control counter used only for diagnostics.
	Seq uint32
}

// Errors returned by ParseHeader and ParseControl. They are wrapped in an
// *Error that carries the offending bytes.
var (
	ErrShortMessage = errors.New("wire: message too short")
	ErrBadVersion   = errors.New("wire: unsupported wire version")
	ErrBadType      = errors.New("wire: unknown message type")
	ErrBadControl   = errors.New("wire: malformed control message")
)

// Error is a decoding error with the offending input (up to 16 bytes of it,
// copied).
type Error struct {
	Err   error  // one of ErrShortMessage, ErrBadVersion, ErrBadType, ErrBadControl
	Input []byte // the first bytes of the rejected message
	Len   int    // the full length of the rejected message
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v (len %d, starts % x)", e.Err, e.Len, e.Input)
}

// Unwrap returns the sentinel error.
func (e *Error) Unwrap() error { return e.Err }

func wireErr(err error, b []byte) error {
	n := len(b)
	if n > 16 {
		n = 16
	}
	return &Error{Err: err, Input: append([]byte(nil), b[:n]...), Len: len(b)}
}

// AppendHeader appends the encoded header to dst and returns the extended
// slice. It does not allocate when dst has room for HeaderLen more bytes.
func AppendHeader(dst []byte, h Header) []byte {
	return append(dst, Version<<4|byte(h.Type)&0x0f,
		byte(h.Seq>>24), byte(h.Seq>>16), byte(h.Seq>>8), byte(h.Seq))
}

// ParseHeader decodes the header at the start of b and returns it with the
// payload that follows (aliasing b). Errors are *Error values wrapping
// ErrShortMessage, ErrBadVersion or ErrBadType; the success path does not
// allocate.
func ParseHeader(b []byte) (Header, []byte, error) {
	if len(b) < HeaderLen {
		return Header{}, nil, wireErr(ErrShortMessage, b)
	}
	if b[0]>>4 != Version {
		return Header{}, nil, wireErr(ErrBadVersion, b)
	}
	t := MsgType(b[0] & 0x0f)
	if t == MsgUnknown || t > msgTypeMax {
		return Header{}, nil, wireErr(ErrBadType, b)
	}
	return Header{Type: t, Seq: binary.BigEndian.Uint32(b[1:5])}, b[HeaderLen:], nil
}

// CtrlKind is the first payload byte of a MsgControl message.
type CtrlKind uint8

const (
	CtrlSelect    CtrlKind = 1 // offerer → answerer: use transport T from epoch E on
	CtrlSelectAck CtrlKind = 2 // answerer → offerer: switched to T for epoch E
	CtrlBye       CtrlKind = 3 // either: I am closing the session (reason byte)
	CtrlHello     CtrlKind = 4 // either, on each transport as it opens: the transports I have enabled
)

// String returns the kind's name.
func (k CtrlKind) String() string {
	switch k {
	case CtrlSelect:
		return "select"
	case CtrlSelectAck:
		return "select-ack"
	case CtrlBye:
		return "bye"
	case CtrlHello:
		return "hello"
	default:
		return fmt.Sprintf("CtrlKind(%d)", uint8(k))
	}
}

// Transport bytes of select and select-ack (p2p.TransportKind's values).
const (
	TransportWebRTC = 1
	TransportTCP    = 2
)

// Control is a decoded control message.
type Control struct {
	Kind      CtrlKind
	Epoch     uint32    // select, select-ack
	Transport uint8     // select, select-ack: TransportWebRTC or TransportTCP
	Reason    ByeReason // bye
	Enabled   uint8     // hello: bit 0 webrtc, bit 1 tcp
}

// ByeReason says why a peer closed the session.
type ByeReason uint8

// ByeClosed: the application called Close.
const ByeClosed ByeReason = 1

const (
	ctrlSelectLen = 1 + 4 + 1
	ctrlByeLen    = 1 + 1
	ctrlHelloLen  = 1 + 1
)

// AppendControl appends the control payload (without the session header).
// It panics on an unknown Kind: the caller builds control messages itself.
func AppendControl(dst []byte, c Control) []byte {
	switch c.Kind {
	case CtrlSelect, CtrlSelectAck:
		return append(dst, byte(c.Kind),
			byte(c.Epoch>>24), byte(c.Epoch>>16), byte(c.Epoch>>8), byte(c.Epoch),
			byte(c.Transport))
	case CtrlBye:
		return append(dst, byte(c.Kind), byte(c.Reason))
	case CtrlHello:
		return append(dst, byte(c.Kind), c.Enabled)
	default:
		panic("wire: AppendControl: unknown kind " + c.Kind.String())
	}
}

// ParseControl decodes a control payload. Errors are *Error values
// wrapping ErrBadControl.
func ParseControl(p []byte) (Control, error) {
	if len(p) == 0 {
		return Control{}, wireErr(ErrBadControl, p)
	}
	c := Control{Kind: CtrlKind(p[0])}
	switch c.Kind {
	case CtrlSelect, CtrlSelectAck:
		if len(p) != ctrlSelectLen {
			return Control{}, wireErr(ErrBadControl, p)
		}
		c.Epoch = binary.BigEndian.Uint32(p[1:5])
		c.Transport = p[5]
		if c.Transport != TransportWebRTC && c.Transport != TransportTCP {
			return Control{}, wireErr(ErrBadControl, p)
		}
	case CtrlBye:
		if len(p) != ctrlByeLen {
			return Control{}, wireErr(ErrBadControl, p)
		}
		c.Reason = ByeReason(p[1])
	case CtrlHello:
		if len(p) != ctrlHelloLen || p[1]&^3 != 0 || p[1] == 0 {
			return Control{}, wireErr(ErrBadControl, p)
		}
		c.Enabled = p[1]
	default:
		return Control{}, wireErr(ErrBadControl, p)
	}
	return c, nil
}
