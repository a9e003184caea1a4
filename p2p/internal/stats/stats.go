// Package stats has the p2p session's link estimators: plain types fed
// with samples, with time passed in, so they run in virtual time. SeqTracker
// derives loss, duplicates and reordering from sequence numbers, Jitter is
// RFC 3550's interarrival jitter, RateMeter counts packets and bytes per
// second. Round-trip times are clocksync.RTTEstimator's.
package stats

import "time"

// SeqResult is what SeqTracker.Add decided about one sequence number.
type SeqResult uint8

const (
	SeqUnknown   SeqResult = 0
	SeqInOrder   SeqResult = 1 // newer than everything seen (possibly after a gap)
	SeqReordered SeqResult = 2 // older than the newest seen, not seen before: fills a gap
	SeqDuplicate SeqResult = 3 // seen before (within the window): drop
	SeqLate      SeqResult = 4 // older than the window: cannot tell duplicates apart, drop
)

// String returns the result's name.
func (r SeqResult) String() string {
	switch r {
	case SeqInOrder:
		return "in-order"
	case SeqReordered:
		return "reordered"
	case SeqDuplicate:
		return "duplicate"
	case SeqLate:
		return "late"
	default:
		return "unknown"
	}
}

// Deliver reports whether a message with this result should be handed to
// the application.
func (r SeqResult) Deliver() bool { return r == SeqInOrder || r == SeqReordered }

// SeqWindow is how many sequence numbers behind the newest one SeqTracker
// remembers. A message older than that is dropped as late.
const SeqWindow = 1024

// SeqTracker derives loss, duplicates and reordering from the 32-bit
// sequence numbers of received messages, in the manner of RFC 3550 §6.4.1
// and A.3:
//
//   - sequence numbers are extended to 64 bits: a new number s is placed at
//     the extended value nearest to the newest one seen (serial-number
//     arithmetic, RFC 1982), so wrap-around at 2^32 is harmless;
//   - expected = newest − first + 1; lost = expected − received (unique),
//     never negative, so a reordered message that fills a gap un-counts a
//     loss and duplicates never hide one;
//   - a bitmap over the last SeqWindow numbers tells duplicates (bit set)
//     from reordered messages (bit clear); anything older than the window
//     is "late" and dropped.
//
// The zero value is ready to use. Add does not allocate.
type SeqTracker struct {
	started   bool
	first     int64 // extended first sequence number
	newest    int64 // extended newest sequence number
	received  uint64
	dups      uint64
	reordered uint64
	late      uint64
	seen      [SeqWindow / 64]uint64 // bit (ext mod SeqWindow) set when seen
}

func (t *SeqTracker) bit(ext int64) (int, uint64) {
	i := int(uint64(ext) % SeqWindow)
	return i / 64, 1 << (i % 64)
}

// Add classifies sequence number seq and updates the counters.
func (t *SeqTracker) Add(seq uint32) SeqResult {
	if !t.started {
		t.started = true
		t.first = int64(seq)
		t.newest = int64(seq)
		t.received = 1
		w, m := t.bit(t.newest)
		t.seen[w] |= m
		return SeqInOrder
	}
	ext := t.newest + int64(int32(seq-uint32(t.newest)))
	switch {
	case ext > t.newest:
		// Clear the bits of the numbers skipped over (and of ext itself):
		// they now stand for numbers SeqWindow newer than before.
		if ext-t.newest >= SeqWindow {
			t.seen = [SeqWindow / 64]uint64{}
		} else {
			for e := t.newest + 1; e <= ext; e++ {
				w, m := t.bit(e)
				t.seen[w] &^= m
			}
		}
		t.newest = ext
		t.received++
		w, m := t.bit(ext)
		t.seen[w] |= m
		return SeqInOrder
	case t.newest-ext >= SeqWindow:
		t.late++
		return SeqLate
	default:
		w, m := t.bit(ext)
		if t.seen[w]&m != 0 {
			t.dups++
			return SeqDuplicate
		}
		t.seen[w] |= m
		t.received++
		t.reordered++
		if ext < t.first {
			// Older than the first one seen: the sender started earlier.
			t.first = ext
		}
		return SeqReordered
	}
}

