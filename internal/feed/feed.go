// Package feed is the wire format of spectator feed frames: what a player
// of a ragsync match sends, once, to the server's spectator feed, and what a
// spectator (ragsync.Spectator) or a replay file (internal/replay) carries.
// A frame is one player's view of what it is the authority for at one tick:
// its own fighter's state (HP, action and attack included) and the props it
// owns, with their ownership epochs, plus the game's round state and the
// hits and damage its fighter took. It reuses the physics snapshot codec for
// the states and the ownership packet's (id, epoch) claim pairs, so a frame
// costs what a state packet does plus about a dozen bytes.
//
// # Frame wire format (version 1)
//
// All integers are big-endian; varints are encoding/binary's (uvarint:
// LEB128; varint: zigzag then LEB128).
//
//	byte     Kind (0x46, 'F')
//	byte     Version (1)
//	byte     side: 1 (the offerer's) or 2 (the answerer's)
//	uvarint  round: the game's round number (0 before the first; < 2³²)
//	varint   round start − the snapshot's game time, µs (within ±24 h)
//	uvarint  round length, ms (≤ 24 h; 0: no timer)
//	uvarint  hits taken by the sender's fighter (< 2³²): hits whose
//	         damage its owner applied (ownership.Stats.HitsTaken)
//	uvarint  damage taken by the sender's fighter (< 2³²)
//	uvarint  hits dealt: hits the sender's fighter landed in the sender's
//	         world (ownership.Stats.HitsDealt; < 2³²)
//	uvarint  n, the number of ownership claims (≤ 64)
//	n ×      uvarint object id (1..65535, strictly increasing), uvarint
//	         epoch (< 2³²): as in a state packet (package ownership), the
//	         ownership epoch of each object the sender owns that is not a
//	         fighter; each must be an object of the snapshot
//	...      a physics snapshot (package physics, version 1): the sender's
//	         game time (|t| ≤ 2⁶² µs), its tick count, and the states of
//	         every object it owns
//
// A frame is at most MaxSize (2048) bytes. Decode checks everything: the
// kind and version, the side, every range above, the claims against the
// snapshot, the snapshot itself (physics.World.DecodeSnapshot: the arena's
// configuration tag, the object ids and body counts of the decoding world,
// every value in the world's limits) and each object's state against its
// object (physics.Object.Validate: a fighter's HP up to its MaxHP). Every
// error is an *Error wrapping ErrMalformed.
package feed

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/physics"
)

// Wire constants (see the package documentation).
const (
	// Kind is the first byte of every frame.
	Kind byte = 0x46 // 'F'
	// Version is the second byte.
	Version = 1
	// MaxSize is the largest frame, in bytes.
	MaxSize = 2048
	// MaxClaims is the most claims one frame carries.
	MaxClaims = 64
	// maxSpan bounds the round's start offset and length.
	maxSpan = 24 * time.Hour
	// maxTime bounds a frame's game time (µs, either sign: 146 000
	// years), so that no sum of times overflows.
	maxTime = 1 << 62
)

// ErrMalformed is wrapped by every error of this package: the frame is
// damaged, of another version, or says something impossible.
var ErrMalformed = errors.New("malformed spectator feed frame")

var (
	errTruncated = errors.New("truncated")
	errRange     = errors.New("out of range")
	errVersion   = errors.New("unsupported version")
	errKind      = errors.New("not a feed frame")
	errOrder     = errors.New("claim ids not strictly increasing")
	errClaim     = errors.New("claim for an object the snapshot does not carry, or for a fighter")
)

// Error reports a bad frame: the byte Offset where decoding stopped (0 when
// encoding), the Field and its offending Value, and the reason (Err: a
// description, or the *physics.CodecError or *physics.StateError of the
// states). errors.Is(err, ErrMalformed) holds for every Error.
type Error struct {
	Op     string // "encode" or "decode"
	Offset int
	Field  string
	Value  int64
	Err    error
}

