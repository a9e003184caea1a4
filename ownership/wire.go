package ownership

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/ragsync/ragsync/physics"
)

// The wire format of a state packet: see the package documentation.

// KindState is the first byte of every replicator packet (see the package
// documentation for the format). clocksync's messages start with
// clocksync.Magic, so the two can share a link.
const KindState byte = 0x53 // 'S'

// maxClaims is the largest number of ownership claims one packet may carry.
const maxClaims = 64

// maxInputs is the largest number of fighter inputs one packet may carry.
const maxInputs = 16

// ErrMalformed is wrapped by the *PacketError HandlePacket returns for a packet
// it cannot parse (a bad kind byte, a truncated or oversized claim list, or a
// snapshot the physics codec rejects, whose *physics.CodecError is wrapped
// too).
var ErrMalformed = errors.New("malformed state packet")

// PacketError reports a packet HandlePacket could not parse: where (byte
// offset), which field, and why.
type PacketError struct {
	Offset int
	Field  string
	Value  uint64
	Err    error // wraps ErrMalformed, and the *physics.CodecError if any
}

func (e *PacketError) Error() string {
	return fmt.Sprintf("ownership: packet offset %d: %s (%s = %d)", e.Offset, e.Err, e.Field, e.Value)
}

func (e *PacketError) Unwrap() error { return e.Err }

type claim struct {
	id    physics.ObjectID
	epoch uint32
}

// input is a fighter's controls as its owner sent them.
type input struct {
	id physics.ObjectID
	in physics.Input
}

// header is what a state packet carries before its snapshot.
type header struct {
	claims  []claim
	inputs  []input
	reports []hitReport
}

// parseHeader parses the kind byte, the claims and the inputs, returning
// them and the physics snapshot that follows.
func (r *Replicator) parseHeader(p []byte) (header, []byte, error) {
	if len(p) == 0 {
		return header{}, nil, &PacketError{Field: "kind", Err: fmt.Errorf("%w: empty packet", ErrMalformed)}
	}
	if p[0] != KindState {
		return header{}, nil, &PacketError{Field: "kind", Value: uint64(p[0]), Err: fmt.Errorf("%w: not a state packet", ErrMalformed)}
	}
	if len(p) < 2 || p[1] != wireVersion {
		var v uint64
		if len(p) >= 2 {
			v = uint64(p[1])
		}
		return header{}, nil, &PacketError{Offset: 1, Field: "version", Value: v, Err: fmt.Errorf("%w: not a version-3 state packet (the peer runs another ragsync version)", ErrMalformed)}
	}
	off := 2
	uv := func(field string, max uint64) (uint64, error) {
		v, n := binary.Uvarint(p[off:])
		if n <= 0 {
			return 0, &PacketError{Offset: off, Field: field, Err: fmt.Errorf("%w: truncated or overlong varint", ErrMalformed)}
		}
		if v > max {
			return 0, &PacketError{Offset: off, Field: field, Value: v, Err: fmt.Errorf("%w: out of range (max %d)", ErrMalformed, max)}
		}
		off += n
		return v, nil
	}
	id := func(field string) (physics.ObjectID, error) {
		v, err := uv(field, math.MaxUint16)
		if err != nil {
			return 0, err
		}
		if v == 0 {
			return 0, &PacketError{Offset: off - 1, Field: field, Err: fmt.Errorf("%w: %w", ErrMalformed, physics.ErrInvalidID)}
		}
		return physics.ObjectID(v), nil
	}
	n, err := uv("claims", maxClaims)
	if err != nil {
		return header{}, nil, err
	}
	for i := range int(n) {
		cid, err := id("claim id")
		if err != nil {
			return header{}, nil, err
		}
		epoch, err := uv("claim epoch", math.MaxUint32)
		if err != nil {
			return header{}, nil, err
		}
		r.claims[i] = claim{id: cid, epoch: uint32(epoch)}
	}
	h := header{claims: r.claims[:n]}
	m, err := uv("inputs", maxInputs)
	if err != nil {
		return header{}, nil, err
	}
	for i := range int(m) {
		iid, err := id("input id")
		if err != nil {
			return header{}, nil, err
		}
		if i > 0 && iid <= r.inputs[i-1].id {
			return header{}, nil, &PacketError{Offset: off - 1, Field: "input id", Value: uint64(iid), Err: fmt.Errorf("%w: input ids not increasing", ErrMalformed)}
		}
		if off >= len(p) {
			return header{}, nil, &PacketError{Offset: off, Field: "input", Err: fmt.Errorf("%w: truncated", ErrMalformed)}
		}
		// Its bits are judged with its fighter's state (validateInput).
		r.inputs[i] = input{id: iid, in: physics.Input(p[off])}
		off++
	}
	h.inputs = r.inputs[:m]
	if off, h.reports, err = parseReports(p, off, &r.reports); err != nil {
		return header{}, nil, err
	}
	return h, p[off:], nil
}
