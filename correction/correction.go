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
// Five methods are selectable, to compare them (cmd/ragsim plays whole
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
//   - MethodRagsync acts every tick, not only when a state arrives:
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
//   - MethodFollow (the default) predicts with the local simulation instead
//     of extrapolating states. The remote object keeps gravity, and a remote
//     fighter follows its owner (physics.Fighter.SetFollowing): its muscles
//     hold the reported action with the owner's input, and its attacks run on
//     the owner's timers from the reported phase plus the report's age
//     (ownership.Replicator sets this up). So between two states the copy
//     moves as its owner does, along arcs its joints allow, and the
//     correction only has to remove what the prediction got wrong:
//     1. Latency compensation against the copy's own past: the corrector
//     keeps about a second of each body's state, and estimates the owner's
//     state now as the received state plus what the body did by itself
//     since the time the state was sent (its motion less the corrections
//     applied since), plus, for root bodies, what the difference between
//     the received velocity and the body's at that time has moved the owner
//     by since (fading with VelocityFade: a jump or a knock seen late).
//     2. Joint-consistent targets: with the object's layout (SetLayout) the
//     root takes its estimated position, every body its estimated angle,
//     and each child the position (and velocity) its joint gives it on its
//     parent, so a correction never pulls a limb off its joint.
//     3. Each tick every body moves PositionGain of the way to its target
//     (position and angle, directly) and changes its velocity by
//     VelocityGain of the velocity error (both less for states older than
//     GainAge); an error above MaxSoftError or MaxSoftAngle moves the whole
//     object to its target at once. Impacts need no special path: the
//     prediction takes them in.
//     4. The physics body is corrected hard, so it collides and strikes where
//     the owner says; what a game draws is a smoothed pose (Offset): each
//     correction's displacement is taken out of the drawn pose and given
//     back at SmoothingMaxStep per tick (more on a slow link, whose
//     corrections are larger), so the drawn pose pops at most that much,
//     within SmoothingMaxOffset of its body. A correction far beyond that
//     (the first state after an outage or a local stall) is eased in over
//     a few ticks, at most 0.3 m a tick, rather than jumped to.
//     5. When no state has arrived for InputHold (an outage), the copy stops
//     predicting and is held, at rest, where it was predicted to be then.
//
// The defaults were chosen with cmd/ragsim over whole simulated matches; see
// docs/MEASUREMENTS.md for the figures.
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
	"github.com/ragsync/ragsync/internal/angle"
	"github.com/ragsync/ragsync/physics"
)

// Method selects how a Corrector moves a body toward its owner's state.
type Method uint8

// Methods, described in the package documentation. The zero value,
// MethodUnknown, makes Config use the default, MethodFollow.
const (
	MethodUnknown        Method = iota
	MethodSnap                  // "snap": set each body to the received state
	MethodMidpoint              // "midpoint": move each body halfway to the received state
	MethodMidpointSpring        // "midpoint-spring": spring toward the midpoint, snap if far
	MethodRagsync               // "ragsync": latency-compensated damped spring, every tick
	MethodFollow                // "follow": predict with the local simulation, correct every tick, draw a smoothed pose
)

// Methods lists every selectable method, in a stable order. It is
// read-only: callers must not modify it (iterate it, or copy it first).
var Methods = []Method{MethodSnap, MethodMidpoint, MethodMidpointSpring, MethodRagsync, MethodFollow}

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
	case MethodFollow:
		return "follow"
	}
	return fmt.Sprintf("Method(%d)", uint8(m))
}

// ErrUnknownMethod is returned by ParseMethod for a name it does not know.
var ErrUnknownMethod = errors.New("correction: unknown method")

// ParseMethod returns the method named s ("snap", "midpoint",
// "midpoint-spring", "ragsync", "follow"; case-insensitive). "seed", the
// former name of MethodMidpointSpring, is accepted too.
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if strings.EqualFold(s, m.String()) {
			return m, nil
		}
	}
	if strings.EqualFold(s, "seed") {
		return MethodMidpointSpring, nil
	}
	return MethodUnknown, fmt.Errorf("%w %q (want snap, midpoint, midpoint-spring, ragsync or follow)", ErrUnknownMethod, s)
}

