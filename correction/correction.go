// Package correction moves the local copy of a remotely owned object toward
// the states its owner sends, so that both peers show the same fight without
// visible jerks.
//
// Each peer simulates the whole world, but is the authority only for what it
// owns. For everything the rival owns, the peer receives timestamped states
// (see physics.Snapshot) and steers its own bodies toward them. A Corrector
// does that for one object (a ragdoll of many bodies, or a single crate),
// body by body. It knows nothing about who owns what or how states travel:
// the caller feeds it the received states (SetTarget) and calls Apply once per
// tick, before the world steps.
//
// # Methods
//
// Four methods are selectable, to compare them (cmd/ragsim plays whole
// matches with each):
//
//   - MethodSnap sets each body to the received state when it arrives
//     (position, angle and velocities). Exact but jerky: every late or
//     reordered packet is a visible jump.
//   - MethodMidpoint moves each body halfway from where it is to the
//     received position and angle when a state arrives: a low-pass filter,
//     still a teleport.
//   - MethodMidpointSpring pulls each body toward the midpoint of where it
//     is and the received position, once per received state: error =
//     midpoint − current; if |error| < MaxSoftError, it pushes the body with
//     a force k·error along the error itself (a spring; normalising the
//     error's direction works badly); otherwise it sets the position to the
//     midpoint (hard snap). During violent events (a large change of
//     velocity between two states, or in the local simulation) the hard path
//     is used for a while. Angles are handled the same way with a torque and
//     MaxSoftAngle. The force acts only in the step that follows a state: a
//     spring without damping, so a body rings around a target that stops.
//   - MethodRagsync (the default) acts every tick, not only when a state
//     arrives:
//     1. Latency compensation: the target is the received state extrapolated
//     by its age (the synced game time now minus the time the owner sent
//     it), using the received velocities, capped at MaxExtrapolation. Between
//     packets the target keeps moving (dead reckoning), so the body is not
//     pulled back toward where the rival was a round trip ago.
//     2. A damped spring per body, with velocity matching: each tick the
//     body gets the impulse that changes its velocity by
//     Δv = min(k·e·h, MaxCorrectionSpeed) + β·ė, where e is the position
//     error, ė the velocity error (target velocity − body velocity), h the
//     tick and β = min(1, 2ζ√k·h) the damping (ζ = DampingRatio). With the
//     defaults β = 1: the body moves at its target's velocity and the
//     position error decays exponentially (time constant 1/(k·h) ≈ 37 ms),
//     so the spring cannot oscillate around a target that has stopped,
//     and the capped pull keeps a large error from popping. The same for
//     angles with angular impulses. Impulses are scaled by each body's
//     mass (and inertia), so one stiffness fits a 5 kg torso and a 1 kg
//     forearm, and the body stays physical: it still collides, and joints
//     still hold, between corrections.
//     3. A hard path for large errors and impacts that moves each body a
//     fraction HardBlend (¼ by default; a midpoint is ½) of the way to the
//     target per tick and takes the target's velocity, so even
//     a hard snap is spread over a few ticks instead of one visible jump.
//
// The defaults were chosen with cmd/ragsim over whole simulated matches; see
// README.md for the figures.
//
// # Divergence
//
// A Monitor watches the size of the error. Single large gaps happen (a hit
// landed on one screen a tick earlier); only a run of consecutive critical
// gaps longer than a set count means the two worlds have really diverged (a
// "position disconnect").
//
// # Units and time
//
// Positions in metres, angles in radians. Time is game time
// (clocksync.GameTime): the clock both peers share, the one that stamps
// physics.Snapshot.Time.
package correction

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ByteArena/box2d"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/physics"
)

// Method selects how a Corrector moves a body toward its owner's state.
type Method uint8

// Methods, described in the package documentation. The zero value,
// MethodUnknown, makes Config use the default, MethodRagsync.
const (
	MethodUnknown        Method = iota
	MethodSnap                  // "snap": set each body to the received state
	MethodMidpoint              // "midpoint": move each body halfway to the received state
	MethodMidpointSpring        // "midpoint-spring": spring toward the midpoint, snap if far
	MethodRagsync               // "ragsync": latency-compensated damped spring, every tick
)

