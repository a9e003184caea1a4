package clocksync

import (
	"errors"
	"fmt"
	"time"
)

// Sample is one completed ping/pong exchange in the terms of NTP (see the
// package doc): the offset of the remote clock from the local one as this
// exchange measured it, and the round-trip delay without the remote's
// processing time.
type Sample struct {
	// At is the local time the exchange completed (t4).
	At time.Duration
	// Offset is θ = ((t2−t1) + (t3−t4))/2: add it to a local time to get
	// the remote clock's time, up to ±Delay/2.
	Offset time.Duration
	// Delay is δ = (t4−t1) − (t3−t2) ≥ 0.
	Delay time.Duration
}

// forward returns t2 − t1 = Offset + Delay/2: the offset plus the one-way
// delay from the local peer to the remote one.
func (s Sample) forward() time.Duration { return s.Offset + s.Delay/2 }

// backward returns t3 − t4 = Offset − Delay/2: the offset minus the one-way
// delay from the remote peer back.
func (s Sample) backward() time.Duration { return s.Offset - (s.Delay - s.Delay/2) }

// ErrBadTimestamps is wrapped by the *TimestampError HandlePong returns for
// timestamps that cannot come from a real exchange.
var ErrBadTimestamps = errors.New("clocksync: inconsistent timestamps")

// TimestampError carries the four timestamps of a rejected exchange.
type TimestampError struct {
	T1, T2, T3, T4 time.Duration
	Reason         string
}

func (e *TimestampError) Error() string {
	return fmt.Sprintf("clocksync: inconsistent timestamps (t1=%d t2=%d t3=%d t4=%d ns): %s",
		int64(e.T1), int64(e.T2), int64(e.T3), int64(e.T4), e.Reason)
}

// Unwrap returns ErrBadTimestamps.
func (e *TimestampError) Unwrap() error { return ErrBadTimestamps }

const (
	// maxTimestamp bounds timestamps so that no difference of differences
	// can overflow: 2⁶⁰ ns is 36 years.
	maxTimestamp = time.Duration(1) << 60
	// maxGameTime bounds the game time a pong carries, likewise.
	maxGameTime = GameTime(maxTimestamp / time.Microsecond)
	// maxHold is the longest a responder may hold a ping before answering
	// (t3 − t2). A responder answers at once; anything longer is a bug or
	// garbage, and the sample would be useless anyway.
	maxHold = time.Second
)

// newSample computes a Sample from the four timestamps of an exchange: t1
// and t4 on the local clock (ping sent, pong received), t2 and t3 on the
// remote clock (ping received, pong sent). It returns a *TimestampError if
// t4 < t1, t3 < t2, the remote held the ping longer than a second or longer
// than the whole round trip, or a timestamp is beyond ±2⁶⁰ ns.
//
// A delay slightly below zero can only come from the clocks' rate
// difference over the remote's hold time (at most hold·10⁻³ for clocks
// within 1000 ppm); it is clamped to zero. Anything below that is rejected.
func newSample(t1, t2, t3, t4 time.Duration) (Sample, error) {
	bad := func(reason string) (Sample, error) {
		return Sample{}, &TimestampError{t1, t2, t3, t4, reason}
	}
	for _, t := range [...]time.Duration{t1, t2, t3, t4} {
		if t > maxTimestamp || t < -maxTimestamp {
			return bad("timestamp out of range")
		}
	}
	switch rtt, hold := t4-t1, t3-t2; {
	case rtt < 0:
		return bad("pong received before the ping was sent (t4 < t1)")
	case hold < 0:
		return bad("pong sent before the ping was received (t3 < t2)")
	case hold > maxHold:
		return bad("responder held the ping too long")
	case hold > rtt+time.Microsecond+hold/1000:
		return bad("responder held the ping longer than the round trip")
	}
	fwd, back := t2-t1, t3-t4
	return Sample{
		At:     t4,
		Offset: fwd/2 + back/2 + (fwd%2+back%2)/2,
		Delay:  max(fwd-back, 0),
	}, nil
}