// perPacket reports whether the method acts only when a new state arrives.
func (m Method) perPacket() bool { return m != MethodRagsync && m != MethodFollow }

// Config tunes a Corrector. The zero value is the default: MethodFollow with
// the defaults documented on each field.
type Config struct {
	// Method is the correction method. Zero: MethodFollow.
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

	// PositionGain is the share of its position and angle error a
	// MethodFollow correction removes per tick. Zero: 0.8.
	PositionGain float64

	// VelocityGain is the share of its velocity and angular velocity error
	// a MethodFollow correction removes per tick. Zero: 0.5.
	VelocityGain float64

	// GainAge is the age of a state (game time) beyond which a MethodFollow
	// correction takes in less of its error per tick: for a state older
	// than GainAge, PositionGain and VelocityGain are scaled by
	// GainAge/age. The older the states, the more a link's jitter and loss
	// make the estimate jump from one state to the next, and the less a
	// tick's estimate should be trusted. Zero: 100 ms. Negative: never
	// scaled.
	GainAge time.Duration

	// SmoothingMaxStep turns on the drawn pose (Corrector.Offset) and says
	// how far, in metres, it may move in one tick beyond its body's own
	// motion (angles: 8 times as many radians). The displacement a
	// correction gives a body is taken out of the drawn pose at once and
	// given back at this rate, so the drawn pose pops at most this much
	// (but see SmoothingMaxOffset), while the physics body, which collides
	// and strikes, stays as close to its owner's state as the correction
	// can put it. On a slow link, whose states arrive more than 90 ms old
	// as a rule, the limit grows in proportion to their usual age (up to
	// 2.5 times): the corrections are larger there, and a drawn pose that
	// took them in at the usual rate would trail its body. Zero: 0.028 m
	// for MethodFollow, no drawn pose for the other methods. Negative: no
	// drawn pose.
	SmoothingMaxStep float64

	// SmoothingMaxOffset is the farthest, in metres, the drawn pose may lag
	// its body for states up to 40 ms old (angles: 2 times as many
	// radians); older states bring larger corrections, and the limit grows
	// in proportion to their age, up to 1.6 times; on a link whose states
	// usually arrive younger it shrinks in proportion, down to 0.3 times.
	// Beyond it the drawn pose jumps to the limit (eases, if far beyond).
	// Zero: 0.1 m.
	SmoothingMaxOffset float64

	// VelocityFade is how long (game time) MethodFollow expects a
	// difference between the velocity of an object's root body and its
	// owner's to last: the time constant with which such a difference, and
	// a velocity correction, fade. MethodFollow moves the root by what the
	// difference it saw in a state has moved the owner by since it was sent
	// (a jump, a hit). Jointed bodies are left to their joints: their
	// muscles undo a velocity difference within a tick. Zero: 40 ms.
	// Negative: no such extrapolation.
	VelocityFade time.Duration

	// InputHold is how long (game time) a remote fighter that follows its
	// owner (MethodFollow) keeps acting on its owner's last state and input
	// when no newer state arrives (a loss burst, an outage); after it, the copy lets go of its controls and stands idle
	// until one does (ownership.Replicator lets go of the controls), and
	// its correction stops predicting and holds it where it was predicted
	// to be then, so the local fight cannot push it about. Zero: 100 ms.
	InputHold time.Duration

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
	defaultPositionGain            = 0.8
	defaultVelocityGain            = 0.5
	defaultSmoothingMaxStep        = 0.028
	defaultSmoothingMaxOffset      = 0.1
	defaultInputHold               = 100 * time.Millisecond
	defaultVelocityFade            = 40 * time.Millisecond
	defaultGainAge                 = 100 * time.Millisecond
)