// Methods lists every selectable method, in a stable order.
var Methods = []Method{MethodSnap, MethodMidpoint, MethodMidpointSpring, MethodRagsync}

func (m Method) String() string {
	switch m {
	case MethodSnap:
		return "snap"
	case MethodMidpoint:
		return "midpoint"
	case MethodMidpointSpring:
		return "midpoint-spring"
	case MethodRagsync:
		return "ragsync"
	}
	return fmt.Sprintf("Method(%d)", uint8(m))
}

// ErrUnknownMethod is returned by ParseMethod for a name it does not know.
var ErrUnknownMethod = errors.New("correction: unknown method")

// ParseMethod returns the method named s ("snap", "midpoint",
// "midpoint-spring", "ragsync"; case-insensitive). "seed", the former name
// of MethodMidpointSpring, is accepted too.
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if strings.EqualFold(s, m.String()) {
			return m, nil
		}
	}
	if strings.EqualFold(s, "seed") {
		return MethodMidpointSpring, nil
	}
	return MethodUnknown, fmt.Errorf("%w %q (want snap, midpoint, midpoint-spring or ragsync)", ErrUnknownMethod, s)
}

// perPacket reports whether the method acts only when a new state arrives.
func (m Method) perPacket() bool { return m != MethodRagsync }

// Config tunes a Corrector. The zero value is the default: MethodRagsync with
// the defaults documented on each field.
type Config struct {
	// Method is the correction method. Zero: MethodRagsync.
	Method Method

	// Stiffness is the spring constant k, in 1/s²: the correcting force on a
	// body of mass m with position error e is m·k·e. For
	// MethodMidpointSpring, e is the error to the midpoint. Zero: 3000 for
	// MethodMidpointSpring (its best on cmd/ragsim's broadband and mobile
	// links: softer lags, stiffer oscillates), 1600 for MethodRagsync (with the default damping the position error
	// then closes with a time constant of 1/(k·h) ≈ 37 ms, h = 1/60 s).
	Stiffness float64

	// AngularStiffness is the spring constant for angles, in 1/s²: torque =
	// I·kθ·eθ for rotational inertia I. Zero: the same value as Stiffness.
	AngularStiffness float64

	// DampingRatio ζ of the ragsync spring, which sets the damping
	// c = 2ζ√k. Per tick the damping removes the share β = c·h of the
	// velocity error (velocity matching); β is capped at 1, since removing
	// more than the whole error in a tick would overshoot. With β = 1 the
	// body takes its target's velocity every tick and the position error
	// decays exponentially: no oscillation at all. Zero: 0.75, which with
	// the default stiffness gives β = 1. Lower values let the body keep
	// more of its own (locally simulated) velocity; well below 1 the spring
	// oscillates.
	DampingRatio float64

	// MaxSoftError is the position error in metres above which the hard path
	// is used. Zero: 0.5 m.
	MaxSoftError float64

	// MaxSoftAngle is the angle error in radians above which the hard path is
	// used. Zero: 1 rad (about 57°).
	MaxSoftAngle float64

	// HardBlend is the fraction of the error the ragsync hard path removes
	// per tick. Zero: 0.25, which spreads a snap over a few ticks (a
	// midpoint is 0.5; cmd/ragsim shows 0.25 halves the worst pops for a
	// slightly larger error). 1 snaps in one tick.
	HardBlend float64

	// ImpactDeltaV is the change of a body's velocity, in m/s, that marks a
	// violent event (a hit, a crash): between two consecutive received
	// states, or within one local simulation step. Zero: 6 m/s.
	ImpactDeltaV float64

	// ImpactHold is how long, in game time, the hard path stays on after a
	// violent event. Zero: 100 ms.
	ImpactHold time.Duration

	// MaxCorrectionSpeed caps the speed, in m/s, at which the ragsync
	// spring pulls a body toward its target (the k·e·h part of the velocity
	// change; velocity matching is not capped), so a large error is worked
	// off over several ticks instead of popping. Zero: 4 m/s. Negative: no
	// cap.
	MaxCorrectionSpeed float64

	// Bounds, if not empty, is where a body's extrapolated target may be:
	// the ragsync method clamps the latency-compensated target into it, so
	// a fast state near a wall is not extrapolated through the wall (and
	// the hard path does not drag the body there). Zero: no clamp.
	// ownership.Replicator sets it to the arena's interior.
	Bounds physics.Rect

	// MaxExtrapolation caps the latency compensation of MethodRagsync, in
	// game time: a state older than this is extrapolated only
	// this far: extrapolating a limb's swing further than this overshoots
	// more than it helps (measured with cmd/ragsim). Zero: 60 ms. Negative:
	// no extrapolation.
	MaxExtrapolation time.Duration
}

