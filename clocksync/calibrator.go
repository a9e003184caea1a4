package clocksync

import (
	"errors"
	"fmt"
	"time"

	"github.com/ragsync/ragsync/internal/clockwire"
)

// Config configures a Calibrator. Zero values give the documented defaults;
// NewCalibrator validates it.
type Config struct {
	// Leader makes this peer the leader, whose clock defines game time;
	// otherwise it is the follower, whose game clock follows the leader's.
	// Exactly one of the two peers must lead (a p2p session makes its
	// offerer the leader).
	Leader bool
	// CalibrationInterval is the ping period before the match. Zero:
	// 62.5 ms (16 Hz). Range [1 ms, 10 s].
	CalibrationInterval time.Duration
	// MatchInterval is the ping period once the match runs and the drift
	// is known to within SettledDriftPPM; until then pings continue at
	// CalibrationInterval (on a jittery link the drift takes some tens of
	// seconds to pin down, and until it is, more samples keep the offset
	// close). Zero: 250 ms (4 Hz). Range [1 ms, 10 s].
	MatchInterval time.Duration
	// SettledDriftPPM is the drift uncertainty (Estimate.
	// DriftUncertaintyPPM) below which the slower MatchInterval is used.
	// Zero: 10 ppm. Negative: always use MatchInterval in the match.
	SettledDriftPPM float64
	// PingTimeout: a ping not answered within it counts as lost, and a pong
	// arriving later is rejected. Zero: 2 s. Range [10 ms, 1 min].
	PingTimeout time.Duration
	// MinSamples is how many samples a follower needs before Synced. Zero:
	// 8.
	MinSamples int
	// Estimator and GameClock configure the follower's estimator and game
	// clock (the leader uses its estimator for RTT and diagnostics only).
	Estimator EstimatorConfig
	GameClock GameClockConfig
}

// Calibrator defaults (see Config).
const (
	defaultCalibrationInterval = 62500 * time.Microsecond
	defaultMatchInterval       = 250 * time.Millisecond
	defaultPingTimeout         = 2 * time.Second
	defaultMinSamples          = 8
	defaultSettledDriftPPM     = 10
)

