// Package clockwire is the wire format of clocksync's calibration messages,
// shared by clocksync (which builds and answers them) and p2p (which
// carries them in its ping and pong messages and reads their timestamps).
//
// Calibration messages are fixed-size, big-endian, timestamps in signed
// nanoseconds of the sender's local clock:
//
//	ping (PingLen = 15 bytes)
//	  0  u8   Magic 0xC5 (clocksync, version 1)
//	  1  u8   Kind 1
//	  2  u8   flags: bit 0 = sender is the leader; other bits zero
//	  3  u32  seq: the pinger's sequence number
//	  7  i64  t1
//
//	pong (PongLen = 39 bytes)
//	  0  u8   Magic 0xC5
//	  1  u8   Kind 2
//	  2  u8   flags: bit 0 = sender is the leader, bit 1 = game time
//	          valid, bit 2 = sender's match running; other bits zero
//	  3  u32  seq: the ping's
//	  7  i64  t1: the ping's, echoed
//	 15  i64  t2: ping received, responder's clock
//	 23  i64  t3: pong sent, responder's clock
//	 31  i64  game: responder's game time at t3, µs (0 unless bit 1)
//
// A message of any other length, magic, kind or flags is rejected with a
// *WireError, which matches ErrMalformed with errors.Is. The encoders
// append to the caller's buffer and, like the parsers, do not allocate.
package clockwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Kind is the kind of a calibration message. The zero value is invalid.
type Kind uint8

// Message kinds.
const (
	KindUnknown Kind = 0
	KindPing    Kind = 1
	KindPong    Kind = 2
)

// String returns "ping", "pong" or "Kind(n)".
func (k Kind) String() string {
	switch k {
	case KindPing:
		return "ping"
	case KindPong:
		return "pong"
	default:
		return fmt.Sprintf("Kind(%d)", uint8(k))
	}
}

// Wire format constants.
const (
	// Magic is the first byte of every calibration message: "clocksync,
	// wire version 1". A new version gets a new magic.
	Magic byte = 0xC5
	// PingLen and PongLen are the exact sizes of the two messages.
	PingLen = 15
	PongLen = 39
)

// Flag bits.
const (
	flagLeader    = 1 << 0 // sender is the leader (the game-time reference)
	flagGameValid = 1 << 1 // pong: Game is set
	flagRunning   = 1 << 2 // pong: the sender's match is running
	pingFlags     = flagLeader
	pongFlags     = flagLeader | flagGameValid | flagRunning
)

// Ping is a calibration request. The pinger stamps T1 with its local clock.
type Ping struct {
	Seq    uint32        // pinger's sequence number, echoed in the pong
	T1     time.Duration // pinger's local clock when sent
	Leader bool          // the pinger is the leader
}

// Pong answers a Ping.
type Pong struct {
	Seq    uint32        // the ping's
	T1     time.Duration // the ping's, echoed
	T2     time.Duration // responder's local clock when the ping arrived
	T3     time.Duration // responder's local clock when the pong left
	Leader bool          // the responder is the leader
	// GameValid reports whether Game is set: always for a leader, for a
	// follower once its game clock is synced.
	GameValid bool
	// Running reports whether the responder's match has started.
	Running bool
	// Game is the responder's game time at T3 in microseconds (0 unless
	// GameValid).
	Game int64
}

// ErrMalformed matches every *WireError.
var ErrMalformed = errors.New("clocksync: malformed calibration message")

// Errors wrapped by the *WireError the parsers return, besides ErrMalformed.
var (
	ErrTruncated = errors.New("clocksync: message truncated")
	ErrTrailing  = errors.New("clocksync: trailing bytes after message")
	ErrBadMagic  = errors.New("clocksync: not a clocksync message (bad magic byte)")
	ErrBadKind   = errors.New("clocksync: unexpected message kind")
	ErrBadFlags  = errors.New("clocksync: reserved flag bits set")
	ErrBadPong   = errors.New("clocksync: pong with game time but no GameValid flag")
)

// WireError is a parse error with (the start of) the offending message.
type WireError struct {
	Err   error  // one of the Err* sentinels above
	Input []byte // a copy of the first 16 bytes of the message
	Len   int    // the message's full length
}

