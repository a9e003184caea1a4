package physics

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/ByteArena/box2d"
)

// BodyState is the kinematic state of one rigid body, in world coordinates.
//
// Pos is the body origin (what box2d's SetTransform takes; for the bodies this
// package builds it is the centre of the body's main shape). Angle is in
// radians, counter-clockwise. Vel is the linear velocity of the body's centre
// of mass (box2d's convention), and AngVel the angular velocity in rad/s.
//
// Angles read from a world may lie outside [-π, π); angles decoded from
// snapshots are wrapped into it. WriteState treats angles modulo 2π (it
// unwraps them so that connected bodies stay consistent), so either form may
// be written.
type BodyState struct {
	Pos    Vec2
	Angle  float64
	Vel    Vec2
	AngVel float64
}

// readBody returns the state of b. It reads box2d's fields directly (box2d's
// getters copy the whole body) and allocates nothing.
func readBody(b *box2d.B2Body) BodyState {
	return BodyState{
		Pos:    Vec2{b.M_xf.P.X, b.M_xf.P.Y},
		Angle:  b.M_sweep.A,
		Vel:    Vec2{b.M_linearVelocity.X, b.M_linearVelocity.Y},
		AngVel: b.M_angularVelocity,
	}
}

// Sentinel errors for invalid states, snapshots and configurations. Errors
// returned by this package wrap one of them (test with errors.Is) and carry
// the offending input (see StateError and CodecError).
var (
	// ErrNotFinite: a value is NaN or ±Inf.
	ErrNotFinite = errors.New("not finite")
	// ErrOutOfRange: a value is finite but outside its allowed range: a
	// position outside the bounds, a speed above the limit, an HP above
	// MaxHP, an undefined action, a residual too large to be real.
	ErrOutOfRange = errors.New("out of range")
	// ErrBodyCount: a state has the wrong number of bodies for its object.
	ErrBodyCount = errors.New("wrong body count")
	// ErrUnknownObject: no object (or layout) with this id.
	ErrUnknownObject = errors.New("unknown object")
	// ErrDuplicateObject: an object id is already in use.
	ErrDuplicateObject = errors.New("duplicate object id")
	// ErrInvalidID: the zero ObjectID was used.
	ErrInvalidID = errors.New("invalid object id")
	// ErrWorldLocked: called from inside World.Step (a box2d callback).
	ErrWorldLocked = errors.New("physics: world is locked (inside a step)")
	// ErrInvalidConfig: a configuration or layout is inconsistent.
	ErrInvalidConfig = errors.New("physics: invalid config")
)

// StateError reports an invalid body state. It names the object, the body
// index (-1 when the error is about the whole state, e.g. its length), the
// field ("pos.x", "pos.y", "angle", "vel.x", "vel.y", "speed", "angvel",
// "count") and the offending value.
type StateError struct {
	Object ObjectID
	Body   int
	Field  string
	Value  float64
	Err    error // ErrNotFinite, ErrOutOfRange or ErrBodyCount
}

func (e *StateError) Error() string {
	where := e.Object.String()
	if e.Body >= 0 {
		where += " body " + strconv.Itoa(e.Body)
	}
	return fmt.Sprintf("physics: %s: %s = %g: %v", where, e.Field, e.Value, e.Err)
}

func (e *StateError) Unwrap() error { return e.Err }

// bodyLimits bound what a valid body state is. Every state written with
// Object.WriteState, and every state decoded from the network, is checked
// against them first, so nothing absurd reaches box2d. The snapshot codec also
// quantizes positions over Bounds and velocities over the speed limits.
type bodyLimits struct {
	// Bounds contains every valid body origin: the arena's interior plus
	// boundsMargin on each side (see ArenaConfig.limits).
	Bounds Rect
	// MaxSpeed is the largest valid linear speed (per axis and as a
	// vector length), in m/s. Zero: 120 m/s, box2d's own cap at 60 Hz
	// (2 m per step).
	MaxSpeed float64
	// MaxAngularSpeed is the largest valid |angular velocity|, in rad/s.
	// Zero: 100 rad/s (box2d caps rotation at π/2 per step, 94.2 rad/s at
	// 60 Hz).
	MaxAngularSpeed float64
	// MaxAngle is the largest valid |angle| in radians. Angles are
	// meaningful modulo 2π; this only rejects absurd magnitudes. Zero: 1000.
	MaxAngle float64
}

// Default limit values; see bodyLimits.
const (
	defaultMaxSpeed        = 120.0
	defaultMaxAngularSpeed = 100.0
	defaultMaxAngle        = 1000.0
	// boundsMargin is how far outside the arena's walls a body origin may
	// be and still be valid (bodies sink into walls a little; a body is
	// never legitimately much further out).
	boundsMargin = 1.0
)

// withDefaults fills zero fields. Bounds cannot be defaulted here.
func (l bodyLimits) withDefaults() bodyLimits {
	if l.MaxSpeed == 0 {
		l.MaxSpeed = defaultMaxSpeed
	}
	if l.MaxAngularSpeed == 0 {
		l.MaxAngularSpeed = defaultMaxAngularSpeed
	}
	if l.MaxAngle == 0 {
		l.MaxAngle = defaultMaxAngle
	}
	return l
}