func (c Config) resolve() (Config, error) {
	c.CalibrationInterval = orDefault(c.CalibrationInterval, defaultCalibrationInterval)
	c.MatchInterval = orDefault(c.MatchInterval, defaultMatchInterval)
	c.PingTimeout = orDefault(c.PingTimeout, defaultPingTimeout)
	c.MinSamples = orDefault(c.MinSamples, defaultMinSamples)
	c.SettledDriftPPM = orDefault(c.SettledDriftPPM, defaultSettledDriftPPM)
	switch {
	case c.CalibrationInterval < time.Millisecond || c.CalibrationInterval > 10*time.Second:
		return c, configError("CalibrationInterval", c.CalibrationInterval, "[1ms, 10s]")
	case c.MatchInterval < time.Millisecond || c.MatchInterval > 10*time.Second:
		return c, configError("MatchInterval", c.MatchInterval, "[1ms, 10s]")
	case c.PingTimeout < 10*time.Millisecond || c.PingTimeout > time.Minute:
		return c, configError("PingTimeout", c.PingTimeout, "[10ms, 1m]")
	case c.SettledDriftPPM != c.SettledDriftPPM: // NaN
		return c, configError("SettledDriftPPM", c.SettledDriftPPM, "a number")
	case c.MinSamples < 1 || c.MinSamples > 1000:
		return c, configError("MinSamples", c.MinSamples, "[1, 1000]")
	}
	return c, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Magic is the first byte of every calibration message. A game that
// carries the Calibrator's messages on the same link as its own packets
// tells them apart by it: no other ragsync packet starts with 0xC5.
const Magic = clockwire.Magic

// ErrMalformed is matched (errors.Is) by the error Handle, HandlePing and
// HandlePong return for a message that is not a well-formed calibration
// message: wrong length, magic byte, kind or flags. The error carries the
// start of the offending message.
var ErrMalformed = clockwire.ErrMalformed

// Errors from Handle, HandlePing and HandlePong (besides ErrMalformed and
// *TimestampError). None of them is fatal: count and carry on.
var (
	// ErrUnknownPong: the pong answers no ping this peer has outstanding
	// (never sent, forgotten, or its echoed t1 does not match).
	ErrUnknownPong = errors.New("clocksync: pong for an unknown ping")
	// ErrDuplicatePong: the ping was already answered.
	ErrDuplicatePong = errors.New("clocksync: duplicate pong")
	// ErrLatePong: the pong came after PingTimeout; the ping counted as lost.
	ErrLatePong = errors.New("clocksync: pong after the ping timed out")
	// ErrRoleConflict: the peer leads, or follows, as this one does. Both
	// peers claiming to lead (or to follow) means their game clocks cannot
	// agree; whoever pairs them must make exactly one the leader.
	ErrRoleConflict = errors.New("clocksync: peer leads or follows as this one does")
	// ErrNoGameTime: a pong from the leader without game time.
	ErrNoGameTime = errors.New("clocksync: leader's pong carries no game time")
)

// Stats are a Calibrator's counters and current figures.
type Stats struct {
	Leader  bool // Config.Leader
	Running bool // StartMatch was called
	Synced  bool // see Calibrator.Synced
	// Calibrated: the estimate has Config.MinSamples samples, on either
	// peer (the leader is Synced from the start, but its estimate of the
	// follower's clock takes as many samples as the follower's).
	Calibrated    bool
	PingsSent     uint64
	PongsReceived uint64 // valid pongs turned into samples
	PingsAnswered uint64 // pongs sent
	PingsLost     uint64 // unanswered after PingTimeout
	Rejected      uint64 // messages rejected (malformed, unknown, duplicate, late, conflicting)
	RoleConflicts uint64
	Steps         uint64 // forward steps of the running game clock
	// RTT is the round trip of the exchanges, without the responder's
	// processing time (Sample.Delay).
	RTT RTTStats
	// Estimate is the estimate of the peer's clock (offset = peer's local
	// clock − ours).
	Estimate Estimate
	// ClockError (follower) is the estimated leader game time minus ours
	// now: the error the game clock is still slewing away.
	ClockError time.Duration
	// PeerClockError (leader) is the follower's game clock minus ours as
	// the latest pong showed it. It is blind to path asymmetry, exactly
	// like the follower's own estimate, so it reads ≈ 0 even when both
	// are off by half the asymmetry.
	PeerClockError time.Duration
}

// ping is an outstanding ping.
type ping struct {
	seq   uint32
	t1    time.Duration
	state uint8
}

const (
	pingFree uint8 = iota
	pingPending
	pingAnswered
	pingLost
	outstanding = 64 // must be a power of two
)

// Calibrator drives the clock calibration of one peer: it says when to
// ping, builds pings, answers the peer's pings, turns pongs into samples
// for its offset estimate and RTT statistics, and (on the follower) steers
// the game clock. It knows nothing about transports: the caller carries
// the bytes, unreliably, in both directions, and calls Handle as soon as a message arrives (the
// receive time is read from the Clock then, so delays in calling Handle
// count as network delay).
//
// Game time: the leader's game time is its local clock minus an epoch (its
// clock reading when the Calibrator was made; see SetEpoch). Every pong
// from the leader carries its game time at t3, from which the follower
// learns the epoch, so the follower's target game time at local time t is
//
//	t + θ̂(t) − epoch
//
// with θ̂ the estimated offset of the leader's clock. The follower's
// game clock steps to it before the match and slews to it during it.
//
// A Calibrator is not safe for concurrent use; its hot paths (Poll,
// Handle) do not allocate.
type Calibrator struct {
	cfg   Config
	clock Clock
	est   *estimator
	game  *gameClock
	rtt   RTTEstimator

	running  bool
	epoch    time.Duration // leader: own; follower: the leader's, once known
	hasEpoch bool

	seq      uint32
	nextPing time.Duration
	pings    [outstanding]ping

	stats Stats
}

// NewCalibrator returns a Calibrator for cfg on clock, or an error wrapping
// ErrInvalidConfig. The first ping is due at once.
func NewCalibrator(cfg Config, clock Clock) (*Calibrator, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if clock == nil {
		return nil, configError("clock", nil, "a Clock")
	}
	est, err := newEstimator(cfg.Estimator)
	if err != nil {
		return nil, err
	}
	game, err := newGameClock(cfg.GameClock)
	if err != nil {
		return nil, err
	}
	c := &Calibrator{cfg: cfg, clock: clock, est: est, game: game}
	now := clock.Now()
	c.nextPing = now
	if cfg.Leader {
		c.epoch, c.hasEpoch = now, true
		game.Set(now, 0, 0)
	}
	c.stats.Leader = cfg.Leader
	return c, nil
}

// SetEpoch (leader only) sets the local time at which game time is zero;
// the leader's game clock jumps to match. Call it before the match: the
// follower steps along while calibrating, but once its match runs it only
// steps forward (past StepThreshold) and slews backward.
func (c *Calibrator) SetEpoch(local time.Duration) error {
	if !c.cfg.Leader {
		return errors.New("clocksync: SetEpoch on the follower")
	}
	c.epoch = local
	c.game.Set(c.clock.Now(), c.clock.Now()-local, 0)
	return nil
}

// StartMatch switches to the match: pings at MatchInterval once the drift
// is settled (see Config.MatchInterval), and (follower) a game clock that
// from now on never runs backwards. The next ping is not delayed.
func (c *Calibrator) StartMatch() {
	c.running = true
	c.game.Start()
}

// Synced reports whether the game clock is usable: always for the leader;
// for the follower once it knows the leader's epoch and has MinSamples
// samples.
func (c *Calibrator) Synced() bool {
	return c.cfg.Leader ||
		c.hasEpoch && c.game.Valid() && c.est.Estimate().Samples >= c.cfg.MinSamples
}

// GameTime returns the game time now, and whether it is synced (see
// Synced). It is 0 until a follower has heard from the leader.
func (c *Calibrator) GameTime() (GameTime, bool) {
	return c.GameTimeAt(c.clock.Now())
}

// GameTimeAt returns the game time at local time local (see GameTime).
func (c *Calibrator) GameTimeAt(local time.Duration) (GameTime, bool) {
	return GameTimeOf(c.game.At(local)), c.Synced()
}

// Unanswered is how many pings are in flight: sent, and neither answered
// by a valid pong nor given up as lost. It is Stats' PingsSent −
// PongsReceived − PingsLost, without the cost of Stats.
func (c *Calibrator) Unanswered() uint64 {
	return c.stats.PingsSent - c.stats.PongsReceived - c.stats.PingsLost
}

// Stats returns the counters and current figures.
func (c *Calibrator) Stats() Stats {
	s := c.stats
	s.Running = c.running
	s.Synced = c.Synced()
	s.Calibrated = c.est.Estimate().Samples >= c.cfg.MinSamples
	now := c.clock.Now()
	s.RTT = c.rtt.Stats(now)
	s.Estimate = c.est.Estimate()
	s.Steps = c.game.Steps()
	if !c.cfg.Leader && c.hasEpoch && c.est.Ready() {
		s.ClockError = c.target(now) - c.game.At(now)
	}
	return s
}

func (c *Calibrator) interval() time.Duration {
	if c.running && c.settled() {
		return c.cfg.MatchInterval
	}
	return c.cfg.CalibrationInterval
}

// settled reports whether the drift is known well enough for the slow
// match ping rate.
func (c *Calibrator) settled() bool {
	if c.cfg.SettledDriftPPM < 0 {
		return true
	}
	e := c.est.Estimate()
	return e.Drifting && e.DriftUncertaintyPPM <= c.cfg.SettledDriftPPM
}

// NextPing returns the local time at which the next ping is due.
func (c *Calibrator) NextPing() time.Duration { return c.nextPing }

// Poll appends a ping to dst and returns it if one is due, or returns nil;
// wait is the time until the next ping is due (> 0). Call it from the game
// loop or a timer. Pings go out every CalibrationInterval before the
// match, and every MatchInterval in it once the drift is settled.
func (c *Calibrator) Poll(dst []byte) (msg []byte, wait time.Duration) {
	now := c.clock.Now()
	if now >= c.nextPing {
		msg = c.AppendPing(dst)
	}
	return msg, c.nextPing - now
}

// AppendPing appends a ping stamped now to dst, whether or not one is due
// (for example right after a transport switch), and schedules the next one.
func (c *Calibrator) AppendPing(dst []byte) []byte {
	now := c.clock.Now()
	c.expire(now)
	i := c.seq % outstanding
	if c.pings[i].state == pingPending {
		c.stats.PingsLost++
	}
	c.pings[i] = ping{seq: c.seq, t1: now, state: pingPending}
	dst = clockwire.AppendPing(dst, clockwire.Ping{Seq: c.seq, T1: now, Leader: c.cfg.Leader})
	c.seq++
	c.nextPing = now + c.interval()
	c.stats.PingsSent++
	return dst
}

// expire marks pings older than PingTimeout as lost.
func (c *Calibrator) expire(now time.Duration) {
	for i := range c.pings {
		if p := &c.pings[i]; p.state == pingPending && now-p.t1 > c.cfg.PingTimeout {
			p.state = pingLost
			c.stats.PingsLost++
		}
	}
}

// Handle processes a calibration message from the peer (one whose first
// byte is Magic). For a ping it returns dst with the pong appended, to be
// sent back at once; for a pong it returns nil. Errors: ErrMalformed,
// ErrRoleConflict, and the pong errors of HandlePong; a message that errs
// changes nothing but the counters.
func (c *Calibrator) Handle(msg, dst []byte) (reply []byte, err error) {
	k, err := clockwire.PeekKind(msg)
	if err != nil {
		c.stats.Rejected++
		return nil, err
	}
	if k == clockwire.KindPing {
		return c.HandlePing(msg, dst)
	}
	_, err = c.HandlePong(msg)
	return nil, err
}

// HandlePing answers a ping: it returns dst with the pong appended.
// Errors: ErrMalformed (also for a pong), ErrRoleConflict.
func (c *Calibrator) HandlePing(msg, dst []byte) ([]byte, error) {
	t2 := c.clock.Now()
	p, err := clockwire.ParsePing(msg)
	if err != nil {
		c.stats.Rejected++
		return nil, err
	}
	leader := c.cfg.Leader
	if p.Leader == leader {
		c.stats.Rejected++
		c.stats.RoleConflicts++
		return nil, ErrRoleConflict
	}
	t3 := c.clock.Now()
	g, ok := c.GameTimeAt(t3)
	c.stats.PingsAnswered++
	return clockwire.AppendPong(dst, clockwire.Pong{
		Seq: p.Seq, T1: p.T1, T2: t2, T3: t3,
		Leader: leader, GameValid: ok, Running: c.running, Game: int64(g),
	}), nil
}

// HandlePong turns a pong into a sample, updates the estimate, the RTT
// statistics and (on the follower) the game clock, and returns the sample:
// the exchange's round trip (Delay, also fed to Stats.RTT) and clock offset.
// Errors: ErrMalformed (also for a ping), ErrRoleConflict, ErrUnknownPong,
// ErrDuplicatePong, ErrLatePong, ErrNoGameTime, *TimestampError (timestamps
// no real exchange can produce, a game time beyond ±2⁶⁰ ns, or a local
// clock that went backwards).
func (c *Calibrator) HandlePong(msg []byte) (Sample, error) {
	t4 := c.clock.Now()
	s, err := c.handlePong(msg, t4)
	if err != nil {
		c.stats.Rejected++
	}
	return s, err
}

func (c *Calibrator) handlePong(msg []byte, t4 time.Duration) (Sample, error) {
	p, err := clockwire.ParsePong(msg)
	if err != nil {
		return Sample{}, err
	}
	leader := c.cfg.Leader
	if p.Leader == leader {
		c.stats.RoleConflicts++
		return Sample{}, ErrRoleConflict
	}
	if !leader && !p.GameValid {
		return Sample{}, ErrNoGameTime
	}
	out := &c.pings[p.Seq%outstanding]
	if out.seq != p.Seq || out.t1 != p.T1 || out.state == pingFree {
		return Sample{}, ErrUnknownPong
	}
	switch out.state {
	case pingAnswered:
		return Sample{}, ErrDuplicatePong
	case pingLost:
		return Sample{}, ErrLatePong
	}
	if t4-p.T1 > c.cfg.PingTimeout {
		out.state = pingLost
		c.stats.PingsLost++
		return Sample{}, ErrLatePong
	}
	s, err := newSample(p.T1, p.T2, p.T3, t4)
	if err != nil {
		return Sample{}, err
	}
	// The game time is as untrusted as the timestamps: one beyond their
	// range would overflow the epoch and throw the game clock decades
	// ahead, never to come back (it does not run backwards).
	game := GameTime(p.Game)
	if p.GameValid && (game > maxGameTime || game < -maxGameTime) {
		return Sample{}, &TimestampError{p.T1, p.T2, p.T3, t4, fmt.Sprintf("game time %d µs beyond ±2⁶⁰ ns", p.Game)}
	}
	if err := c.est.Add(s); err != nil {
		// Only a local clock that went backwards gets here.
		return Sample{}, &TimestampError{p.T1, p.T2, p.T3, t4, err.Error()}
	}
	out.state = pingAnswered
	c.stats.PongsReceived++
	c.rtt.Add(s.At, s.Delay)

	if leader {
		if p.GameValid {
			// The follower's game time at its t3, against ours at the
			// same instant as our estimate places it.
			at := p.T3 - c.est.OffsetAt(t4)
			c.stats.PeerClockError = game.Duration() - (at - c.epoch)
		}
		return s, nil
	}
	// The leader's epoch: its local time at game time 0. Game is rounded
	// down to the µs, so the derived epoch wobbles by < 1 µs; ignore that.
	if epoch := p.T3 - game.Duration(); !c.hasEpoch || epoch-c.epoch > time.Microsecond || c.epoch-epoch > time.Microsecond {
		c.epoch, c.hasEpoch = epoch, true
	}
	c.game.Steer(t4, c.target(t4), c.est.Estimate().DriftPPM)
	return s, nil
}

// target is the follower's estimate of the leader's game time (ns) at
// local time t.
func (c *Calibrator) target(t time.Duration) time.Duration {
	return t + c.est.OffsetAt(t) - c.epoch
}
