package clocksync

import (
	"math"
	"time"
)

// GameClockConfig configures the follower's game clock (see the package
// doc). The zero value gives the documented defaults.
type GameClockConfig struct {
	// MaxSlew bounds how much faster or slower than the local clock the
	// game clock may run while the match is on: 0.05 means between 0.95
	// and 1.05 game seconds per local second. Zero: 0.05. Range (0, 0.5].
	MaxSlew float64
	// SlewTime is how long a correction takes when MaxSlew does not limit
	// it: an error e is corrected at rate e/SlewTime. Longer smooths more;
	// shorter follows the estimate more closely. Zero: 1 s.
	SlewTime time.Duration
	// StepThreshold: while the match is on, a game clock that is behind by
	// more than this jumps forward instead of slewing. A clock that is
	// ahead never jumps back, however large the error: it slews at MaxSlew
	// (a 1 s error takes 20 s at 5 %). Zero: 250 ms. Negative: never step.
	StepThreshold time.Duration
}

// Game clock defaults (see GameClockConfig).
const (
	defaultMaxSlew       = 0.05
	defaultSlewTime      = time.Second
	defaultStepThreshold = 250 * time.Millisecond
)

func (c GameClockConfig) resolve() (GameClockConfig, error) {
	if c.MaxSlew == 0 {
		c.MaxSlew = defaultMaxSlew
	}
	if c.SlewTime == 0 {
		c.SlewTime = defaultSlewTime
	}
	if c.StepThreshold == 0 {
		c.StepThreshold = defaultStepThreshold
	}
	switch {
	case !(c.MaxSlew > 0 && c.MaxSlew <= 0.5):
		return c, configError("GameClock.MaxSlew", c.MaxSlew, "(0, 0.5]")
	case c.SlewTime < 0 || c.SlewTime > time.Hour:
		return c, configError("GameClock.SlewTime", c.SlewTime, "(0, 1h]")
	}
	return c, nil
}

// gameClock is a follower's game clock: a piecewise-linear function of the
// local clock that is steered toward a target (the leader's game time as
// the estimator sees it). It is a plain value: the local time is passed in.
//
// Before the match (Running false) Steer sets the clock to the target: it
// may jump either way. Once Start is called it only slews: between steers
// it runs at rate R = 1 + drift (the estimated rate of the leader's clock
// against ours), and an error e = target − game time is worked off at rate
// R + e/SlewTime, clamped to [1 − MaxSlew, 1 + MaxSlew], until it is gone;
// then it runs at R again. So the game clock is continuous and never runs
// backwards, its rate stays within ±MaxSlew of the local clock's, and it
// keeps tracking drift between steers. A target more than StepThreshold
// ahead is stepped to (forward jumps are harmless: remote states just look
// older); a target behind is always slewed to.
//
// gameClock is not safe for concurrent use.
type gameClock struct {
	cfg     GameClockConfig
	valid   bool
	running bool

	// Segment: from local t0 the clock runs at corr until corrEnd, then at
	// base. g0 is the game time (ns) at t0.
	t0, corrEnd time.Duration
	g0          time.Duration
	base, corr  float64

	steps uint64
}

// newGameClock returns an unset gameClock, or an error wrapping
// ErrInvalidConfig.
func newGameClock(cfg GameClockConfig) (*gameClock, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	return &gameClock{cfg: cfg, base: 1, corr: 1}, nil
}

// Valid reports whether the clock has been set.
func (g *gameClock) Valid() bool { return g.valid }

// Running reports whether Start was called.
func (g *gameClock) Running() bool { return g.running }

// Steps returns how many forward steps the clock took while running.
func (g *gameClock) Steps() uint64 { return g.steps }

// Start starts the match: from now on the clock only slews (and steps
// forward past StepThreshold). It does not move the clock.
func (g *gameClock) Start() { g.running = true }

// At returns the game time, in nanoseconds, at local time local (0 while
// the clock is not valid). It is continuous and non-decreasing in local.
func (g *gameClock) At(local time.Duration) time.Duration {
	if !g.valid {
		return 0
	}
	d := local - g.t0
	if local <= g.corrEnd {
		return g.g0 + time.Duration(math.Round(g.corr*float64(d)))
	}
	c := g.corrEnd - g.t0
	return g.g0 + time.Duration(math.Round(g.corr*float64(c))) +
		time.Duration(math.Round(g.base*float64(d-c)))
}

// Rate returns the clock's current rate against the local clock at local.
func (g *gameClock) Rate(local time.Duration) float64 {
	if local < g.corrEnd {
		return g.corr
	}
	return g.base
}

// Set sets the clock to game time target (ns) at local time local, running
// at rate 1 + driftPPM·10⁻⁶ from there, regardless of Running.
func (g *gameClock) Set(local, target time.Duration, driftPPM float64) {
	g.t0, g.g0, g.corrEnd = local, target, local
	g.base = g.baseRate(driftPPM)
	g.corr = g.base
	g.valid = true
}

func (g *gameClock) baseRate(driftPPM float64) float64 {
	// Leave at least half of MaxSlew for corrections.
	lim := g.cfg.MaxSlew / 2
	return 1 + max(-lim, min(lim, driftPPM*1e-6))
}

// Steer moves the clock toward game time target (ns) at local time local,
// with the target's rate 1 + driftPPM·10⁻⁶: a step before the match (or
// the first time), a slew while it runs (see gameClock). local should not
// be older than the previous Steer's; if it is, the previous one is used.
func (g *gameClock) Steer(local, target time.Duration, driftPPM float64) {
	if !g.valid || !g.running {
		g.Set(local, target, driftPPM)
		return
	}
	local = max(local, g.t0)
	now := g.At(local)
	e := target - now
	if g.cfg.StepThreshold >= 0 && e > g.cfg.StepThreshold {
		now, e = target, 0
		g.steps++
	}
	g.t0, g.g0, g.corrEnd = local, now, local
	g.base = g.baseRate(driftPPM)
	g.corr = g.base
	if e == 0 {
		return
	}
	rate := g.base + float64(e)/float64(g.cfg.SlewTime)
	rate = max(1-g.cfg.MaxSlew, min(1+g.cfg.MaxSlew, rate))
	if dr := rate - g.base; dr != 0 {
		g.corr = rate
		g.corrEnd = local + time.Duration(float64(e)/dr)
	}
}