// Begin declares the first sequence number the sender uses, so that loss
// of the very first messages is counted too. Call it before any Add; the
// tracker otherwise takes the first number it sees as the start.
func (t *SeqTracker) Begin(first uint32) {
	*t = SeqTracker{started: true, first: int64(first), newest: int64(first) - 1}
}

// Expected returns how many messages the sender has sent as far as the
// receiver can tell: newest − first + 1 (0 before the first message).
func (t *SeqTracker) Expected() uint64 {
	if !t.started {
		return 0
	}
	return uint64(t.newest-t.first) + 1
}

// Received returns the number of unique messages accepted (in order or
// reordered).
func (t *SeqTracker) Received() uint64 { return t.received }

// Lost returns Expected − Received, or 0 if that is negative.
func (t *SeqTracker) Lost() uint64 {
	e := t.Expected()
	if t.received >= e {
		return 0
	}
	return e - t.received
}

// Loss returns Lost/Expected in [0, 1] (0 before any message).
func (t *SeqTracker) Loss() float64 {
	e := t.Expected()
	if e == 0 {
		return 0
	}
	return float64(t.Lost()) / float64(e)
}

// Duplicates, Reordered and Late return the counters of those results.
func (t *SeqTracker) Duplicates() uint64 { return t.dups }
func (t *SeqTracker) Reordered() uint64  { return t.reordered }
func (t *SeqTracker) Late() uint64       { return t.late }

// Jitter is the RFC 3550 §6.4.1 interarrival-jitter estimator: for
// consecutive transit times T(i−1), T(i) of packets in one direction,
// D = T(i) − T(i−1) and J ← J + (|D| − J)/16. Transit times may include an
// unknown constant clock offset (it cancels in D), so callers feed
// "receiver clock at arrival − sender clock at departure". The zero value
// is ready to use.
type Jitter struct {
	have bool
	last time.Duration
	j    float64 // nanoseconds
}

// Add records the transit time of one packet.
func (j *Jitter) Add(transit time.Duration) {
	if j.have {
		d := float64(transit - j.last)
		if d < 0 {
			d = -d
		}
		j.j += (d - j.j) / 16
	}
	j.have = true
	j.last = transit
}

// Value returns the current jitter estimate.
func (j *Jitter) Value() time.Duration { return time.Duration(j.j) }

// RateMeter measures packets and bytes per second over consecutive windows
// of at least Interval (1 s when zero): Update closes the window once it is
// that old and the rates become count/elapsed of the closed window. Time is
// passed in, so it runs in virtual time. The zero value is ready to use.
type RateMeter struct {
	Interval time.Duration

	started      bool
	windowStart  time.Duration
	packets      uint64
	bytes        uint64
	totalPackets uint64
	totalBytes   uint64
	pps, bps     float64
}

// Add counts one packet of n bytes.
func (r *RateMeter) Add(n int) {
	r.packets++
	r.bytes += uint64(n)
	r.totalPackets++
	r.totalBytes += uint64(n)
}

// Update closes the current window if it is at least Interval old at now,
// and reports whether it did.
func (r *RateMeter) Update(now time.Duration) bool {
	if !r.started {
		r.started = true
		r.windowStart = now
		return false
	}
	iv := r.Interval
	if iv <= 0 {
		iv = time.Second
	}
	el := now - r.windowStart
	if el < iv {
		return false
	}
	sec := el.Seconds()
	r.pps = float64(r.packets) / sec
	r.bps = float64(r.bytes) / sec
	r.packets, r.bytes = 0, 0
	r.windowStart = now
	return true
}

// PacketsPerSec and BytesPerSec return the rates of the last closed window.
func (r *RateMeter) PacketsPerSec() float64 { return r.pps }
func (r *RateMeter) BytesPerSec() float64   { return r.bps }

// Totals returns the packets and bytes ever counted.
func (r *RateMeter) Totals() (packets, bytes uint64) { return r.totalPackets, r.totalBytes }