// tickTime is one physics tick of game time (16.666 ms, rounded down to the
// microsecond).
const tickTime = clocksync.GameTime(1_000_000 / physics.TickRate)

// Defaults; see Config (Config.WithDefaults fills them in).
const (
	defaultMidpointSpringStiffness = 3000.0
	defaultRagsyncStiffness        = 1600.0
	defaultDampingRatio            = 0.75
	defaultMaxSoftError            = 0.5
	defaultMaxSoftAngle            = 1.0
	defaultHardBlend               = 0.25
	defaultImpactDeltaV            = 6.0
	defaultImpactHold              = 100 * time.Millisecond
	defaultMaxExtrapolation        = 60 * time.Millisecond
	defaultMaxCorrectionSpeed      = 4.0
)

// ErrInvalidConfig is wrapped by the errors Config.Validate returns.
var ErrInvalidConfig = errors.New("correction: invalid config")

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Method == MethodUnknown {
		c.Method = MethodRagsync
	}
	if c.Stiffness == 0 {
		c.Stiffness = defaultRagsyncStiffness
		if c.Method == MethodMidpointSpring {
			c.Stiffness = defaultMidpointSpringStiffness
		}
	}
	if c.AngularStiffness == 0 {
		c.AngularStiffness = c.Stiffness
	}
	if c.DampingRatio == 0 {
		c.DampingRatio = defaultDampingRatio
	}
	if c.MaxSoftError == 0 {
		c.MaxSoftError = defaultMaxSoftError
	}
	if c.MaxSoftAngle == 0 {
		c.MaxSoftAngle = defaultMaxSoftAngle
	}
	if c.HardBlend == 0 {
		c.HardBlend = defaultHardBlend
	}
	if c.ImpactDeltaV == 0 {
		c.ImpactDeltaV = defaultImpactDeltaV
	}
	if c.ImpactHold == 0 {
		c.ImpactHold = defaultImpactHold
	}
	if c.MaxCorrectionSpeed == 0 {
		c.MaxCorrectionSpeed = defaultMaxCorrectionSpeed
	}
	if c.MaxExtrapolation == 0 {
		c.MaxExtrapolation = defaultMaxExtrapolation
	}
	return c
}

