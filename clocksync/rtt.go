package clocksync

import (
	"slices"
	"time"
)

// rttWindow is the span of the recent samples RTTStats' Min, P50, P95 and
// Max are taken over.
const rttWindow = 10 * time.Second

// rttCap bounds the samples kept for the window: at most the newest 512
// (51 a second over RTTWindow, more than any ping schedule here sends).
const rttCap = 512

// RTTStats summarise round-trip times: the figures every layer of ragsync
// reports round trips in (the calibrator's Stats, p2p's per-transport
// statistics).
type RTTStats struct {
	Samples  uint64        // samples ever added
	Last     time.Duration // the newest sample
	Smoothed time.Duration // EWMA, gain 1/8 (RFC 6298 SRTT)
	// Jitter is the EWMA of |RTT − Smoothed|, gain 1/4 (RFC 6298 RTTVAR):
	// how much round trips vary from one to the next.
	Jitter time.Duration

	// Recent is the number of samples of the last 10 s (at most the
	// newest 512), and Min, P50, P95 and Max their minimum, quantiles and
	// maximum. All are zero when no sample is that recent: a link silent
	// for 10 s reports no stale figures, and one that recovered from an
	// outage stops reporting the outage's round trips 10 s later.
	Recent             int
	Min, P50, P95, Max time.Duration
}

// RTTEstimator accumulates round-trip time samples, each with the local
// time it was taken at, and reports RTTStats:
//
//   - Smoothed and Jitter follow RFC 6298: on the first sample
//     SRTT = R and RTTVAR = R/2; then RTTVAR ← ¾·RTTVAR + ¼·|SRTT − R| and
//     SRTT ← ⅞·SRTT + ⅛·R.
//   - Min, P50, P95 and Max are exact order statistics (nearest rank: the
//     ⌈q·n⌉-th smallest) of the samples taken in the 10 s before the time
//     Stats is asked at, so they age out by time, however often
//     samples come. They are recomputed only when a sample arrived or one
//     left the window since the last call.
//
// Time is the caller's (a Clock reading, or virtual time): nothing here
// reads a clock. The zero value is ready to use; it neither allocates nor
// locks (callers synchronise).
type RTTEstimator struct {
	s      RTTStats
	ring   [rttCap]rttSample // in order of addition
	first  int               // index of the oldest sample kept
	n      int               // samples kept
	sorted [rttCap]time.Duration
	dirty  bool // a sample arrived or left since the quantiles were computed
}

type rttSample struct{ at, rtt time.Duration }

// Add records a round trip rtt measured at local time at. Samples should
// come in order of at; negative round trips are ignored.
func (e *RTTEstimator) Add(at, rtt time.Duration) {
	if rtt < 0 {
		return
	}
	if e.s.Samples == 0 {
		e.s.Smoothed, e.s.Jitter = rtt, rtt/2
	} else {
		dev := e.s.Smoothed - rtt
		if dev < 0 {
			dev = -dev
		}
		e.s.Jitter += (dev - e.s.Jitter) / 4
		e.s.Smoothed += (rtt - e.s.Smoothed) / 8
	}
	e.s.Samples++
	e.s.Last = rtt
	if e.n == rttCap {
		e.first = (e.first + 1) % rttCap
		e.n--
	}
	e.ring[(e.first+e.n)%rttCap] = rttSample{at, rtt}
	e.n++
	e.dirty = true
}

// Stats returns the figures at local time now: samples taken before
// now − 10 s are left out of the windowed ones, for good.
func (e *RTTEstimator) Stats(now time.Duration) RTTStats {
	for e.n > 0 && e.ring[e.first].at <= now-rttWindow {
		e.first = (e.first + 1) % rttCap
		e.n--
		e.dirty = true
	}
	if e.dirty {
		e.dirty = false
		s := e.sorted[:e.n]
		for i := range s {
			s[i] = e.ring[(e.first+i)%rttCap].rtt
		}
		slices.Sort(s)
		e.s.Recent = len(s)
		e.s.Min, e.s.P50, e.s.P95, e.s.Max = 0, 0, 0, 0
		if len(s) > 0 {
			e.s.Min, e.s.Max = s[0], s[len(s)-1]
			e.s.P50, e.s.P95 = rank(s, 0.50), rank(s, 0.95)
		}
	}
	return e.s
}

// rank returns the nearest-rank q-quantile of sorted s (non-empty): the
// ⌈q·n⌉-th smallest.
func rank(s []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(s))+0.999999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
