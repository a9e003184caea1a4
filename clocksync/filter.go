package clocksync

import (
	"fmt"
	"math"
	"time"
)

// Reason is a Filter's verdict on one timestamped state. The zero value is
// invalid.
type Reason uint8

// Verdicts. Accepted is the only one that lets a state through.
const (
	ReasonUnknown Reason = iota
	// Accepted: newer than every state accepted before, and fresh.
	Accepted
	// Duplicate: the same timestamp as the newest accepted state.
	Duplicate
	// OutOfOrder: older than the newest accepted state (overtaken).
	OutOfOrder
	// TooOld: more than MaxDelay behind the current game time.
	TooOld
	// TooNew: more than MaxAhead ahead of the current game time: a
	// corrupted timestamp or clocks that are not synced. Accepting it
	// would make every later state look out of order.
	TooNew

	numReasons
)

// String returns the verdict's lower-case name.
func (r Reason) String() string {
	switch r {
	case Accepted:
		return "accepted"
	case Duplicate:
		return "duplicate"
	case OutOfOrder:
		return "out-of-order"
	case TooOld:
		return "too-old"
	case TooNew:
		return "too-new"
	default:
		return fmt.Sprintf("Reason(%d)", uint8(r))
	}
}

// Filter defaults.
const (
	// defaultMaxDelay: a state older than this is useless for correction
	// (30 ticks at 60 Hz); even the Awful link's one-way delay is 150 ± 40
	// ms, and several-second lags are handled by a hard snap on fresh
	// states, not by applying stale ones.
	defaultMaxDelay = 500 * time.Millisecond
	// defaultMaxAhead is generous: synced clocks agree within a few ms.
	defaultMaxAhead = time.Second
)

// Filter is a timestamp filter for one stream of states (one sender, or
// one object of a sender: keep one Filter per stream). A state is dropped
// if its sender's game time ts is not newer than the last accepted one (a
// duplicate, or overtaken by a newer state), or more than MaxDelay older
// than the current game time now (so a state that arrives late is never
// applied over a newer one, and a state too old to correct toward is not
// applied at all). It is also dropped if it is more than MaxAhead in the
// future. The checks run in that order, and only accepted states move the
// stream's newest timestamp.
//
// The zero value is ready to use, with the defaults. A Filter is a small
// value (80 bytes) that never allocates; it is not safe for
// concurrent use.
type Filter struct {
	// MaxDelay is the largest accepted age now − ts. Zero: 500 ms.
	// Negative: no limit.
	MaxDelay time.Duration
	// MaxAhead is the largest accepted ts − now. Zero: 1 s. Negative: no
	// limit.
	MaxAhead time.Duration

	last   GameTime
	has    bool
	counts [numReasons]uint64
}

// Check decides about a state stamped ts arriving at game time now, counts
// the verdict, and records ts as the newest if it is Accepted.
func (f *Filter) Check(ts, now GameTime) Reason {
	r := f.verdict(ts, now)
	f.counts[r]++
	if r == Accepted {
		f.last, f.has = ts, true
	}
	return r
}

func (f *Filter) verdict(ts, now GameTime) Reason {
	if f.has {
		switch {
		case ts == f.last:
			return Duplicate
		case ts < f.last:
			return OutOfOrder
		}
	}
	maxDelay := f.MaxDelay
	if maxDelay == 0 {
		maxDelay = defaultMaxDelay
	}
	// Compare against now ± limit (saturating), not ts − now: a garbage ts
	// near ±2⁶³ would overflow the difference.
	if maxDelay > 0 && ts < addSat(now, -GameTimeOf(maxDelay)) {
		return TooOld
	}
	maxAhead := f.MaxAhead
	if maxAhead == 0 {
		maxAhead = defaultMaxAhead
	}
	if maxAhead > 0 && ts > addSat(now, GameTimeOf(maxAhead)) {
		return TooNew
	}
	return Accepted
}

// Newest returns the newest accepted timestamp, and false if none was.
func (f *Filter) Newest() (GameTime, bool) { return f.last, f.has }

// FilterCounts are a Filter's counters by verdict.
type FilterCounts struct {
	Accepted, Duplicate, OutOfOrder, TooOld, TooNew uint64
}

// Dropped is the total of the drop counters.
func (c FilterCounts) Dropped() uint64 {
	return c.Duplicate + c.OutOfOrder + c.TooOld + c.TooNew
}

// Counts returns the counters.
func (f *Filter) Counts() FilterCounts {
	return FilterCounts{
		Accepted:   f.counts[Accepted],
		Duplicate:  f.counts[Duplicate],
		OutOfOrder: f.counts[OutOfOrder],
		TooOld:     f.counts[TooOld],
		TooNew:     f.counts[TooNew],
	}
}

// Reset forgets the newest timestamp (for a new match or a respawned
// object); the counters are kept.
func (f *Filter) Reset() { f.last, f.has = 0, false }

// addSat returns a + b, saturating at the int64 limits.
func addSat(a, b GameTime) GameTime {
	c := a + b
	switch {
	case b > 0 && c < a:
		return math.MaxInt64
	case b < 0 && c > a:
		return math.MinInt64
	}
	return c
}