// Validate reports the first unusable field of c (after defaults).
func (c Config) Validate() error {
	c = c.WithDefaults()
	if c.Method > MethodRagsync {
		return fmt.Errorf("%w: Method = %d", ErrInvalidConfig, c.Method)
	}
	for _, f := range [...]struct {
		name   string
		v, max float64
	}{
		{"Stiffness", c.Stiffness, 10000},
		{"AngularStiffness", c.AngularStiffness, 10000},
		{"DampingRatio", c.DampingRatio, 100},
		{"MaxSoftError", c.MaxSoftError, 1000},
		{"MaxSoftAngle", c.MaxSoftAngle, 100},
		{"HardBlend", c.HardBlend, 1},
		{"ImpactDeltaV", c.ImpactDeltaV, 10000},
	} {
		if !(f.v > 0) || f.v > f.max { // also rejects NaN
			return fmt.Errorf("%w: %s = %g, want (0, %g]", ErrInvalidConfig, f.name, f.v, f.max)
		}
	}
	if c.ImpactHold < 0 {
		return fmt.Errorf("%w: ImpactHold = %v, want >= 0", ErrInvalidConfig, c.ImpactHold)
	}
	if math.IsNaN(c.MaxCorrectionSpeed) || c.MaxCorrectionSpeed > 1000 {
		return fmt.Errorf("%w: MaxCorrectionSpeed = %g, want <= 1000 (negative: no cap)", ErrInvalidConfig, c.MaxCorrectionSpeed)
	}
	if c.MaxExtrapolation > 2*time.Second {
		return fmt.Errorf("%w: MaxExtrapolation = %v, want <= 2s", ErrInvalidConfig, c.MaxExtrapolation)
	}
	if b := c.Bounds; !b.Min.IsFinite() || !b.Max.IsFinite() {
		return fmt.Errorf("%w: Bounds %v not finite", ErrInvalidConfig, b)
	}
	return nil
}

// Stats counts what a Corrector (or several, added up) did.
type Stats struct {
	// Targets is the number of states received (SetTarget calls accepted).
	Targets uint64
	// SoftCorrections counts body-ticks corrected with the spring.
	SoftCorrections uint64
	// HardSnaps counts body-ticks corrected on the hard path (position set).
	HardSnaps uint64
	// HardTicks counts corrections of the object (Apply calls that acted)
	// in which at least one body took the hard path: what a player sees as
	// one snap of the object.
	HardTicks uint64
	// Impacts counts violent events that switched an object to the hard
	// path.
	Impacts uint64
	// Bodies is the number of bodies of the object.
	Bodies int
	// Error is the position error of each body, in metres, measured at the
	// last Apply before correcting: distance from the body to its target
	// (the latency-compensated target for MethodRagsync, the last received
	// state for the others).
	Error [physics.MaxBodiesPerObject]float64
	// AngleError is the absolute angle error of each body, in radians.
	AngleError [physics.MaxBodiesPerObject]float64
	// MaxError is the largest Error of the last Apply.
	MaxError float64
}

// Add accumulates the counters of o into s (the per-body errors are not
// added; MaxError becomes the larger of the two).
func (s *Stats) Add(o Stats) {
	s.Targets += o.Targets
	s.SoftCorrections += o.SoftCorrections
	s.HardSnaps += o.HardSnaps
	s.HardTicks += o.HardTicks
	s.Impacts += o.Impacts
	s.MaxError = math.Max(s.MaxError, o.MaxError)
}

// Corrector steers the bodies of one remotely owned object toward the states
// its owner sends. It is not safe for concurrent use; it is meant to be
// driven from the game's tick. A Corrector allocates only in New.
type Corrector struct {
	cfg Config
	n   int

	// The latest received state and the game time its owner sent it at.
	target     [physics.MaxBodiesPerObject]physics.BodyState
	targetTime clocksync.GameTime
	hasTarget  bool
	pending    bool // a new target has not been applied yet (per-packet methods)

	// Velocity of each body right after the last Apply, to detect violent
	// events in the local simulation step that followed.
	lastVel    [physics.MaxBodiesPerObject]physics.Vec2
	hasLastVel bool

	impactUntil clocksync.GameTime // game time until which the hard path is forced
	impactArmed bool               // an impact was detected and its hold not yet started

	stats Stats
}

// New returns a Corrector for an object of n bodies (1 ≤ n ≤
// physics.MaxBodiesPerObject).
func New(cfg Config, n int) (*Corrector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if n < 1 || n > physics.MaxBodiesPerObject {
		return nil, fmt.Errorf("%w: %d bodies, want 1..%d", ErrInvalidConfig, n, physics.MaxBodiesPerObject)
	}
	c := &Corrector{cfg: cfg.WithDefaults(), n: n}
	c.stats.Bodies = n
	return c, nil
}

