package correction

import (
	"fmt"
	"math"
)

// Monitor detects a "position disconnect": the local copy of an object and
// its owner's state have been far apart for too long. Feed it one gap per
// observation (typically the largest body error of an object, once per
// received state or per tick). A gap larger than CriticalGap is critical; a
// run of more than MaxRun consecutive critical gaps is a disconnect. A single
// critical gap, or a few, are normal (a hit landed on one screen a tick
// earlier) and only reset when a non-critical gap comes.
//
// The zero value uses the defaults below. Monitor allocates nothing.
type Monitor struct {
	// CriticalGap in metres. Zero: 1.5 m.
	CriticalGap float64
	// MaxRun is the longest run of critical gaps that is still tolerated.
	// Zero: 30 (half a second of ticks at 60 Hz).
	MaxRun int

	run         int
	longest     int
	critical    uint64
	disconnects uint64
	tripped     bool
}

// Defaults of Monitor.
const (
	defaultCriticalGap = 1.5
	defaultMaxRun      = 30
)

// Validate reports unusable limits (wrapping ErrInvalidConfig): a negative,
// NaN or infinite CriticalGap (a NaN one makes every gap critical), or a
// negative MaxRun. Zero fields take the defaults.
func (m *Monitor) Validate() error {
	if !(m.CriticalGap >= 0) || math.IsInf(m.CriticalGap, 0) {
		return fmt.Errorf("%w: Monitor.CriticalGap = %g, want > 0 (0: %g)", ErrInvalidConfig, m.CriticalGap, defaultCriticalGap)
	}
	if m.MaxRun < 0 {
		return fmt.Errorf("%w: Monitor.MaxRun = %d, want > 0 (0: %d)", ErrInvalidConfig, m.MaxRun, defaultMaxRun)
	}
	return nil
}

func (m *Monitor) limits() (float64, int) {
	g, n := m.CriticalGap, m.MaxRun
	if g == 0 {
		g = defaultCriticalGap
	}
	if n == 0 {
		n = defaultMaxRun
	}
	return g, n
}

// Observe records one gap and reports whether this observation started a
// position disconnect (the run just became longer than MaxRun). It reports
// true once per run; Disconnected stays true until the run ends.
func (m *Monitor) Observe(gap float64) bool {
	crit, max := m.limits()
	if !(gap <= crit) { // NaN counts as critical
		m.run++
		m.critical++
		if m.run > m.longest {
			m.longest = m.run
		}
		if m.run > max && !m.tripped {
			m.tripped = true
			m.disconnects++
			return true
		}
		return false
	}
	m.run = 0
	m.tripped = false
	return false
}

// Disconnected reports whether the current run of critical gaps is longer
// than MaxRun.
func (m *Monitor) Disconnected() bool { return m.tripped }

// MonitorStats summarises a Monitor.
type MonitorStats struct {
	// Critical counts critical gaps observed.
	Critical uint64
	// LongestRun is the longest run of consecutive critical gaps.
	LongestRun int
	// Disconnects counts position disconnects (runs longer than MaxRun).
	Disconnects uint64
}

// Stats returns the monitor's counters.
func (m *Monitor) Stats() MonitorStats {
	return MonitorStats{Critical: m.critical, LongestRun: m.longest, Disconnects: m.disconnects}
}

// Reset clears the current run (not the counters), e.g. after a hard
// resynchronisation.
func (m *Monitor) Reset() { m.run, m.tripped = 0, false }