// ErrInvalidConfig is wrapped by the errors Config.Validate returns.
var ErrInvalidConfig = errors.New("correction: invalid config")

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Method == MethodUnknown {
		c.Method = MethodFollow
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
	if c.PositionGain == 0 {
		c.PositionGain = defaultPositionGain
	}
	if c.VelocityGain == 0 {
		c.VelocityGain = defaultVelocityGain
	}
	if c.SmoothingMaxStep == 0 {
		c.SmoothingMaxStep = -1
		if c.Method == MethodFollow {
			c.SmoothingMaxStep = defaultSmoothingMaxStep
		}
	}
	if c.SmoothingMaxOffset == 0 {
		c.SmoothingMaxOffset = defaultSmoothingMaxOffset
	}
	if c.InputHold == 0 {
		c.InputHold = defaultInputHold
	}
	if c.VelocityFade == 0 {
		c.VelocityFade = defaultVelocityFade
	}
	if c.GainAge == 0 {
		c.GainAge = defaultGainAge
	}
	return c
}

// Validate reports the first unusable field of c (after defaults).
func (c Config) Validate() error {
	c = c.WithDefaults()
	if c.Method > MethodFollow {
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
		{"PositionGain", c.PositionGain, 1},
		{"VelocityGain", c.VelocityGain, 1},
		{"SmoothingMaxOffset", c.SmoothingMaxOffset, 100},
	} {
		if !(f.v > 0) || f.v > f.max { // also rejects NaN
			return fmt.Errorf("%w: %s = %g, want (0, %g]", ErrInvalidConfig, f.name, f.v, f.max)
		}
	}
	if c.ImpactHold < 0 {
		return fmt.Errorf("%w: ImpactHold = %v, want >= 0", ErrInvalidConfig, c.ImpactHold)
	}
	if c.InputHold < 0 || c.InputHold > time.Minute {
		return fmt.Errorf("%w: InputHold = %v, want in [0, 1m]", ErrInvalidConfig, c.InputHold)
	}
	if c.GainAge > 10*time.Second {
		return fmt.Errorf("%w: GainAge = %v, want <= 10s (negative: none)", ErrInvalidConfig, c.GainAge)
	}
	if c.VelocityFade > 10*time.Second {
		return fmt.Errorf("%w: VelocityFade = %v, want <= 10s (negative: none)", ErrInvalidConfig, c.VelocityFade)
	}
	if math.IsNaN(c.SmoothingMaxStep) || c.SmoothingMaxStep > 100 {
		return fmt.Errorf("%w: SmoothingMaxStep = %g, want <= 100 m (negative: no drawn pose)", ErrInvalidConfig, c.SmoothingMaxStep)
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
	// (the latency-compensated target for MethodRagsync and MethodFollow,
	// the last received state for the others).
	Error [physics.MaxBodiesPerObject]float64
	// AngleError is the absolute angle error of each body, in radians.
	AngleError [physics.MaxBodiesPerObject]float64
	// MaxError is the largest Error of the last Apply.
	MaxError float64
	// Pop is how far the last Apply itself displaced each body, in metres:
	// the position it set (a teleport) plus the velocity change and force
	// it applied carried over one tick (the displacement they add to the
	// step that follows). What the correction does to a body in one tick,
	// apart from the body's own motion: what the eye sees as a pop. With a
	// drawn pose (Config.SmoothingMaxStep), it is the drawn pose's
	// displacement instead: what is given back of its offset. Zero for a
	// tick in which the corrector did not act (and gave nothing back).
	Pop [physics.MaxBodiesPerObject]float64
	// MaxPop is the largest Pop of the last Apply.
	MaxPop float64
}

// Add accumulates the counters of o into s (the per-body errors and pops
// are not added; MaxError and MaxPop become the larger of the two).
func (s *Stats) Add(o Stats) {
	s.Targets += o.Targets
	s.SoftCorrections += o.SoftCorrections
	s.HardSnaps += o.HardSnaps
	s.HardTicks += o.HardTicks
	s.Impacts += o.Impacts
	s.MaxError = math.Max(s.MaxError, o.MaxError)
	s.MaxPop = math.Max(s.MaxPop, o.MaxPop)
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
	pending    bool               // a new target has not been applied yet
	heard      clocksync.GameTime // game time of the first Apply after the latest target arrived
	latency    float64            // the states' age at their first Apply, smoothed (game time in µs; 0: none yet)

	// Velocity of each body right after the last Apply, to detect violent
	// events in the local simulation step that followed.
	lastVel    [physics.MaxBodiesPerObject]physics.Vec2
	hasLastVel bool

	// Each body's position, velocity and accumulated force before the
	// correction of this Apply, to measure the pops (Stats.Pop).
	before [physics.MaxBodiesPerObject]kinematics

	// MethodFollow: the bodies' past, for latency compensation, and how
	// they hang together (SetLayout).
	hist    history
	scratch struct {
		est, present [physics.MaxBodiesPerObject]snapshot
		rot          [physics.MaxBodiesPerObject]rotation
	}
	hold      [physics.MaxBodiesPerObject]snapshot // where an outage holds the bodies
	frozen    bool                                 // hold is set
	layout    [physics.MaxBodiesPerObject]physics.LayoutBody
	hasLayout bool

	// The drawn pose's offset from each body (Config.SmoothingMaxStep), and what
	// the correction of this Apply moved each body by (measurePops).
	offset    [physics.MaxBodiesPerObject]snapshot
	moved     [physics.MaxBodiesPerObject]snapshot
	smoothing bool

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
	if c.cfg.Method == MethodFollow {
		c.hist = newHistory(n, c.cfg.VelocityFade)
	}
	c.smoothing = c.cfg.SmoothingMaxStep > 0
	return c, nil
}

// Stats returns what the corrector did so far and the errors of the last
// Apply.
func (c *Corrector) Stats() Stats { return c.stats }

// MaxError is Stats().MaxError, without copying the statistics (for a
// per-tick caller).
func (c *Corrector) MaxError() float64 { return c.stats.MaxError }

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
	if c.hist.n > 0 {
		c.hist.reset()
	}
	c.offset = [physics.MaxBodiesPerObject]snapshot{}
}