// Stats returns what the corrector did so far and the errors of the last
// Apply.
func (c *Corrector) Stats() Stats { return c.stats }

// HasTarget reports whether a state has been received since New or Reset.
func (c *Corrector) HasTarget() bool { return c.hasTarget }

// Target returns the last received state of body i and the game time it was
// sent at.
func (c *Corrector) Target(i int) (physics.BodyState, clocksync.GameTime) {
	return c.target[i], c.targetTime
}

// Reset forgets the received state and the impact detector (for example
// after the object changed owner). Counters are kept.
func (c *Corrector) Reset() {
	c.hasTarget, c.pending, c.hasLastVel, c.impactArmed = false, false, false, false
	c.impactUntil = 0
}

// TargetError is returned by SetTarget for a state with a NaN or infinite
// value: which body, which field and the value. It wraps
// physics.ErrNotFinite.
type TargetError struct {
	Body  int
	Field string
	Value float64
	Err   error
}

func (e *TargetError) Error() string {
	return fmt.Sprintf("correction: target body %d: %s = %g: %v", e.Body, e.Field, e.Value, e.Err)
}

func (e *TargetError) Unwrap() error { return e.Err }

// nonFinite returns the first NaN or infinite field of s, if any.
func nonFinite(s *physics.BodyState) (string, float64, bool) {
	for _, f := range [...]struct {
		name string
		v    float64
	}{{"pos.x", s.Pos.X}, {"pos.y", s.Pos.Y}, {"angle", s.Angle}, {"vel.x", s.Vel.X}, {"vel.y", s.Vel.Y}, {"angvel", s.AngVel}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return f.name, f.v, true
		}
	}
	return "", 0, false
}

// SetTarget records a state received from the object's owner, sent at game
// time sentAt. The caller has already filtered it (newer than the last
// one, not too old) and validated it against the world's limits (in
// bounds, plausible speeds); SetTarget checks the body count, and that
// every value is finite (a *TargetError wrapping physics.ErrNotFinite
// otherwise), so nothing non-finite can reach box2d through it. A refused
// state leaves the previous target in place. It copies states and
// allocates nothing (but for the error).
//
// A large change of velocity against the previous target marks a violent
// event (see Config.ImpactDeltaV).
func (c *Corrector) SetTarget(states []physics.BodyState, sentAt clocksync.GameTime) error {
	if len(states) != c.n {
		return fmt.Errorf("correction: target: %w: got %d, want %d", physics.ErrBodyCount, len(states), c.n)
	}
	for i := range states {
		if field, v, bad := nonFinite(&states[i]); bad {
			return &TargetError{Body: i, Field: field, Value: v, Err: physics.ErrNotFinite}
		}
	}
	if c.hasTarget {
		dv2 := c.cfg.ImpactDeltaV * c.cfg.ImpactDeltaV
		for i := range c.n {
			d := states[i].Vel.Sub(c.target[i].Vel)
			if d.Dot(d) > dv2 {
				c.impactArmed = true
				break
			}
		}
	}
	copy(c.target[:c.n], states)
	c.targetTime = sentAt
	c.hasTarget = true
	c.pending = true
	c.stats.Targets++
	return nil
}

