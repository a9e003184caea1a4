package physics

import (
	"fmt"
	"math"

	"github.com/ByteArena/box2d"
)

// Object is a set of box2d bodies with a stable identity: a fighter, a prop,
// or bodies the game created itself (World.AddBodies). Body i of an object is
// the same body on every peer. Objects are created by a World and live until
// World.RemoveObject.
//
// Reading is cheap and allocation-free (ReadState, Transform).
// WriteState validates first and changes nothing when the input is invalid.
type Object struct {
	id      ObjectID
	kind    objectKind
	world   *World
	bodies  []*box2d.B2Body
	layout  Layout
	shapes  []Shape
	mass    float64
	fighter *Fighter // nil unless kind == kindFighter
	created bool     // bodies were created by this package (destroyed on removal)
}

// ID returns the object's id.
func (o *Object) ID() ObjectID { return o.id }

// objKind returns what the object is.
func (o *Object) objKind() objectKind { return o.kind }

// Fighter returns the fighter this object is, or nil.
func (o *Object) Fighter() *Fighter { return o.fighter }

// NumBodies returns the number of bodies.
func (o *Object) NumBodies() int { return len(o.bodies) }

// Bodies returns the object's bodies in body index order. The slice is shared:
// do not modify it. The bodies themselves may be pushed around (forces,
// impulses, SetTransform) by correction code between steps.
func (o *Object) Bodies() []*box2d.B2Body { return o.bodies }

// Body returns body i.
func (o *Object) Body(i int) *box2d.B2Body { return o.bodies[i] }

// Layout returns how the object's bodies hang together (parents and joint
// anchors), as snapshots and correction.Corrector.SetLayout use it. Shared;
// do not modify.
func (o *Object) Layout() *Layout { return &o.layout }

// bodyMass returns the mass of body i in kg (0 for static bodies).
func (o *Object) bodyMass(i int) float64 { return o.bodies[i].M_mass }

// totalMass returns the summed mass of the object's bodies in kg.
func (o *Object) totalMass() float64 { return o.mass }

// Shapes returns the collision shapes of every body, for drawing: body index,
// kind, and geometry in the body's frame. Computed once; shared, do not
// modify. Combine with Transform(i) to draw.
func (o *Object) Shapes() []Shape { return o.shapes }

// Transform returns the position of body i's origin and its angle.
func (o *Object) Transform(i int) (pos Vec2, angle float64) {
	b := o.bodies[i]
	return Vec2{b.M_xf.P.X, b.M_xf.P.Y}, b.M_sweep.A
}

// readBody returns the state of body i.
func (o *Object) readBody(i int) BodyState { return readBody(o.bodies[i]) }

// ReadState appends the state of every body, in body index order, to dst and
// returns the extended slice. It allocates only if dst lacks capacity.
func (o *Object) ReadState(dst []BodyState) []BodyState {
	for _, b := range o.bodies {
		dst = append(dst, BodyState{
			Pos:    Vec2{b.M_xf.P.X, b.M_xf.P.Y},
			Angle:  b.M_sweep.A,
			Vel:    Vec2{b.M_linearVelocity.X, b.M_linearVelocity.Y},
			AngVel: b.M_angularVelocity,
		})
	}
	return dst
}

// Validate checks s as a state of this object, a peer's state of it from a
// decoded Snapshot, without changing anything: its id, its bodies (count,
// NaN/Inf, bounds, speeds, against the world's limits, as WriteState checks
// them) and, for a fighter, its FighterState (HP within the fighter's MaxHP,
// a defined action, facing and attack phase, a striking limb consistent with
// them, as Fighter.SetRemoteState checks it; other objects carry a zero
// FighterState). A state that passes can be written with WriteState and
// SetRemoteState without error. Errors are *StateError.
func (o *Object) Validate(s *ObjectState) error {
	if o.world == nil {
		return fmt.Errorf("%w: %v was removed", ErrUnknownObject, o.id)
	}
	if s.ID != o.id {
		return &StateError{Object: o.id, Body: -1, Field: "id", Value: float64(s.ID), Err: ErrInvalidID}
	}
	if err := o.validateBodies(s.Bodies); err != nil {
		return err
	}
	if o.fighter != nil {
		return o.fighter.validate(&s.Fighter)
	}
	if s.Fighter != (FighterState{}) {
		return &StateError{Object: o.id, Body: -1, Field: "fighter", Value: float64(s.Fighter.Action), Err: ErrOutOfRange}
	}
	return nil
}

// validateBodies checks src as the bodies' state (see Validate).
func (o *Object) validateBodies(src []BodyState) error {
	if o.world == nil {
		return fmt.Errorf("%w: %v was removed", ErrUnknownObject, o.id)
	}
	return o.world.limits.validateState(o.id, src, len(o.bodies))
}

