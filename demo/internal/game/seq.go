package game

import (
	"encoding/binary"

	"github.com/ragsync/ragsync/ownership"
)

// stateSeq returns the sender's sequence number of a state packet, read
// from the documented wire formats (package ownership's state packet, whose
// tail is package physics' snapshot header), without decoding the states.
// ok is false for anything else or a packet too short to hold it; the
// Match still judges every packet itself.
//
// It stands in for a counter the replicator does not expose: ownership.Stats
// counts packets in, not the sequence numbers they carry.
func stateSeq(p []byte) (seq uint32, ok bool) {
	if len(p) == 0 || p[0] != ownership.KindState {
		return 0, false
	}
	off := 1
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(p[off:])
		if n <= 0 {
			return 0, false
		}
		off += n
		return v, true
	}
	claims, ok := uv()
	if !ok || claims > 64 {
		return 0, false
	}
	for range 2 * claims {
		if _, ok := uv(); !ok {
			return 0, false
		}
	}
	inputs, ok := uv()
	if !ok || inputs > 16 {
		return 0, false
	}
	for range inputs {
		if _, ok := uv(); !ok {
			return 0, false
		}
		off++ // the input byte
	}
	off += 2 // snapshot version and configuration tag
	if off >= len(p) {
		return 0, false
	}
	if _, n := binary.Varint(p[off:]); n <= 0 {
		return 0, false
	} else {
		off += n
	}
	s, ok := uv()
	if !ok || s > 1<<32-1 {
		return 0, false
	}
	return uint32(s), true
}

// seqCounter counts the rival's state packets by the sender's sequence
// numbers: how many the sender sent (the advance of the highest number
// seen) and how many distinct ones arrived (late ones within 64 of the
// highest count, duplicates do not). Their difference is what was lost,
// however fast or slow the sender ticks: a sender below 60 Hz sends fewer
// numbers, it does not lose them.
type seqCounter struct {
	have bool
	hi   uint32 // highest number seen
	mask uint64 // bit i: hi-i arrived
	sent uint64 // numbers the sender used after the first one seen
	got  uint64 // distinct numbers that arrived after the first one
}

func (c *seqCounter) add(seq uint32) {
	if !c.have {
		c.have, c.hi, c.mask = true, seq, 1
		return
	}
	d := int64(int32(seq - c.hi))
	switch {
	case d > 0:
		if d >= 64 {
			c.mask = 0
		} else {
			c.mask <<= uint(d)
		}
		c.mask |= 1
		c.hi = seq
		c.sent += uint64(d)
		c.got++
	case d > -64 && d < 0:
		if bit := uint64(1) << uint(-d); c.mask&bit == 0 {
			c.mask |= bit
			c.got++
		}
	}
}
