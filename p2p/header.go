package p2p

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
	// WireVersion is the session wire-format version carried in the high
	// nibble of every message's first byte.
	WireVersion = 1

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

// Errors returned by ParseHeader and the control-message parsers. They are
// wrapped in a *WireError that carries the offending bytes.
var (
	ErrShortMessage = errors.New("p2p: message too short")
	ErrBadVersion   = errors.New("p2p: unsupported wire version")
	ErrBadType      = errors.New("p2p: unknown message type")
	ErrBadControl   = errors.New("p2p: malformed control message")
)

// WireError is a decoding error with the offending input (up to 16 bytes
// of it, copied).
type WireError struct {
	Err   error  // one of ErrShortMessage, ErrBadVersion, ErrBadType, ErrBadControl
	Input []byte // the first bytes of the rejected message
	Len   int    // the full length of the rejected message
}

func (e *WireError) Error() string {
	return fmt.Sprintf("%v (len %d, starts % x)", e.Err, e.Len, e.Input)
}

// Unwrap returns the sentinel error.
func (e *WireError) Unwrap() error { return e.Err }

func wireErr(err error, b []byte) error {
	n := len(b)
	if n > 16 {
		n = 16
	}
	return &WireError{Err: err, Input: append([]byte(nil), b[:n]...), Len: len(b)}
}

// AppendHeader appends the encoded header to dst and returns the extended
// slice. It does not allocate when dst has room for HeaderLen more bytes.
func AppendHeader(dst []byte, h Header) []byte {
	return append(dst, WireVersion<<4|byte(h.Type)&0x0f,
		byte(h.Seq>>24), byte(h.Seq>>16), byte(h.Seq>>8), byte(h.Seq))
}

// ParseHeader decodes the header at the start of b and returns it with the
// payload that follows (aliasing b). Errors are *WireError values wrapping
// ErrShortMessage, ErrBadVersion or ErrBadType; the success path does not
// allocate.
func ParseHeader(b []byte) (Header, []byte, error) {
	if len(b) < HeaderLen {
		return Header{}, nil, wireErr(ErrShortMessage, b)
	}
	if b[0]>>4 != WireVersion {
		return Header{}, nil, wireErr(ErrBadVersion, b)
	}
	t := MsgType(b[0] & 0x0f)
	if t == MsgUnknown || t > msgTypeMax {
		return Header{}, nil, wireErr(ErrBadType, b)
	}
	return Header{Type: t, Seq: binary.BigEndian.Uint32(b[1:5])}, b[HeaderLen:], nil
}

// ctrlKind is the first payload byte of a MsgControl message.
type ctrlKind uint8

const (
	ctrlSelect    ctrlKind = 1 // offerer → answerer: use transport T from epoch E on
	ctrlSelectAck ctrlKind = 2 // answerer → offerer: switched to T for epoch E
	ctrlBye       ctrlKind = 3 // either: I am closing the session (reason byte)
	ctrlHello     ctrlKind = 4 // either, on each transport as it opens: the transports I have enabled
)

func (k ctrlKind) String() string {
	switch k {
	case ctrlSelect:
		return "select"
	case ctrlSelectAck:
		return "select-ack"
	case ctrlBye:
		return "bye"
	case ctrlHello:
		return "hello"
	default:
		return fmt.Sprintf("ctrlKind(%d)", uint8(k))
	}
}

// control is a decoded control message.
type control struct {
	Kind      ctrlKind
	Epoch     uint32        // select, select-ack
	Transport TransportKind // select, select-ack
	Reason    byeReason     // bye
	Enabled   uint8         // hello: bit 0 webrtc, bit 1 tcp (1 << TransportKind.idx())
}

// byeReason says why a peer closed the session.
type byeReason uint8

const (
	byeClosed byeReason = 1 // the application called Close
)

const (
	ctrlSelectLen = 1 + 4 + 1
	ctrlByeLen    = 1 + 1
	ctrlHelloLen  = 1 + 1
)

// appendControl appends the control payload (without the session header).
func appendControl(dst []byte, c control) []byte {
	switch c.Kind {
	case ctrlSelect, ctrlSelectAck:
		return append(dst, byte(c.Kind),
			byte(c.Epoch>>24), byte(c.Epoch>>16), byte(c.Epoch>>8), byte(c.Epoch),
			byte(c.Transport))
	case ctrlBye:
		return append(dst, byte(c.Kind), byte(c.Reason))
	case ctrlHello:
		return append(dst, byte(c.Kind), c.Enabled)
	default:
		panic("p2p: appendControl: unknown kind " + c.Kind.String())
	}
}

// parseControl decodes a control payload. Trailing bytes are rejected so
// that a future version's longer message is not silently misread.
func parseControl(p []byte) (control, error) {
	if len(p) == 0 {
		return control{}, wireErr(ErrBadControl, p)
	}
	c := control{Kind: ctrlKind(p[0])}
	switch c.Kind {
	case ctrlSelect, ctrlSelectAck:
		if len(p) != ctrlSelectLen {
			return control{}, wireErr(ErrBadControl, p)
		}
		c.Epoch = binary.BigEndian.Uint32(p[1:5])
		c.Transport = TransportKind(p[5])
		if c.Transport != TransportWebRTC && c.Transport != TransportTCP {
			return control{}, wireErr(ErrBadControl, p)
		}
	case ctrlBye:
		if len(p) != ctrlByeLen {
			return control{}, wireErr(ErrBadControl, p)
		}
		c.Reason = byeReason(p[1])
	case ctrlHello:
		if len(p) != ctrlHelloLen || p[1]&^3 != 0 || p[1] == 0 {
			return control{}, wireErr(ErrBadControl, p)
		}
		c.Enabled = p[1]
	default:
		return control{}, wireErr(ErrBadControl, p)
	}
	return c, nil
}