// Apply corrects bodies (the object's bodies, in body index order, len == n)
// at game time now. Call it once per tick, before the world steps, and
// never during a step. Per-packet methods (snap, midpoint, midpoint-spring) act only
// when a new target arrived since the last Apply; ragsync acts every tick.
// Apply reports whether it corrected (and so measured the errors in Stats).
// It allocates nothing.
func (c *Corrector) Apply(bodies []*box2d.B2Body, now clocksync.GameTime) (acted bool) {
	if len(bodies) != c.n {
		panic(fmt.Sprintf("correction: Apply with %d bodies, corrector has %d", len(bodies), c.n))
	}
	// A violent event in the local step since the last Apply?
	if c.hasLastVel {
		dv2 := c.cfg.ImpactDeltaV * c.cfg.ImpactDeltaV
		for i, b := range bodies {
			d := physics.Vec2{X: b.M_linearVelocity.X - c.lastVel[i].X, Y: b.M_linearVelocity.Y - c.lastVel[i].Y}
			if d.Dot(d) > dv2 {
				c.impactArmed = true
				break
			}
		}
	}
	if c.impactArmed {
		c.impactArmed = false
		c.impactUntil = now.Add(c.cfg.ImpactHold)
		c.stats.Impacts++
	}
	impact := now < c.impactUntil

	if c.hasTarget && (c.pending || !c.cfg.Method.perPacket()) {
		c.pending = false
		acted = true
		hard := c.stats.HardSnaps
		switch c.cfg.Method {
		case MethodSnap:
			c.applySnap(bodies)
		case MethodMidpoint:
			c.applyMidpoint(bodies)
		case MethodMidpointSpring:
			c.applyMidpointSpring(bodies, impact)
		default:
			c.applyRagsync(bodies, now, impact)
		}
		if c.stats.HardSnaps != hard {
			c.stats.HardTicks++
		}
	}
	for i, b := range bodies {
		c.lastVel[i] = physics.Vec2{X: b.M_linearVelocity.X, Y: b.M_linearVelocity.Y}
	}
	c.hasLastVel = true
	return acted
}

// recordError stores the error of body i before correcting it.
func (c *Corrector) recordError(i int, e physics.Vec2, ea float64) float64 {
	d := e.Len()
	c.stats.Error[i] = d
	c.stats.AngleError[i] = math.Abs(ea)
	if d > c.stats.MaxError {
		c.stats.MaxError = d
	}
	return d
}

func (c *Corrector) beginApply() { c.stats.MaxError = 0 }

func (c *Corrector) applySnap(bodies []*box2d.B2Body) {
	c.beginApply()
	for i, b := range bodies {
		t := &c.target[i]
		c.recordError(i, t.Pos.Sub(pos(b)), physics.AngleDiff(t.Angle, b.M_sweep.A))
		setTransform(b, t.Pos, t.Angle)
		b.M_linearVelocity = box2d.B2Vec2{X: t.Vel.X, Y: t.Vel.Y}
		b.M_angularVelocity = t.AngVel
		b.SetAwake(true)
		c.stats.HardSnaps++
	}
}

func (c *Corrector) applyMidpoint(bodies []*box2d.B2Body) {
	c.beginApply()
	for i, b := range bodies {
		t := &c.target[i]
		e := t.Pos.Sub(pos(b))
		ea := physics.AngleDiff(t.Angle, b.M_sweep.A)
		c.recordError(i, e, ea)
		setTransform(b, pos(b).Add(e.Scale(0.5)), b.M_sweep.A+ea*0.5)
		b.SetAwake(true)
		c.stats.HardSnaps++
	}
}

// applyMidpointSpring is MethodMidpointSpring, once per received state. It
// is the applyState of «Сетевой слой движка физики» ("The network layer of a
// physics engine", habr.com), the post-mortem of the box2d ragdoll fighting
// game this library's design comes from.
func (c *Corrector) applyMidpointSpring(bodies []*box2d.B2Body, impact bool) {
	c.beginApply()
	k, ka := c.cfg.Stiffness, c.cfg.AngularStiffness
	for i, b := range bodies {
		t := &c.target[i]
		p := pos(b)
		full := t.Pos.Sub(p)
		fullA := physics.AngleDiff(t.Angle, b.M_sweep.A)
		c.recordError(i, full, fullA)
		// target = (this + received) / 2; error = target - this.
		e := full.Scale(0.5)
		ea := fullA * 0.5
		if !impact && e.Len() < c.cfg.MaxSoftError && math.Abs(ea) < c.cfg.MaxSoftAngle {
			m := b.M_mass
			b.ApplyForceToCenter(box2d.B2Vec2{X: m * k * e.X, Y: m * k * e.Y}, true)
			b.ApplyTorque(b.M_I*ka*ea, true)
			c.stats.SoftCorrections++
			continue
		}
		setTransform(b, p.Add(e), b.M_sweep.A+ea)
		b.SetAwake(true)
		c.stats.HardSnaps++
	}
}

