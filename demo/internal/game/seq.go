package game

// seqCounter counts the rival's state packets by the sender's sequence
// numbers (16 bits, wrapping; see link): how many the sender sent (the
// advance of the highest number seen) and how many distinct ones arrived
// (late ones within 64 of the highest count, duplicates do not). Their difference is what was lost,
// however fast or slow the sender ticks: a sender below 60 Hz sends fewer
// numbers, it does not lose them.
type seqCounter struct {
	have bool
	hi   uint16 // highest number seen
	mask uint64 // bit i: hi-i arrived
	sent uint64 // numbers the sender used after the first one seen
	got  uint64 // distinct numbers that arrived after the first one
}

func (c *seqCounter) add(seq uint16) {
	if !c.have {
		c.have, c.hi, c.mask = true, seq, 1
		return
	}
	d := int64(int16(seq - c.hi))
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
