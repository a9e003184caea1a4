package physics

import (
	"fmt"
	"math"

	"github.com/ByteArena/box2d"
)

// Fighter geometry in meters (about 1.67 m tall, 0.3 m wide). Parts are boxes
// except the head; all joints are revolute, with limits mirrored when the
// fighter turns around. Anchors are in the frames of the bodies they join.
const (
	torsoHX, torsoHY       = 0.15, 0.30
	headR                  = 0.12
	upperArmHX, upperArmHY = 0.05, 0.15
	lowerArmHX, lowerArmHY = 0.045, 0.15
	thighHX, thighHY       = 0.075, 0.22
	shinHX, shinHY         = 0.06, 0.21
	footHX, footHY         = 0.12, 0.035
	footY                  = -(shinHY + footHY - 0.01) // foot box centre in the shin's frame

	neckY     = 0.30  // neck in torso frame
	headNeckY = -0.14 // neck in head frame
	shoulderY = 0.24  // shoulder in torso frame
	armTopY   = 0.12  // shoulder in upper arm frame
	elbowUpY  = -0.13 // elbow in upper arm frame
	elbowLowY = 0.13  // elbow in lower arm frame
	hipY      = -0.27 // hip in torso frame
	thighTopY = 0.20  // hip in thigh frame
	kneeUpY   = -0.20 // knee in thigh frame
	kneeLowY  = 0.19  // knee in shin frame
)

// joint indices: joint j drives body j+1 relative to its parent.
const (
	jNeck = iota
	jShoulderL
	jElbowL
	jShoulderR
	jElbowR
	jHipL
	jKneeL
	jHipR
	jKneeR
	numJoints
)

var fighterParents = [FighterBodies]int{-1, 0, 0, 2, 0, 4, 0, 6, 0, 8}

// jointLimits are [lower, upper] joint angles (child − parent) for a fighter
// facing right; facing left they are mirrored to [−upper, −lower]. Positive
// angles swing a hanging limb forward.
var jointLimits = [numJoints][2]float64{
	jNeck:      {-0.5, 0.5},
	jShoulderL: {-1.2, 3.0},
	jElbowL:    {0, 2.6},
	jShoulderR: {-1.2, 3.0},
	jElbowR:    {0, 2.6},
	jHipL:      {-0.6, 2.0},
	jKneeL:     {-2.5, 0},
	jHipR:      {-0.6, 2.0},
	jKneeR:     {-2.5, 0},
}

// FighterConfig describes a fighter to add. The zero value is a fighter
// standing at the arena's centre, facing right, with 100 HP.
type FighterConfig struct {
	// X is the torso's horizontal position; the feet stand on the ground.
	X float64
	// Facing is the initial facing. Zero: toward the arena's centre
	// (right when X == 0). Fighters then turn to face their nearest rival.
	Facing Facing
	// MaxHP is the fighter's full health, 1..1000 (the most a snapshot
	// carries). Zero: 100.
	MaxHP int
	// Tuning overrides the default tuning. Nil: the defaults; zero
	// fields of a given Tuning take their defaults too.
	Tuning *Tuning
}

// maxWireHP is the largest HP a snapshot can carry (10 bits; FighterConfig.MaxHP
// and the package doc state it).
const maxWireHP = 1000

