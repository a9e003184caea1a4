package physics

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/ByteArena/box2d"

	"github.com/ragsync/ragsync/internal/angle"
)

func TestWorldConfigDefaultsAndValidation(t *testing.T) {
	w := newWorld(t)
	cfg := w.Config()
	if cfg.Arena.Width != 16 || cfg.Arena.Height != 10 || cfg.VelocityIterations != 8 || cfg.PositionIterations != 3 || cfg.Gravity != 9.81 {
		t.Errorf("defaults: %+v", cfg)
	}
	if b := (&w.limits).Bounds; b != (Rect{V(-9, -1), V(9, 11)}) {
		t.Errorf("default bounds %v", b)
	}
	if len(w.ArenaShapes()) != 4 {
		t.Errorf("arena shapes: %d", len(w.ArenaShapes()))
	}
	for _, bad := range []WorldConfig{
		{Arena: ArenaConfig{Width: 2}},
		{Arena: ArenaConfig{Height: math.NaN()}},
		{Gravity: -1},
		{VelocityIterations: -3},
	} {
		t.Run(fmt.Sprintf("%+v", bad), func(t *testing.T) {
			if _, err := NewWorld(bad); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewWorld(%+v) = %v, want ErrInvalidConfig", bad, err)
			}
		})
	}
}