// applyRagsync is ragsync's method; see the package documentation.
func (c *Corrector) applyRagsync(bodies []*box2d.B2Body, now clocksync.GameTime, impact bool) {
	c.beginApply()
	// The body's state now is the result of the step that began one tick
	// ago; the step about to run carries it to now + 1 tick. The target is
	// the owner's state at the same moment as the body's: one tick before
	// now.
	age := now - c.targetTime - tickTime
	if maxAge := clocksync.GameTimeOf(c.cfg.MaxExtrapolation); age < 0 || maxAge < 0 {
		age = 0
	} else if age > maxAge {
		age = maxAge
	}
	dt := float64(age) * 1e-6
	k, ka := c.cfg.Stiffness, c.cfg.AngularStiffness
	const h = 1.0 / physics.TickRate
	// Velocity matching per tick, at most the whole velocity error.
	beta := min(1, 2*c.cfg.DampingRatio*math.Sqrt(k)*h)
	betaA := min(1, 2*c.cfg.DampingRatio*math.Sqrt(ka)*h)
	maxPull := c.cfg.MaxCorrectionSpeed
	for i, b := range bodies {
		t := &c.target[i]
		tp := c.clamp(t.Pos.Add(t.Vel.Scale(dt)))
		ta := t.Angle + t.AngVel*dt
		p := pos(b)
		e := tp.Sub(p)
		ea := physics.AngleDiff(ta, b.M_sweep.A)
		d := c.recordError(i, e, ea)
		v := physics.Vec2{X: b.M_linearVelocity.X, Y: b.M_linearVelocity.Y}
		if impact || d > c.cfg.MaxSoftError || math.Abs(ea) > c.cfg.MaxSoftAngle {
			a := c.cfg.HardBlend
			setTransform(b, p.Add(e.Scale(a)), b.M_sweep.A+ea*a)
			b.M_linearVelocity = box2d.B2Vec2{X: t.Vel.X, Y: t.Vel.Y}
			b.M_angularVelocity = t.AngVel
			b.SetAwake(true)
			c.stats.HardSnaps++
			continue
		}
		// Damped spring with velocity matching, applied as an impulse for
		// this tick: Δv = min(k·e·h, cap) + β·ė.
		ev := t.Vel.Sub(v)
		pull := e.Scale(k * h)
		if l := pull.Len(); maxPull > 0 && l > maxPull {
			pull = pull.Scale(maxPull / l)
		}
		dv := pull.Add(ev.Scale(beta))
		dw := ka*ea*h + betaA*(t.AngVel-b.M_angularVelocity)
		m := b.M_mass
		b.ApplyLinearImpulseToCenter(box2d.B2Vec2{X: m * dv.X, Y: m * dv.Y}, true)
		b.ApplyAngularImpulse(b.M_I*dw, true)
		c.stats.SoftCorrections++
	}
}

// clamp keeps an extrapolated target position inside Config.Bounds.
func (c *Corrector) clamp(p physics.Vec2) physics.Vec2 {
	b := c.cfg.Bounds
	if !(b.Max.X > b.Min.X && b.Max.Y > b.Min.Y) {
		return p
	}
	p.X = min(max(p.X, b.Min.X), b.Max.X)
	p.Y = min(max(p.Y, b.Min.Y), b.Max.Y)
	return p
}

// pos returns the origin of b, reading box2d's fields (its getters copy the
// whole body).
func pos(b *box2d.B2Body) physics.Vec2 { return physics.Vec2{X: b.M_xf.P.X, Y: b.M_xf.P.Y} }

func setTransform(b *box2d.B2Body, p physics.Vec2, angle float64) {
	b.SetTransform(box2d.B2Vec2{X: p.X, Y: p.Y}, angle)
}