// Offset returns how far the pose a game should draw for body i is from the
// body itself: draw it at its position plus dpos, turned by dangle. It is
// zero unless the method smooths (Config.SmoothingMaxStep): the physics body then
// stays close to its owner's state, so hits land where the owner says, while
// the drawn pose takes each correction in gradually.
func (c *Corrector) Offset(i int) (dpos physics.Vec2, dangle float64) {
	return c.offset[i].pos, c.offset[i].angle
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
// never during a step. Per-packet methods (snap, midpoint, midpoint-spring)
// act only when a new target arrived since the last Apply; ragsync and
// follow act every tick.
// Apply reports whether it corrected (and so measured the errors in Stats).
// It allocates nothing.
func (c *Corrector) Apply(bodies []*box2d.B2Body, now clocksync.GameTime) (acted bool) {
	if len(bodies) != c.n {
		panic(fmt.Sprintf("correction: Apply with %d bodies, corrector has %d", len(bodies), c.n))
	}
	// MethodFollow's prediction takes violent events in, and it knows
	// what it moves the bodies by: it skips what the others need for that.
	follow := c.cfg.Method == MethodFollow
	// A violent event in the local step since the last Apply?
	if c.hasLastVel && !follow {
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

	clear(c.stats.Pop[:c.n])
	c.stats.MaxPop = 0
	clear(c.moved[:c.n])
	if c.hist.n > 0 {
		// The bodies' state now came out of the step that began one tick
		// ago: the owner labels the same state with that tick's time.
		c.hist.record(bodies, now-tickTime)
	}
	if c.pending {
		c.heard = now
		c.observeLatency(now.Sub(c.targetTime))
	}
	if c.hasTarget && (c.pending || !c.cfg.Method.perPacket()) {
		c.pending = false
		acted = true
		if !follow {
			c.beforeApply(bodies)
		}
		hard := c.stats.HardSnaps
		switch c.cfg.Method {
		case MethodSnap:
			c.applySnap(bodies)
		case MethodMidpoint:
			c.applyMidpoint(bodies)
		case MethodMidpointSpring:
			c.applyMidpointSpring(bodies, impact)
		case MethodFollow:
			c.applyFollow(bodies, now.Sub(c.targetTime), now.Sub(c.heard) > c.cfg.InputHold) // its prediction takes impacts in
		default:
			c.applyRagsync(bodies, now, impact)
		}
		if c.stats.HardSnaps != hard {
			c.stats.HardTicks++
		}
		if !follow {
			c.measureMoves(bodies)
		}
	}
	if c.smoothing {
		c.smooth(now)
	}
	for i := range c.n {
		p := length(c.moved[i].pos)
		c.stats.Pop[i] = p
		c.stats.MaxPop = max(c.stats.MaxPop, p)
	}
	if !follow {
		for i, b := range bodies {
			c.lastVel[i] = physics.Vec2{X: b.M_linearVelocity.X, Y: b.M_linearVelocity.Y}
		}
		c.hasLastVel = true
	}
	return acted
}

// kinematics is what a correction may change on a body.
type kinematics struct {
	pos, vel, force physics.Vec2
	angle, angVel   float64
}

func readKinematics(b *box2d.B2Body) kinematics {
	return kinematics{
		pos:    physics.Vec2{X: b.M_xf.P.X, Y: b.M_xf.P.Y},
		vel:    physics.Vec2{X: b.M_linearVelocity.X, Y: b.M_linearVelocity.Y},
		force:  physics.Vec2{X: b.M_force.X, Y: b.M_force.Y},
		angle:  b.M_sweep.A,
		angVel: b.M_angularVelocity,
	}
}

func (c *Corrector) beforeApply(bodies []*box2d.B2Body) {
	for i, b := range bodies {
		c.before[i] = readKinematics(b)
	}
}

// measureMoves records how far the correction just applied displaces each
// body by the end of the coming step: box2d integrates v += h·F/m, then
// x += h·v, so a teleport Δx, a velocity change Δv and a force ΔF move the
// body by Δx + h·Δv + h²·ΔF/m (angles likewise, torques aside).
func (c *Corrector) measureMoves(bodies []*box2d.B2Body) {
	const h = 1.0 / physics.TickRate
	for i, b := range bodies {
		now, was := readKinematics(b), &c.before[i]
		c.moved[i] = snapshot{
			pos:   now.pos.Sub(was.pos).Add(now.vel.Sub(was.vel).Scale(h)).Add(now.force.Sub(was.force).Scale(h * h * b.M_invMass)),
			angle: angle.Diff(b.M_sweep.A, was.angle) + h*(b.M_angularVelocity-was.angVel),
		}
	}
}

// Angular limits of the drawn pose, per metre of the linear ones.
const (
	smoothStepAngle   = 8 // rad per m of SmoothingMaxStep
	smoothOffsetAngle = 2 // rad per m of SmoothingMaxOffset
)

// smooth takes this tick's correction out of the drawn pose and gives back
// at most SmoothingMaxStep of the drawn pose's offset from its body, and at
// least enough to keep the offset within SmoothingMaxOffset (scaled by the
// age of the state at game time now). c.moved becomes the drawn pose's
// displacement by the correction (Stats.Pop).
func (c *Corrector) smooth(now clocksync.GameTime) {
	maxStep, maxOff := c.cfg.SmoothingMaxStep, c.cfg.SmoothingMaxOffset
	ref := float64(clocksync.GameTimeOf(smoothRefAge))
	if age := now.Sub(c.targetTime); c.hasTarget && age > smoothRefAge {
		maxOff *= min(smoothMaxScale, float64(age)/float64(smoothRefAge))
	} else if c.latency > 0 && c.latency < ref {
		// A fast link: its corrections are small and few, and a drawn
		// pose that lagged its body as far would cost more than it hides.
		maxOff *= max(smoothMinScale, c.latency/ref)
	}
	if ref := float64(clocksync.GameTimeOf(smoothStepRefLatency)); c.latency > ref {
		// A slow link: every correction is larger, and a drawn pose
		// that gave them back at the usual rate would trail its body.
		maxStep *= min(smoothStepMaxScale, c.latency/ref)
	}
	for i := range c.n {
		o := &c.offset[i]
		o.pos = o.pos.Sub(c.moved[i].pos)
		o.angle -= c.moved[i].angle
		var dp physics.Vec2
		if l := length(o.pos); l > 0 {
			dp = o.pos.Scale(giveBack(l, maxStep, maxOff) / l)
		}
		o.pos = o.pos.Sub(dp)
		da := math.Copysign(giveBack(math.Abs(o.angle), maxStep*smoothStepAngle, maxOff*smoothOffsetAngle), o.angle)
		o.angle -= da
		// The drawn pose moves with its body, less the correction, plus
		// what is given back.
		c.moved[i] = snapshot{pos: dp.Scale(-1), angle: -da}
	}
}

// The drawn pose's offset limit applies as it is to states up to
// smoothRefAge old, and grows in proportion to older states' age, up to
// smoothMaxScale times. On a link whose states usually arrive younger
// (Corrector.latency) it shrinks in proportion, down to smoothMinScale
// times. Measured with cmd/ragsim on lan (states ~5 ms old, seeds 1-3 ×
// 30 s): rms_true 0.0108 → 0.0071 m, below snap's 0.008, for the same pop
// p99.
const (
	smoothRefAge   = 40 * time.Millisecond
	smoothMaxScale = 1.6
	smoothMinScale = 0.3
)

// The drawn pose's step limit applies as it is on links whose states
// arrive up to smoothStepRefLatency old (Corrector.latency), and grows in
// proportion to the states' usual age beyond it, up to smoothStepMaxScale
// times. Measured with cmd/ragsim: on awful (states 110-200 ms old) the
// drawn pose then trails its body less (rms_true 0.1528 → 0.1491 over
// seeds 1-9) and pops less (pop_p99 0.060 → 0.051: fewer corrections
// overflow SmoothingMaxOffset); links up to mobile's (75 ms ± 15 one way)
// are left as they were.
const (
	smoothStepRefLatency = 90 * time.Millisecond
	smoothStepMaxScale   = 2.5
	latencySamples       = 16 // the latency's smoothing, in states
)

// observeLatency takes in the age of a state at its first Apply: the link's
// latency as the corrector sees it, smoothed over about latencySamples
// states, so that a loss burst or an outage (whose states are no older when
// they do arrive) does not move it.
func (c *Corrector) observeLatency(age time.Duration) {
	a := float64(clocksync.GameTimeOf(max(0, age)))
	if c.latency == 0 {
		c.latency = a
		return
	}
	c.latency += (a - c.latency) / latencySamples
}

// length is v.Len without math.Hypot's care for overflow, which positions
// and speeds in an arena do not need.
func length(v physics.Vec2) float64 { return math.Sqrt(v.X*v.X + v.Y*v.Y) }

// A correction far beyond the drawn pose's offset limit (the first state
// after an outage, a hard snap) is eased in rather than jumped to: of the
// excess over the limit, up to recoverySnap is given back at once, as any
// excess was, but a larger one at recoveryShare of it per tick, at most
// recoveryMaxStep a tick. A 1.5 m correction after a blackout then moves
// the drawn pose at most 0.3 m a frame, and is 90 % given back within
// about 11 ticks (0.18 s), while the physics body, which collides and
// strikes, is where the owner's state puts it at once. Measured with
// cmd/ragsim (blackouts, spike, handover): the worst pop fell from 1.4–1.9
// m to recoveryMaxStep, for the same rms.
const (
	recoverySnap    = 0.1
	recoveryShare   = 0.2
	recoveryMaxStep = 0.3
)

// giveBack returns how much of an offset of size l the drawn pose takes back
// in one tick: all of it up to maxStep, maxStep beyond, more if that would
// leave more than maxOff (see recoverySnap for how much more).
func giveBack(l, maxStep, maxOff float64) float64 {
	excess := l - maxOff
	return max(min(l, maxStep), min(excess, max(recoverySnap, min(recoveryMaxStep, excess*recoveryShare))))
}

// recordError stores the error of body i before correcting it.
func (c *Corrector) recordError(i int, e physics.Vec2, ea float64) float64 {
	d := length(e)
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
		c.recordError(i, t.Pos.Sub(pos(b)), angle.Diff(t.Angle, b.M_sweep.A))
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
		ea := angle.Diff(t.Angle, b.M_sweep.A)
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
		fullA := angle.Diff(t.Angle, b.M_sweep.A)
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
		ea := angle.Diff(ta, b.M_sweep.A)
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