func TestObjectIDsAndLookup(t *testing.T) {
	w := newWorld(t)
	if _, err := w.AddFighter(0, FighterConfig{}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("id 0: %v", err)
	}
	addFighter(t, w, 7, 1)
	if _, err := w.AddCrate(7, PropConfig{Pos: V(0, 1)}); !errors.Is(err, ErrDuplicateObject) {
		t.Errorf("duplicate id: %v", err)
	}
	if _, err := w.AddFighter(8, FighterConfig{X: 100}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("fighter outside the arena: %v", err)
	}
	if _, err := w.AddBall(9, PropConfig{Pos: V(0, -5)}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("ball outside the arena: %v", err)
	}
	if _, err := w.AddCrate(3, PropConfig{Pos: V(-3, 2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddBall(5, PropConfig{Pos: V(3, 2)}); err != nil {
		t.Fatal(err)
	}
	var ids []ObjectID
	for _, o := range w.Objects() {
		ids = append(ids, o.ID())
	}
	if len(ids) != 3 || ids[0] != 3 || ids[1] != 5 || ids[2] != 7 {
		t.Errorf("objects not sorted by id: %v", ids)
	}
	if w.Object(5).objKind() != kindProp || w.Object(7).objKind() != kindFighter || w.Fighter(7) == nil || w.Fighter(5) != nil {
		t.Error("kinds or lookups wrong")
	}
	if w.Object(4) != nil || w.layout(4) != nil {
		t.Error("lookup of a missing id found something")
	}
	f := w.Fighter(7)
	o := f.Object()
	if o.NumBodies() != FighterBodies || len(o.Bodies()) != FighterBodies || len(o.Layout().Bodies) != FighterBodies {
		t.Fatalf("fighter has %d bodies", o.NumBodies())
	}
	for i, b := range o.Bodies() {
		if obj, idx := w.ObjectOf(b); obj != o || idx != i {
			t.Errorf("ObjectOf(body %d) = %v, %d", i, obj, idx)
		}
		if o.bodyMass(i) <= 0 {
			t.Errorf("body %d mass %v", i, o.bodyMass(i))
		}
	}
	if m := o.totalMass(); m < 50 || m > 80 {
		t.Errorf("fighter mass %.1f kg, want a person's", m)
	}
	for i := 0; i < FighterBodies; i++ {
		if PartOf(i).Index() != i || PartOf(i) == PartUnknown {
			t.Errorf("part %d: %v", i, PartOf(i))
		}
	}
	// Shapes: one per fixture, the head a circle, the rest boxes.
	var circles, boxes int
	for _, s := range o.Shapes() {
		switch s.Kind {
		case ShapeCircle:
			circles++
			if s.Body != PartHead.Index() || s.Radius != headR {
				t.Errorf("circle %+v", s)
			}
		case ShapeBox:
			boxes++
			if s.HalfExtents.X <= 0 || s.HalfExtents.Y <= 0 {
				t.Errorf("box %+v", s)
			}
		default:
			t.Errorf("unexpected shape %v", s.Kind)
		}
	}
	if circles != 1 || boxes != FighterBodies-1+2 { // two feet
		t.Errorf("%d circles, %d boxes", circles, boxes)
	}
	if err := w.RemoveObject(5); err != nil {
		t.Fatal(err)
	}
	if w.Object(5) != nil || len(w.Objects()) != 2 || w.B2().GetBodyCount() != 4+1+FighterBodies {
		t.Errorf("after removal: %d objects, %d bodies", len(w.Objects()), w.B2().GetBodyCount())
	}
	if err := w.RemoveObject(5); !errors.Is(err, ErrUnknownObject) {
		t.Errorf("removing twice: %v", err)
	}
}

// TestCollisionFiltering checks that a fighter's own parts never collide with
// each other, but collide with the rival's parts, props and the arena.
func TestCollisionFiltering(t *testing.T) {
	w := newWorld(t)
	a := addFighter(t, w, 1, -0.5)
	b := addFighter(t, w, 2, 0.5)
	crate, err := w.AddCrate(3, PropConfig{Pos: V(3, 0.5)})
	if err != nil {
		t.Fatal(err)
	}
	filter := &box2d.B2ContactFilter{}
	fixtures := func(o *Object) []*box2d.B2Fixture {
		var out []*box2d.B2Fixture
		for _, body := range o.Bodies() {
			for f := body.M_fixtureList; f != nil; f = f.M_next {
				out = append(out, f)
			}
		}
		return out
	}
	fa, fb, fc := fixtures(a.Object()), fixtures(b.Object()), fixtures(crate)
	ground := w.arenaBodies[0].M_fixtureList
	for i, x := range fa {
		for _, y := range fa[i+1:] {
			if filter.ShouldCollide(x, y) {
				t.Fatal("two parts of one fighter would collide")
			}
		}
		for _, y := range fb {
			if !filter.ShouldCollide(x, y) {
				t.Fatal("parts of rival fighters would not collide")
			}
		}
		if !filter.ShouldCollide(x, fc[0]) || !filter.ShouldCollide(x, ground) {
			t.Fatal("a fighter part would not collide with a prop or the ground")
		}
	}

	// In motion: walk the fighters into each other, flailing, and watch the
	// contacts box2d actually makes.
	sawRival, sawGround, listed := false, false, false
	for i := 0; i < 240; i++ {
		a.SetInput(InputRight | Input(i%20/19)*InputPunch)
		b.SetInput(InputLeft | Input(i%30/29)*InputKick)
		w.Step()
		for c := w.b2.GetContactList(); c != nil; c = c.GetNext() {
			if c.GetFlags()&box2d.B2Contact_Flag.E_touchingFlag == 0 {
				continue
			}
			oa, _ := w.ObjectOf(c.GetFixtureA().M_body)
			ob, _ := w.ObjectOf(c.GetFixtureB().M_body)
			switch {
			case oa != nil && oa == ob:
				t.Fatalf("step %d: two parts of %v touch", i, oa.ID())
			case oa != nil && ob != nil:
				sawRival = true
			case (oa == nil) != (ob == nil):
				sawGround = true
			}
		}
		for _, c := range w.Contacts() {
			if c.A == 1 && c.B == 2 && c.Impulse > 0 {
				listed = true
			}
			if c.A >= c.B {
				t.Fatalf("contact not ordered: %+v", c)
			}
		}
		// They push against each other instead of passing through.
		if dx := b.Object().readBody(0).Pos.X - a.Object().readBody(0).Pos.X; dx < torsoHX {
			t.Fatalf("step %d: torsos overlap or passed (dx=%.3f)", i, dx)
		}
	}
	if !sawRival || !sawGround {
		t.Errorf("rival contact %v, ground contact %v", sawRival, sawGround)
	}
	if !listed {
		t.Error("World.Contacts never listed the fighters pushing each other")
	}
}

func TestWallsHoldEverything(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, 6)
	ball, _ := w.AddBall(2, PropConfig{Pos: V(-5, 8)})
	if err := ball.WriteState([]BodyState{{Pos: V(-5, 8), Vel: V(-40, 30)}}); err != nil {
		t.Fatal(err)
	}
	f.SetInput(InputRight)
	in := w.Arena()
	for i := 0; i < 600; i++ {
		w.Step()
		for _, o := range w.Objects() {
			for k := 0; k < o.NumBodies(); k++ {
				if p, _ := o.Transform(k); !in.Contains(p) {
					t.Fatalf("step %d: %v body %d at %v left the arena", i, o.ID(), k, p)
				}
			}
		}
	}
	if x := f.Object().readBody(0).Pos.X; x > in.Max.X-torsoHX+0.01 {
		t.Errorf("fighter walked into the wall: x=%.3f", x)
	}
}

func TestFighterPropContacts(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, 0)
	if _, err := w.AddCrate(9, PropConfig{Pos: V(1.2, 0.26)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddBall(4, PropConfig{Pos: V(-3, 0.2)}); err != nil {
		t.Fatal(err)
	}
	f.SetInput(InputRight)
	touched := false
	for i := 0; i < 120 && !touched; i++ {
		w.Step()
		for _, c := range w.FighterPropContacts() {
			if c.A != 1 {
				t.Fatalf("fighter not first: %+v", c)
			}
			if c.B == 9 {
				touched = true
			} else {
				t.Fatalf("touching a prop it never reached: %+v", c)
			}
		}
	}
	if !touched {
		t.Fatal("walking into the crate produced no fighter-prop contact")
	}
	// The crate gets pushed.
	steps(w, 30)
	if x := w.Object(9).readBody(0).Pos.X; x < 1.3 {
		t.Errorf("crate not pushed: x=%.3f", x)
	}
}

func TestAddBodies(t *testing.T) {
	w := newWorld(t)
	// A game-made pendulum of two boxes hanging from the ceiling.
	mk := func(x, y float64) *box2d.B2Body {
		bd := box2d.MakeB2BodyDef()
		bd.Type = box2d.B2BodyType.B2_dynamicBody
		bd.Position = box2d.B2Vec2{X: x, Y: y}
		b := w.B2().CreateBody(&bd)
		s := box2d.MakeB2PolygonShape()
		s.SetAsBox(0.1, 0.5)
		fd := box2d.MakeB2FixtureDef()
		fd.Shape, fd.Density = &s, 5
		fd.Filter = box2d.MakeB2Filter()
		b.CreateFixtureFromDef(&fd)
		return b
	}
	top, bottom := mk(2, 8), mk(2, 7)
	jd := box2d.MakeB2RevoluteJointDef()
	jd.Initialize(bottom, top, box2d.B2Vec2{X: 2, Y: 7.5}) // A = child on purpose
	w.B2().CreateJoint(&jd)
	o, err := w.AddBodies(20, []*box2d.B2Body{top, bottom}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := o.Layout()
	if l.Bodies[0].Parent != -1 || l.Bodies[1].Parent != 0 ||
		l.Bodies[1].AnchorParent != V(0, -0.5) || l.Bodies[1].AnchorSelf != V(0, 0.5) {
		t.Errorf("derived layout %+v", l.Bodies)
	}
	if o.objKind() != kindCustom {
		t.Errorf("kind %v", o.objKind())
	}
	if _, err := w.AddBodies(21, []*box2d.B2Body{top}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("wrapping a body twice: %v", err)
	}
	if _, err := w.AddBodies(21, nil, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("no bodies: %v", err)
	}
	other, _ := NewWorld(WorldConfig{})
	if _, err := other.AddBodies(21, []*box2d.B2Body{top}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("body from another world: %v", err)
	}
	// The snapshot codec handles it like anything else.
	steps(w, 30)
	c := w.codec
	var s, d Snapshot
	s.Reset(1, 1)
	s.Add(o)
	buf, err := c.appendSnapshot(nil, &s)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.decodeSnapshot(buf, &d); err != nil {
		t.Fatal(err)
	}
	checkClose(t, &s.Objects[0], &d.Objects[0], l)
	if err := o.WriteState(d.Objects[0].Bodies); err != nil {
		t.Fatal(err)
	}
	// Removing it leaves the game's bodies alone.
	n := w.B2().GetBodyCount()
	if err := w.RemoveObject(20); err != nil || w.B2().GetBodyCount() != n {
		t.Errorf("remove: %v, bodies %d -> %d", err, n, w.B2().GetBodyCount())
	}
}

func TestSpeedsAndAnglesStayInLimits(t *testing.T) {
	w := newWorldLimits(t, bodyLimits{MaxSpeed: 10, MaxAngularSpeed: 20})
	ball, _ := w.AddBall(1, PropConfig{Pos: V(0, 5)})
	body := ball.Body(0)
	body.SetLinearVelocity(box2d.B2Vec2{X: 80, Y: 0})
	body.SetAngularVelocity(90)
	w.Step()
	s := ball.readBody(0)
	if s.Vel.Len() > 10 || math.Abs(s.AngVel) > 20 {
		t.Errorf("speeds not clamped to the limits: %+v", s)
	}
	// A spinning body's angle is unwound by whole turns.
	body.M_sweep.A = 2 * math.Pi * 20.25
	w.Step()
	if a := ball.readBody(0).Angle; math.Abs(a) > 2*math.Pi*unwindTurns || math.Abs(angle.Diff(a, math.Pi/2)) > 0.5 {
		t.Errorf("angle not unwound: %v", a)
	}
}
