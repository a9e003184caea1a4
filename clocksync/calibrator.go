package clocksync

import (
	"errors"
	"fmt"
	"time"
)

// Role is a peer's part in clock calibration. The zero value is invalid.
type Role uint8

// Roles.
const (
	RoleUnknown Role = iota
	// RoleLeader: this peer's clock defines game time (for example the
	// session's offerer).
	RoleLeader
	// RoleFollower: this peer's game clock follows the leader's.
	RoleFollower
)

// String returns "leader", "follower" or "Role(n)".
func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	default:
		return fmt.Sprintf("Role(%d)", uint8(r))
	}
}

// Config configures a Calibrator. Zero values give the documented defaults;
// NewCalibrator validates it.
type Config struct {
	// Role must be RoleLeader or RoleFollower, and the two peers must pick
	// different roles.
	Role Role
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

// Calibrator defaults.
const (
	DefaultCalibrationInterval = 62500 * time.Microsecond
	DefaultMatchInterval       = 250 * time.Millisecond
	DefaultPingTimeout         = 2 * time.Second
	DefaultMinSamples          = 8
	DefaultSettledDriftPPM     = 10
)

func (c Config) resolve() (Config, error) {
	c.CalibrationInterval = orDefault(c.CalibrationInterval, DefaultCalibrationInterval)
	c.MatchInterval = orDefault(c.MatchInterval, DefaultMatchInterval)
	c.PingTimeout = orDefault(c.PingTimeout, DefaultPingTimeout)
	c.MinSamples = orDefault(c.MinSamples, DefaultMinSamples)
	c.SettledDriftPPM = orDefault(c.SettledDriftPPM, DefaultSettledDriftPPM)
	switch {
	case c.Role != RoleLeader && c.Role != RoleFollower:
		return c, configError("Role", c.Role, "leader or follower")
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

// Errors from Handle, HandlePing and HandlePong (besides *WireError and
// *TimestampError). None of them is fatal: count and carry on.
var (
	// ErrUnknownPong: the pong answers no ping this peer has outstanding
	// (never sent, forgotten, or its echoed t1 does not match).
	ErrUnknownPong = errors.New("clocksync: pong for an unknown ping")
	// ErrDuplicatePong: the ping was already answered.
	ErrDuplicatePong = errors.New("clocksync: duplicate pong")
	// ErrLatePong: the pong came after PingTimeout; the ping counted as lost.
	ErrLatePong = errors.New("clocksync: pong after the ping timed out")
	// ErrRoleConflict: the peer has the same role as this one. Both peers
	// claiming to lead (or to follow) means their game clocks cannot
	// agree; the session must assign the roles.
	ErrRoleConflict = errors.New("clocksync: peer has the same role")
	// ErrNoGameTime: a pong from the leader without game time.
	ErrNoGameTime = errors.New("clocksync: leader's pong carries no game time")
)

// Stats are a Calibrator's counters and current figures.
type Stats struct {
	Role          Role
	Running       bool // StartMatch was called
	Synced        bool
	PingsSent     uint64
	PongsReceived uint64 // valid pongs turned into samples
	PingsAnswered uint64 // pongs sent
	PingsLost     uint64 // unanswered after PingTimeout
	Rejected      uint64 // messages rejected (malformed, unknown, duplicate, late, conflicting)
	RoleConflicts uint64
	Steps         uint64 // forward steps of the running game clock
	RTT           RTTStats
	Estimate      Estimate
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
// for its Estimator, and (on the follower) steers the game clock. It knows
// nothing about transports: the caller carries the bytes, unreliably, in
// both directions, and calls Handle as soon as a message arrives (the
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
// GameClock steps to it before the match and slews to it during it.
//
// A Calibrator is not safe for concurrent use; its hot paths (Poll,
// Handle) do not allocate.
type Calibrator struct {
	cfg   Config
	clock Clock
	est   *Estimator
	game  *GameClock

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
	est, err := NewEstimator(cfg.Estimator)
	if err != nil {
		return nil, err
	}
	game, err := NewGameClock(cfg.GameClock)
	if err != nil {
		return nil, err
	}
	c := &Calibrator{cfg: cfg, clock: clock, est: est, game: game}
	now := clock.Now()
	c.nextPing = now
	if cfg.Role == RoleLeader {
		c.epoch, c.hasEpoch = now, true
		game.Set(now, 0, 0)
	}
	c.stats.Role = cfg.Role
	return c, nil
}

// Role returns the Calibrator's role.
func (c *Calibrator) Role() Role { return c.cfg.Role }

// SetEpoch (leader only) sets the local time at which game time is zero;
// the leader's game clock jumps to match. Call it before the match: the
// follower steps along while calibrating, but once its match runs it only
// steps forward (past StepThreshold) and slews backward.
func (c *Calibrator) SetEpoch(local time.Duration) error {
	if c.cfg.Role != RoleLeader {
		return fmt.Errorf("clocksync: SetEpoch on a %v", c.cfg.Role)
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

// Running reports whether StartMatch was called.
func (c *Calibrator) Running() bool { return c.running }

// Synced reports whether the game clock is usable: always for the leader;
// for the follower once it knows the leader's epoch and has MinSamples
// samples.
func (c *Calibrator) Synced() bool {
	return c.cfg.Role == RoleLeader ||
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

// Estimate returns the estimate of the peer's clock (offset = peer's local
// clock − ours).
func (c *Calibrator) Estimate() Estimate { return c.est.Estimate() }

// RTT returns the round-trip statistics.
func (c *Calibrator) RTT() RTTStats { return c.est.RTT() }

// Stats returns the counters and current figures.
func (c *Calibrator) Stats() Stats {
	s := c.stats
	s.Running = c.running
	s.Synced = c.Synced()
	s.RTT = c.est.RTT()
	s.Estimate = c.est.Estimate()
	s.Steps = c.game.Steps()
	if c.cfg.Role == RoleFollower && c.hasEpoch && c.est.Ready() {
		now := c.clock.Now()
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
	dst = AppendPing(dst, Ping{Seq: c.seq, T1: now, Leader: c.cfg.Role == RoleLeader})
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

// Handle processes a calibration message from the peer. For a ping it
// returns dst with the pong appended, to be sent back at once; for a pong
// it returns nil. Errors are *WireError for malformed input, ErrRoleConflict,
// and the pong errors of HandlePong; a message that errs changes nothing
// but the counters.
func (c *Calibrator) Handle(msg, dst []byte) (reply []byte, err error) {
	k, err := PeekKind(msg)
	if err != nil {
		c.stats.Rejected++
		return nil, err
	}
	if k == KindPing {
		return c.HandlePing(msg, dst)
	}
	return nil, c.HandlePong(msg)
}

// HandlePing answers a ping: it returns dst with the pong appended.
func (c *Calibrator) HandlePing(msg, dst []byte) ([]byte, error) {
	t2 := c.clock.Now()
	p, err := ParsePing(msg)
	if err != nil {
		c.stats.Rejected++
		return nil, err
	}
	leader := c.cfg.Role == RoleLeader
	if p.Leader == leader {
		c.stats.Rejected++
		c.stats.RoleConflicts++
		return nil, ErrRoleConflict
	}
	t3 := c.clock.Now()
	g, ok := c.GameTimeAt(t3)
	c.stats.PingsAnswered++
	return AppendPong(dst, Pong{
		Seq: p.Seq, T1: p.T1, T2: t2, T3: t3,
		Leader: leader, GameValid: ok, Running: c.running, Game: g,
	}), nil
}

// HandlePong turns a pong into a sample and updates the estimate and (on
// the follower) the game clock. Errors: *WireError, ErrRoleConflict,
// ErrUnknownPong, ErrDuplicatePong, ErrLatePong, ErrNoGameTime,
// *TimestampError (see NewSample; also a game time beyond ±2⁶⁰ ns).
func (c *Calibrator) HandlePong(msg []byte) error {
	t4 := c.clock.Now()
	err := c.handlePong(msg, t4)
	if err != nil {
		c.stats.Rejected++
	}
	return err
}

func (c *Calibrator) handlePong(msg []byte, t4 time.Duration) error {
	p, err := ParsePong(msg)
	if err != nil {
		return err
	}
	leader := c.cfg.Role == RoleLeader
	if p.Leader == leader {
		c.stats.RoleConflicts++
		return ErrRoleConflict
	}
	if !leader && !p.GameValid {
		return ErrNoGameTime
	}
	out := &c.pings[p.Seq%outstanding]
	if out.seq != p.Seq || out.t1 != p.T1 || out.state == pingFree {
		return ErrUnknownPong
	}
	switch out.state {
	case pingAnswered:
		return ErrDuplicatePong
	case pingLost:
		return ErrLatePong
	}
	if t4-p.T1 > c.cfg.PingTimeout {
		out.state = pingLost
		c.stats.PingsLost++
		return ErrLatePong
	}
	s, err := NewSample(p.T1, p.T2, p.T3, t4)
	if err != nil {
		return err
	}
	// The game time is as untrusted as the timestamps: one beyond their
	// range would overflow the epoch and throw the game clock decades
	// ahead, never to come back (it does not run backwards).
	if p.GameValid && (p.Game > maxGameTime || p.Game < -maxGameTime) {
		return &TimestampError{p.T1, p.T2, p.T3, t4, fmt.Sprintf("game time %d µs beyond ±2⁶⁰ ns", int64(p.Game))}
	}
	if err := c.est.Add(s); err != nil {
		return err
	}
	out.state = pingAnswered
	c.stats.PongsReceived++

	if leader {
		if p.GameValid {
			// The follower's game time at its t3, against ours at the
			// same instant as our estimate places it.
			at := p.T3 - c.est.OffsetAt(t4)
			c.stats.PeerClockError = p.Game.Duration() - (at - c.epoch)
		}
		return nil
	}
	// The leader's epoch: its local time at game time 0. Game is rounded
	// down to the µs, so the derived epoch wobbles by < 1 µs; ignore that.
	if epoch := p.T3 - p.Game.Duration(); !c.hasEpoch || epoch-c.epoch > time.Microsecond || c.epoch-epoch > time.Microsecond {
		c.epoch, c.hasEpoch = epoch, true
	}
	c.game.Steer(t4, c.target(t4), c.est.Estimate().DriftPPM)
	return nil
}

// target is the follower's estimate of the leader's game time (ns) at
// local time t.
func (c *Calibrator) target(t time.Duration) time.Duration {
	return t + c.est.OffsetAt(t) - c.epoch
}