func (e *Error) Error() string {
	s := "feed: " + e.Op + " frame at byte " + strconv.Itoa(e.Offset)
	if e.Field != "" {
		s += ": " + e.Field + " = " + strconv.FormatInt(e.Value, 10)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the reason and ErrMalformed.
func (e *Error) Unwrap() []error { return []error{e.Err, ErrMalformed} }

// Claim is the ownership epoch of an object the sender owns.
type Claim struct {
	ID    physics.ObjectID
	Epoch uint32
}

// Frame is one decoded (or to be encoded) frame. Decoding into a Frame
// reuses its slices: a Frame decoded into again allocates nothing once it
// has grown.
type Frame struct {
	Side        uint8 // 1 or 2
	Round       uint32
	RoundStart  clocksync.GameTime
	RoundLength time.Duration // whole milliseconds on the wire
	HitsTaken   uint32
	Damage      uint32
	HitsDealt   uint32
	Claims      []Claim // strictly increasing ids
	// Snapshot holds the states; its Time is the frame's game time and
	// its Seq the sender's tick count.
	Snapshot physics.Snapshot
}

// Time returns the frame's game time (its snapshot's).
func (f *Frame) Time() clocksync.GameTime { return f.Snapshot.Time }

// Epoch returns the epoch the frame claims for object id, and whether it
// claims one.
func (f *Frame) Epoch(id physics.ObjectID) (uint32, bool) {
	for _, c := range f.Claims {
		if c.ID == id {
			return c.Epoch, true
		}
	}
	return 0, false
}

// Append appends the encoding of f to dst, with its snapshot encoded by w,
// and returns the extended slice. On error it returns dst unchanged and an
// *Error. It allocates only if dst lacks capacity.
func Append(dst []byte, w *physics.World, f *Frame) ([]byte, error) {
	start := len(dst)
	fail := func(field string, v int64, err error) ([]byte, error) {
		return dst[:start], &Error{Op: "encode", Field: field, Value: v, Err: err}
	}
	if f.Side != 1 && f.Side != 2 {
		return fail("side", int64(f.Side), errRange)
	}
	if t := f.Snapshot.Time; t < -maxTime || t > maxTime {
		return fail("time", int64(t), errRange)
	}
	off := f.RoundStart.Sub(f.Snapshot.Time)
	if f.RoundStart < f.Snapshot.Time-clocksync.GameTimeOf(maxSpan) || f.RoundStart > f.Snapshot.Time+clocksync.GameTimeOf(maxSpan) {
		return fail("round start", int64(f.RoundStart), errRange)
	}
	if f.RoundLength < 0 || f.RoundLength > maxSpan || f.RoundLength%time.Millisecond != 0 {
		return fail("round length", int64(f.RoundLength), errRange)
	}
	if len(f.Claims) > MaxClaims {
		return fail("claims", int64(len(f.Claims)), errRange)
	}
	dst = append(dst, Kind, Version, f.Side)
	dst = binary.AppendUvarint(dst, uint64(f.Round))
	dst = binary.AppendVarint(dst, int64(off/time.Microsecond))
	dst = binary.AppendUvarint(dst, uint64(f.RoundLength/time.Millisecond))
	dst = binary.AppendUvarint(dst, uint64(f.HitsTaken))
	dst = binary.AppendUvarint(dst, uint64(f.Damage))
	dst = binary.AppendUvarint(dst, uint64(f.HitsDealt))
	dst = binary.AppendUvarint(dst, uint64(len(f.Claims)))
	var prev physics.ObjectID
	for _, c := range f.Claims {
		if c.ID <= prev {
			return fail("claim id", int64(c.ID), errOrder)
		}
		if !carries(&f.Snapshot, c.ID) {
			return fail("claim id", int64(c.ID), errClaim)
		}
		prev = c.ID
		dst = binary.AppendUvarint(dst, uint64(c.ID))
		dst = binary.AppendUvarint(dst, uint64(c.Epoch))
	}
	dst, err := w.AppendSnapshot(dst, &f.Snapshot)
	if err != nil {
		return fail("snapshot", 0, err)
	}
	if len(dst)-start > MaxSize {
		return fail("size", int64(len(dst)-start), errRange)
	}
	return dst, nil
}

// carries reports whether s has a state of object id.
func carries(s *physics.Snapshot, id physics.ObjectID) bool {
	for i := range s.Objects {
		if s.Objects[i].ID == id {
			return true
		}
	}
	return false
}

// Decode decodes src, a frame encoded by a world built like w, into f,
// reusing f's slices, and validates it whole (see the package
// documentation). On error f holds partial data and the error is an *Error.
// It never panics and allocates nothing once f has grown.
func Decode(src []byte, w *physics.World, f *Frame) error {
	f.Claims = f.Claims[:0]
	off := 0
	fail := func(field string, v int64, err error) error {
		return &Error{Op: "decode", Offset: off, Field: field, Value: v, Err: err}
	}
	if len(src) > MaxSize {
		return fail("size", int64(len(src)), errRange)
	}
	if len(src) < 3 {
		return fail("header", int64(len(src)), errTruncated)
	}
	if src[0] != Kind {
		return fail("kind", int64(src[0]), errKind)
	}
	off = 1
	if src[1] != Version {
		return fail("version", int64(src[1]), errVersion)
	}
	off = 2
	if s := src[2]; s != 1 && s != 2 {
		return fail("side", int64(s), errRange)
	}
	f.Side = src[2]
	off = 3
	uv := func(field string, max uint64) (uint64, error) {
		v, n := binary.Uvarint(src[off:])
		if n == 0 {
			return 0, fail(field, 0, errTruncated)
		}
		if n < 0 || v > max {
			return 0, fail(field, int64(min(v, math.MaxInt64)), errRange)
		}
		off += n
		return v, nil
	}
	round, err := uv("round", math.MaxUint32)
	if err != nil {
		return err
	}
	start, n := binary.Varint(src[off:])
	if n == 0 {
		return fail("round start", 0, errTruncated)
	}
	if n < 0 || start < -maxSpan.Microseconds() || start > maxSpan.Microseconds() {
		return fail("round start", start, errRange)
	}
	off += n
	length, err := uv("round length", uint64(maxSpan.Milliseconds()))
	if err != nil {
		return err
	}
	var counts [3]uint64
	for i, field := range [...]string{"hits taken", "damage", "hits dealt"} {
		if counts[i], err = uv(field, math.MaxUint32); err != nil {
			return err
		}
	}
	nc, err := uv("claims", MaxClaims)
	if err != nil {
		return err
	}
	var prev uint64
	for range nc {
		at := off
		id, err := uv("claim id", math.MaxUint16)
		if err != nil {
			return err
		}
		if id <= prev {
			off = at
			return fail("claim id", int64(id), errOrder)
		}
		prev = id
		epoch, err := uv("claim epoch", math.MaxUint32)
		if err != nil {
			return err
		}
		f.Claims = append(f.Claims, Claim{ID: physics.ObjectID(id), Epoch: uint32(epoch)})
	}
	if err := w.DecodeSnapshot(src[off:], &f.Snapshot); err != nil {
		var ce *physics.CodecError
		if errors.As(err, &ce) {
			off += ce.Offset
		}
		return fail("snapshot", 0, err)
	}
	if t := f.Snapshot.Time; t < -maxTime || t > maxTime {
		return fail("time", int64(t), errRange)
	}
	for i := range f.Snapshot.Objects {
		os := &f.Snapshot.Objects[i]
		if err := w.Object(os.ID).Validate(os); err != nil { // DecodeSnapshot found the object
			return fail("state", int64(os.ID), err)
		}
	}
	for _, c := range f.Claims {
		if o := w.Object(c.ID); !carries(&f.Snapshot, c.ID) || o.Fighter() != nil {
			return fail("claim id", int64(c.ID), errClaim)
		}
	}
	f.Round = uint32(round)
	f.RoundStart = f.Snapshot.Time + clocksync.GameTime(start)
	f.RoundLength = time.Duration(length) * time.Millisecond
	f.HitsTaken, f.Damage, f.HitsDealt = uint32(counts[0]), uint32(counts[1]), uint32(counts[2])
	return nil
}