// check reports whether l is usable (after defaults).
func (l bodyLimits) check() error {
	b := l.Bounds
	if !b.Min.IsFinite() || !b.Max.IsFinite() || !(b.Max.X > b.Min.X) || !(b.Max.Y > b.Min.Y) {
		return fmt.Errorf("%w: limits: bounds %v are empty or not finite", ErrInvalidConfig, b)
	}
	if s := b.Size(); s.X > 10000 || s.Y > 10000 {
		return fmt.Errorf("%w: limits: bounds %v larger than 10 km", ErrInvalidConfig, b)
	}
	for _, v := range [...]struct {
		name string
		v    float64
		max  float64
	}{{"MaxSpeed", l.MaxSpeed, 1000}, {"MaxAngularSpeed", l.MaxAngularSpeed, 1000}, {"MaxAngle", l.MaxAngle, 1e9}} {
		if !(v.v > 0) || v.v > v.max {
			return fmt.Errorf("%w: limits: %s = %g, want (0, %g]", ErrInvalidConfig, v.name, v.v, v.max)
		}
	}
	return nil
}

// validateBody checks one body state against l. On failure it returns a
// *StateError for object id and body index body.
func (l *bodyLimits) validateBody(id ObjectID, body int, s *BodyState) error {
	// The common case first, in one pass: every comparison with a NaN is
	// false, and an infinity is out of range, so a state that passes this
	// passes every check below.
	if s.Pos.X >= l.Bounds.Min.X && s.Pos.X <= l.Bounds.Max.X &&
		s.Pos.Y >= l.Bounds.Min.Y && s.Pos.Y <= l.Bounds.Max.Y &&
		math.Abs(s.Angle) <= l.MaxAngle && math.Abs(s.AngVel) <= l.MaxAngularSpeed &&
		math.Abs(s.Vel.X) <= l.MaxSpeed && math.Abs(s.Vel.Y) <= l.MaxSpeed &&
		s.Vel.X*s.Vel.X+s.Vel.Y*s.Vel.Y <= l.MaxSpeed*l.MaxSpeed {
		return nil
	}
	return l.invalidBody(id, body, s)
}

// invalidBody reports which check s fails (see validateBody), or nil.
func (l *bodyLimits) invalidBody(id ObjectID, body int, s *BodyState) error {
	bad := func(field string, v float64, err error) error {
		return &StateError{Object: id, Body: body, Field: field, Value: v, Err: err}
	}
	// Order: all NaN/Inf checks first, so a NaN is reported as such.
	switch {
	case !isFinite(s.Pos.X):
		return bad("pos.x", s.Pos.X, ErrNotFinite)
	case !isFinite(s.Pos.Y):
		return bad("pos.y", s.Pos.Y, ErrNotFinite)
	case !isFinite(s.Angle):
		return bad("angle", s.Angle, ErrNotFinite)
	case !isFinite(s.Vel.X):
		return bad("vel.x", s.Vel.X, ErrNotFinite)
	case !isFinite(s.Vel.Y):
		return bad("vel.y", s.Vel.Y, ErrNotFinite)
	case !isFinite(s.AngVel):
		return bad("angvel", s.AngVel, ErrNotFinite)
	case s.Pos.X < l.Bounds.Min.X || s.Pos.X > l.Bounds.Max.X:
		return bad("pos.x", s.Pos.X, ErrOutOfRange)
	case s.Pos.Y < l.Bounds.Min.Y || s.Pos.Y > l.Bounds.Max.Y:
		return bad("pos.y", s.Pos.Y, ErrOutOfRange)
	case math.Abs(s.Angle) > l.MaxAngle:
		return bad("angle", s.Angle, ErrOutOfRange)
	case math.Abs(s.Vel.X) > l.MaxSpeed:
		return bad("vel.x", s.Vel.X, ErrOutOfRange)
	case math.Abs(s.Vel.Y) > l.MaxSpeed:
		return bad("vel.y", s.Vel.Y, ErrOutOfRange)
	case s.Vel.X*s.Vel.X+s.Vel.Y*s.Vel.Y > l.MaxSpeed*l.MaxSpeed:
		return bad("speed", s.Vel.Len(), ErrOutOfRange)
	case math.Abs(s.AngVel) > l.MaxAngularSpeed:
		return bad("angvel", s.AngVel, ErrOutOfRange)
	}
	return nil
}

// validateState checks a whole object state: that it has exactly want bodies
// (skipped when want < 0) and that every body passes validateBody. It is what
// Object.WriteState runs before touching box2d, exposed for the network layer.
func (l *bodyLimits) validateState(id ObjectID, states []BodyState, want int) error {
	if want >= 0 && len(states) != want {
		return &StateError{Object: id, Body: -1, Field: "count", Value: float64(len(states)), Err: ErrBodyCount}
	}
	for i := range states {
		if err := l.validateBody(id, i, &states[i]); err != nil {
			return err
		}
	}
	return nil
}
