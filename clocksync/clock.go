package clocksync

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// Clock is a local monotonic clock: Now returns the time elapsed since an
// arbitrary origin that is fixed for the clock's life. It never goes
// backwards and is not affected by wall-clock adjustments. Everything in
// this package takes its time from a Clock (or from explicit arguments), so
// it runs unchanged in virtual time: see ManualClock and SkewedClock.
// (internal/netsim.Clock is the other clock abstraction: the wall-clock time and
// timers a real-time netsim.Pipe delivers on.)
type Clock interface {
	Now() time.Duration
}

// processStart is the origin of SystemClock.
var processStart = time.Now()

// SystemClock is the process's monotonic clock: Now is the time since the
// package was initialised. The zero value is ready to use.
type SystemClock struct{}

// Now returns the monotonic time since the package was initialised.
func (SystemClock) Now() time.Duration { return time.Since(processStart) }

// ManualClock is a virtual clock that moves only when told to. Use one as
// the "true" time of a simulation and give each simulated peer a
// SkewedClock on top of it. It is safe for concurrent use. The zero value
// reads 0.
type ManualClock struct {
	t atomic.Int64
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Duration { return time.Duration(c.t.Load()) }

// Set sets the clock to t. Setting it backwards breaks the Clock contract;
// Set does not prevent it, so that tests can construct broken clocks.
func (c *ManualClock) Set(t time.Duration) { c.t.Store(int64(t)) }

// Advance moves the clock forward by d (d < 0 is ignored) and returns the
// new time.
func (c *ManualClock) Advance(d time.Duration) time.Duration {
	if d < 0 {
		d = 0
	}
	return time.Duration(c.t.Add(int64(d)))
}

// SkewedClock is a Clock that runs at a slightly wrong rate from an offset:
//
//	Now() = Offset + Base.Now() · (1 + SkewPPM/10⁶)
//
// It models a peer's local clock against the true time of a simulation
// (Base, usually a *ManualClock). A quartz oscillator is typically within
// ±50 ppm, so two peers differ by up to about 100 ppm.
type SkewedClock struct {
	Base    Clock
	Offset  time.Duration
	SkewPPM float64
}

// Now returns the skewed time. With SkewPPM > −10⁶ it is monotonic
// whenever Base is.
func (c *SkewedClock) Now() time.Duration {
	b := c.Base.Now()
	return c.Offset + b + time.Duration(float64(b)*c.SkewPPM*1e-6)
}

// GameTime is the shared game clock's time in microseconds: the time
// stamped on outgoing states (the physics snapshot codec carries it as an
// int64) and compared by the Filter. Both peers' game clocks agree to
// within the calibration error (see the package doc).
type GameTime int64

// GameTimeOf converts a duration to GameTime, rounding down (towards −∞) to
// the microsecond, so that the conversion is monotonic.
func GameTimeOf(d time.Duration) GameTime {
	us := d / time.Microsecond
	if d%time.Microsecond < 0 {
		us--
	}
	return GameTime(us)
}

// Duration returns g as a time.Duration.
func (g GameTime) Duration() time.Duration { return time.Duration(g) * time.Microsecond }

// Sub returns g − h as a time.Duration.
func (g GameTime) Sub(h GameTime) time.Duration { return time.Duration(g-h) * time.Microsecond }

// Add returns g + d, rounding d down to the microsecond.
func (g GameTime) Add(d time.Duration) GameTime { return g + GameTimeOf(d) }

// String formats g as seconds with six decimals, e.g. "12.000250s".
func (g GameTime) String() string {
	neg := g < 0
	u := uint64(g)
	if neg {
		u = -u
	}
	s := strconv.FormatUint(u/1e6, 10) + "." + fmt.Sprintf("%06d", u%1e6) + "s"
	if neg {
		return "-" + s
	}
	return s
}