// AddFighter builds a ragdoll fighter with id, standing on the ground at
// cfg.X. Construction is deterministic: the same config and id give the same
// bodies, fixtures and joints in the same order. The fighter's own parts never
// collide with each other (a negative collision group per fighter); they
// collide with other fighters, props and the arena.
func (w *World) AddFighter(id ObjectID, cfg FighterConfig) (*Fighter, error) {
	if err := w.checkNewID(id); err != nil {
		return nil, err
	}
	t := defaultTuning()
	if cfg.Tuning != nil {
		t = cfg.Tuning.withDefaults()
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	if cfg.MaxHP == 0 {
		cfg.MaxHP = 100
	}
	if cfg.MaxHP < 1 || cfg.MaxHP > maxWireHP {
		return nil, fmt.Errorf("%w: fighter MaxHP %d, want 1..%d", ErrInvalidConfig, cfg.MaxHP, maxWireHP)
	}
	in := w.Arena()
	if !isFinite(cfg.X) || cfg.X < in.Min.X+0.5 || cfg.X > in.Max.X-0.5 {
		return nil, fmt.Errorf("%w: fighter X %g outside the arena %v (0.5 m from the walls)", ErrInvalidConfig, cfg.X, in)
	}
	if in.Max.Y < 2.5 {
		return nil, fmt.Errorf("%w: arena too low for a fighter", ErrInvalidConfig)
	}
	facing := cfg.Facing
	switch facing {
	case FacingLeft, FacingRight:
	case FacingUnknown:
		facing = FacingRight
		if cfg.X > 0 {
			facing = FacingLeft
		}
	default:
		return nil, fmt.Errorf("%w: fighter facing %d", ErrInvalidConfig, cfg.Facing)
	}
	if w.nextGroup == -32768 {
		return nil, fmt.Errorf("%w: too many fighters", ErrInvalidConfig)
	}
	group := w.nextGroup
	w.nextGroup--

	// Place the parts in the stance pose (forward kinematics from the
	// torso), then lift the whole fighter so the lowest foot corner is just
	// above the ground.
	anchors := fighterAnchors()
	s := facing.sign()
	var pos [FighterBodies]Vec2
	var ang [FighterBodies]float64
	for j := 0; j < numJoints; j++ {
		child, parent := j+1, fighterParents[j+1]
		ang[child] = ang[parent] + s*poseStance[j]
		a := pos[parent].Add(anchors[j][0].Rotate(ang[parent]))
		pos[child] = a.Sub(anchors[j][1].Rotate(ang[child]))
	}
	lowest := math.Inf(1)
	for _, i := range [...]int{PartLowerLegL.Index(), PartLowerLegR.Index()} {
		for _, c := range [...]Vec2{{-footHX, footY - footHY}, {footHX, footY - footHY}} {
			lowest = min(lowest, pos[i].Add(c.Rotate(ang[i])).Y)
		}
	}
	lift := Vec2{cfg.X, 0.005 - lowest}
	boxes := [FighterBodies]Vec2{{torsoHX, torsoHY}, {}, {upperArmHX, upperArmHY}, {lowerArmHX, lowerArmHY},
		{upperArmHX, upperArmHY}, {lowerArmHX, lowerArmHY}, {thighHX, thighHY}, {shinHX, shinHY},
		{thighHX, thighHY}, {shinHX, shinHY}}
	bodies := make([]*box2d.B2Body, FighterBodies)
	for i := range bodies {
		bd := box2d.MakeB2BodyDef()
		bd.Type = box2d.B2BodyType.B2_dynamicBody
		bd.Position = pos[i].Add(lift).b2()
		bd.Angle = ang[i]
		bd.AllowSleep = false // an active ragdoll never sleeps
		bd.AngularDamping = 0.5
		b := w.b2.CreateBody(&bd)
		fd := box2d.MakeB2FixtureDef()
		fd.Density = t.Density
		fd.Friction = t.Friction
		fd.Filter = box2d.MakeB2Filter()
		fd.Filter.CategoryBits = CategoryFighter
		fd.Filter.GroupIndex = group
		if i == PartHead.Index() {
			c := box2d.MakeB2CircleShape()
			c.M_radius = headR
			fd.Shape = &c
			b.CreateFixtureFromDef(&fd)
		} else {
			s := box2d.MakeB2PolygonShape()
			s.SetAsBox(boxes[i].X, boxes[i].Y)
			fd.Shape = &s
			if i == PartLowerLegL.Index() || i == PartLowerLegR.Index() {
				fd.Friction = t.FootFriction
				b.CreateFixtureFromDef(&fd)
				foot := box2d.MakeB2PolygonShape()
				foot.SetAsBoxFromCenterAndAngle(footHX, footHY, box2d.B2Vec2{X: 0, Y: footY}, 0)
				fd.Shape = &foot
			}
			b.CreateFixtureFromDef(&fd)
		}
		bodies[i] = b
	}

	f := &Fighter{tuning: t, facing: facing, hp: cfg.MaxHP, maxHP: cfg.MaxHP, controlled: true, action: ActionIdle, doneSeq: -1}
	torques := f.jointTorques()
	layout := Layout{Fighter: true, Bodies: make([]LayoutBody, FighterBodies)}
	layout.Bodies[0] = LayoutBody{Parent: -1, LocalCenter: fromB2(bodies[0].M_sweep.LocalCenter)}
	for j := 0; j < numJoints; j++ {
		child := j + 1
		parent := fighterParents[child]
		lo, hi := mirrorLimits(jointLimits[j], facing)
		jd := box2d.MakeB2RevoluteJointDef()
		jd.BodyA, jd.BodyB = bodies[parent], bodies[child]
		jd.LocalAnchorA, jd.LocalAnchorB = anchors[j][0].b2(), anchors[j][1].b2()
		jd.ReferenceAngle = 0 // joint angle = child angle − parent angle
		jd.EnableLimit = true
		jd.LowerAngle, jd.UpperAngle = lo, hi
		jd.EnableMotor = true
		jd.MaxMotorTorque = torques[j]
		rj := w.b2.CreateJoint(&jd).(*box2d.B2RevoluteJoint)
		f.joints[j] = rj
		f.limits[j] = [2]float64{lo, hi}
		layout.Bodies[child] = LayoutBody{Parent: parent, AnchorParent: anchors[j][0], AnchorSelf: anchors[j][1],
			LocalCenter: fromB2(bodies[child].M_sweep.LocalCenter)}
	}
	o := &Object{id: id, kind: kindFighter, world: w, bodies: bodies, layout: layout, fighter: f, created: true}
	f.obj = o
	f.world = w
	w.register(o)
	return f, nil
}

// fighterAnchors returns each joint's anchor in the parent's and the child's
// frame.
func fighterAnchors() [numJoints][2]Vec2 {
	return [numJoints][2]Vec2{
		jNeck:      {{0, neckY}, {0, headNeckY}},
		jShoulderL: {{0, shoulderY}, {0, armTopY}},
		jElbowL:    {{0, elbowUpY}, {0, elbowLowY}},
		jShoulderR: {{0, shoulderY}, {0, armTopY}},
		jElbowR:    {{0, elbowUpY}, {0, elbowLowY}},
		jHipL:      {{0, hipY}, {0, thighTopY}},
		jKneeL:     {{0, kneeUpY}, {0, kneeLowY}},
		jHipR:      {{0, hipY}, {0, thighTopY}},
		jKneeR:     {{0, kneeUpY}, {0, kneeLowY}},
	}
}

// mirrorLimits returns the joint limits for facing.
func mirrorLimits(l [2]float64, facing Facing) (lo, hi float64) {
	if facing == FacingLeft {
		return -l[1], -l[0]
	}
	return l[0], l[1]
}

// jointTorques returns the full-strength motor torque of each joint.
func (f *Fighter) jointTorques() [numJoints]float64 {
	t := &f.tuning
	return [numJoints]float64{t.NeckTorque, t.ShoulderTorque, t.ElbowTorque, t.ShoulderTorque,
		t.ElbowTorque, t.HipTorque, t.KneeTorque, t.HipTorque, t.KneeTorque}
}