func (e *WireError) Error() string {
	return fmt.Sprintf("%v (len %d, starts % x)", e.Err, e.Len, e.Input)
}

// Unwrap returns ErrMalformed and the specific sentinel error.
func (e *WireError) Unwrap() []error { return []error{ErrMalformed, e.Err} }

func wireError(err error, b []byte) error {
	return &WireError{Err: err, Input: append([]byte(nil), b[:min(len(b), 16)]...), Len: len(b)}
}

// PeekKind returns the kind of a calibration message after checking its
// magic byte and length, without parsing it.
func PeekKind(b []byte) (Kind, error) {
	if len(b) < 2 {
		return KindUnknown, wireError(ErrTruncated, b)
	}
	if b[0] != Magic {
		return KindUnknown, wireError(ErrBadMagic, b)
	}
	var want int
	switch k := Kind(b[1]); k {
	case KindPing:
		want = PingLen
	case KindPong:
		want = PongLen
	default:
		return KindUnknown, wireError(ErrBadKind, b)
	}
	switch {
	case len(b) < want:
		return KindUnknown, wireError(ErrTruncated, b)
	case len(b) > want:
		return KindUnknown, wireError(ErrTrailing, b)
	}
	return Kind(b[1]), nil
}

// AppendPing appends the encoding of p to dst and returns the result.
func AppendPing(dst []byte, p Ping) []byte {
	var flags byte
	if p.Leader {
		flags |= flagLeader
	}
	dst = append(dst, Magic, byte(KindPing), flags)
	dst = binary.BigEndian.AppendUint32(dst, p.Seq)
	return binary.BigEndian.AppendUint64(dst, uint64(p.T1))
}

// ParsePing decodes a ping. The message must be exactly PingLen bytes.
func ParsePing(b []byte) (Ping, error) {
	if err := check(b, KindPing, pingFlags); err != nil {
		return Ping{}, err
	}
	return Ping{
		Seq:    binary.BigEndian.Uint32(b[3:]),
		T1:     time.Duration(binary.BigEndian.Uint64(b[7:])),
		Leader: b[2]&flagLeader != 0,
	}, nil
}

// AppendPong appends the encoding of p to dst and returns the result. Game
// is encoded as zero unless GameValid.
func AppendPong(dst []byte, p Pong) []byte {
	var flags byte
	if p.Leader {
		flags |= flagLeader
	}
	if p.GameValid {
		flags |= flagGameValid
	} else {
		p.Game = 0
	}
	if p.Running {
		flags |= flagRunning
	}
	dst = append(dst, Magic, byte(KindPong), flags)
	dst = binary.BigEndian.AppendUint32(dst, p.Seq)
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.T1))
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.T2))
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.T3))
	return binary.BigEndian.AppendUint64(dst, uint64(p.Game))
}

// ParsePong decodes a pong. The message must be exactly PongLen bytes, and
// Game must be zero unless GameValid is set.
func ParsePong(b []byte) (Pong, error) {
	if err := check(b, KindPong, pongFlags); err != nil {
		return Pong{}, err
	}
	p := Pong{
		Seq:       binary.BigEndian.Uint32(b[3:]),
		T1:        time.Duration(binary.BigEndian.Uint64(b[7:])),
		T2:        time.Duration(binary.BigEndian.Uint64(b[15:])),
		T3:        time.Duration(binary.BigEndian.Uint64(b[23:])),
		Game:      int64(binary.BigEndian.Uint64(b[31:])),
		Leader:    b[2]&flagLeader != 0,
		GameValid: b[2]&flagGameValid != 0,
		Running:   b[2]&flagRunning != 0,
	}
	if !p.GameValid && p.Game != 0 {
		return Pong{}, wireError(ErrBadPong, b)
	}
	return p, nil
}

func check(b []byte, want Kind, flags byte) error {
	k, err := PeekKind(b)
	if err != nil {
		return err
	}
	if k != want {
		return wireError(ErrBadKind, b)
	}
	if b[2]&^flags != 0 {
		return wireError(ErrBadFlags, b)
	}
	return nil
}