// writeBody sets body i alone to s, after validating it like WriteState
// (the angle is taken modulo 2π, nearest the body's current angle). For
// correction code that snaps one body of an object.
func (o *Object) writeBody(i int, s BodyState) error {
	if o.world == nil {
		return fmt.Errorf("%w: %v was removed", ErrUnknownObject, o.id)
	}
	if i < 0 || i >= len(o.bodies) {
		return &StateError{Object: o.id, Body: i, Field: "index", Value: float64(i), Err: ErrBodyCount}
	}
	if err := o.world.limits.validateBody(o.id, i, &s); err != nil {
		return err
	}
	if o.world.b2.IsLocked() {
		return ErrWorldLocked
	}
	b := o.bodies[i]
	angle := s.Angle + 2*math.Pi*math.Round((b.M_sweep.A-s.Angle)/(2*math.Pi))
	b.SetTransform(box2d.B2Vec2{X: s.Pos.X, Y: s.Pos.Y}, angle)
	if b.M_type != box2d.B2BodyType.B2_staticBody {
		b.M_linearVelocity = box2d.B2Vec2{X: s.Vel.X, Y: s.Vel.Y}
		b.M_angularVelocity = s.AngVel
		b.SetAwake(true)
	}
	return nil
}

// WriteState sets every body of the object to src (teleport plus velocities)
// and wakes the bodies. It validates all of src first (as Validate does) and
// returns the error without touching any body if anything is wrong, so
// nothing invalid reaches box2d. It must not be called during World.Step
// (from a box2d callback): that returns ErrWorldLocked.
//
// Angles are taken modulo 2π: a root body gets the representative nearest its
// current angle, a child the one that keeps its current angle relative to its
// parent (so joint limits never see a 2π jump).
//
// WriteState allocates nothing itself; box2d's SetTransform may grow its
// broad-phase move buffer.
func (o *Object) WriteState(src []BodyState) error {
	if err := o.validateBodies(src); err != nil {
		return err
	}
	if o.world.b2.IsLocked() {
		return ErrWorldLocked
	}
	var old [MaxBodiesPerObject]float64
	for i, b := range o.bodies {
		old[i] = b.M_sweep.A
	}
	for i, b := range o.bodies {
		s := &src[i]
		// The representative of s.Angle (mod 2π) nearest to: the current
		// angle for a root; the parent's new angle plus the current
		// child−parent angle for a child.
		near := old[i]
		if p := o.layout.Bodies[i].Parent; p >= 0 {
			near = o.bodies[p].M_sweep.A + (old[i] - old[p])
		}
		angle := s.Angle + 2*math.Pi*math.Round((near-s.Angle)/(2*math.Pi))
		b.SetTransform(box2d.B2Vec2{X: s.Pos.X, Y: s.Pos.Y}, angle)
		if b.M_type != box2d.B2BodyType.B2_staticBody {
			b.M_linearVelocity = box2d.B2Vec2{X: s.Vel.X, Y: s.Vel.Y}
			b.M_angularVelocity = s.AngVel
			b.SetAwake(true)
		}
	}
	if o.fighter != nil {
		o.fighter.afterWrite()
	}
	return nil
}

// unwindAngles keeps the object's angles small: when a root body has turned
// more than unwindTurns full turns, it and every body jointed below it are
// turned back by the same multiple of 2π (which changes nothing physical, joint
// angles included), so angles stay within the limits' MaxAngle and the object
// keeps validating and encoding however long it spins. A tree of a game's
// own bodies (AddBodies) that has a joint to a body outside the object is
// left alone: turning one side of that joint by 2π would trip its limits.
func (o *Object) unwindAngles() {
	const limit = 2 * math.Pi * unwindTurns
	var shift [MaxBodiesPerObject]float64
	any := false
	for i, b := range o.bodies {
		if p := o.layout.Bodies[i].Parent; p >= 0 {
			shift[i] = shift[p]
		} else if a := b.M_sweep.A; (a >= limit || a <= -limit) && (o.created || !o.jointedOutside(i)) {
			shift[i] = 2 * math.Pi * math.Round(a/(2*math.Pi))
		}
		any = any || shift[i] != 0
	}
	if !any {
		return
	}
	for i, b := range o.bodies {
		b.M_sweep.A -= shift[i]
		b.M_sweep.A0 -= shift[i]
	}
}

const unwindTurns = 8

// jointedOutside reports whether any body of the tree rooted at body root has
// a joint to a body that is not part of that tree. Only called when a root
// has spun past the unwind limit, so rarely.
func (o *Object) jointedOutside(root int) bool {
	var inTree [MaxBodiesPerObject]bool
	for i := range o.bodies {
		p := o.layout.Bodies[i].Parent
		inTree[i] = i == root || (p >= 0 && inTree[p])
	}
	for i, b := range o.bodies {
		if !inTree[i] {
			continue
		}
		for je := b.M_jointList; je != nil; je = je.Next {
			j := o.indexOf(je.Other)
			if j < 0 || !inTree[j] {
				return true
			}
		}
	}
	return false
}

// indexOf returns the index of b among the object's bodies, or -1.
func (o *Object) indexOf(b *box2d.B2Body) int {
	for i, x := range o.bodies {
		if x == b {
			return i
		}
	}
	return -1
}

// clampSpeeds enforces the world's speed limits on the object's bodies.
func (o *Object) clampSpeeds(l *bodyLimits) {
	for _, b := range o.bodies {
		v := &b.M_linearVelocity
		if s2 := v.X*v.X + v.Y*v.Y; s2 > l.MaxSpeed*l.MaxSpeed {
			k := l.MaxSpeed / math.Sqrt(s2) * (1 - 1e-9)
			v.X *= k
			v.Y *= k
		}
		if b.M_angularVelocity > l.MaxAngularSpeed {
			b.M_angularVelocity = l.MaxAngularSpeed
		} else if b.M_angularVelocity < -l.MaxAngularSpeed {
			b.M_angularVelocity = -l.MaxAngularSpeed
		}
	}
}
