package physics

import (
	"errors"
	"math"
	"testing"

	"github.com/ByteArena/box2d"

	"github.com/ragsync/ragsync/internal/angle"
)

func TestWriteStateValidates(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 4, 0)
	o := f.Object()
	steps(w, 5)
	good := o.ReadState(nil)
	inf := math.Inf(1)
	for _, tc := range []struct {
		name  string
		edit  func(s []BodyState) []BodyState
		err   error
		body  int
		field string
	}{
		{"too few", func(s []BodyState) []BodyState { return s[:9] }, ErrBodyCount, -1, "count"},
		{"too many", func(s []BodyState) []BodyState { return append(s, s[0]) }, ErrBodyCount, -1, "count"},
		{"nan x", func(s []BodyState) []BodyState { s[2].Pos.X = math.NaN(); return s }, ErrNotFinite, 2, "pos.x"},
		{"inf y", func(s []BodyState) []BodyState { s[0].Pos.Y = inf; return s }, ErrNotFinite, 0, "pos.y"},
		{"nan angle", func(s []BodyState) []BodyState { s[9].Angle = math.NaN(); return s }, ErrNotFinite, 9, "angle"},
		{"inf vel", func(s []BodyState) []BodyState { s[5].Vel.X = -inf; return s }, ErrNotFinite, 5, "vel.x"},
		{"nan vel y", func(s []BodyState) []BodyState { s[5].Vel.Y = math.NaN(); return s }, ErrNotFinite, 5, "vel.y"},
		{"nan angvel", func(s []BodyState) []BodyState { s[1].AngVel = math.NaN(); return s }, ErrNotFinite, 1, "angvel"},
		{"outside left", func(s []BodyState) []BodyState { s[3].Pos.X = -9.5; return s }, ErrOutOfRange, 3, "pos.x"},
		{"below ground", func(s []BodyState) []BodyState { s[7].Pos.Y = -2; return s }, ErrOutOfRange, 7, "pos.y"},
		{"absurd angle", func(s []BodyState) []BodyState { s[1].Angle = 1e12; return s }, ErrOutOfRange, 1, "angle"},
		{"fast x", func(s []BodyState) []BodyState { s[8].Vel.X = 500; return s }, ErrOutOfRange, 8, "vel.x"},
		{"fast diagonal", func(s []BodyState) []BodyState { s[8].Vel = V(100, 100); return s }, ErrOutOfRange, 8, "speed"},
		{"spinning", func(s []BodyState) []BodyState { s[4].AngVel = -1000; return s }, ErrOutOfRange, 4, "angvel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := tc.edit(append([]BodyState(nil), good...))
			before := o.ReadState(nil)
			err := o.WriteState(bad)
			var se *StateError
			if !errors.Is(err, tc.err) || !errors.As(err, &se) || se.Body != tc.body || se.Field != tc.field || se.Object != 4 {
				t.Fatalf("got %v, want %v on body %d field %s", err, tc.err, tc.body, tc.field)
			}
			if se.Error() == "" {
				t.Error("empty message")
			}
			// Nothing was written.
			after := o.ReadState(nil)
			for i := range before {
				if before[i] != after[i] {
					t.Fatalf("body %d changed by a rejected write", i)
				}
			}
			// The standalone check agrees.
			if err2 := o.Validate(&ObjectState{ID: 4, Bodies: bad, Fighter: f.State()}); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("Validate says %v", err2)
			}
		})
	}
}

// Object.Validate judges a whole object state as a peer sent it: the id,
// the bodies, and a fighter's FighterState against that fighter (its own
// MaxHP, not the wire's limit); a state that passes applies without error.
func TestValidateObjectState(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 4, 0)
	ball, err := w.AddBall(5, PropConfig{Pos: V(3, 1)})
	if err != nil {
		t.Fatal(err)
	}
	steps(w, 5)
	fighter := func(edit func(s *ObjectState)) *ObjectState {
		s := &ObjectState{ID: 4, Bodies: f.Object().ReadState(nil), Fighter: f.State()}
		if edit != nil {
			edit(s)
		}
		return s
	}
	prop := &ObjectState{ID: 5, Bodies: ball.ReadState(nil)}
	for _, tc := range []struct {
		name  string
		obj   *Object
		s     *ObjectState
		err   error
		field string
	}{
		{"fighter", f.Object(), fighter(nil), nil, ""},
		{"prop", ball, prop, nil, ""},
		{"another object's state", ball, fighter(nil), ErrInvalidID, "id"},
		{"body count", f.Object(), fighter(func(s *ObjectState) { s.Bodies = s.Bodies[:3] }), ErrBodyCount, "count"},
		{"hp above the fighter's max", f.Object(), fighter(func(s *ObjectState) { s.Fighter.HP = f.MaxHP() + 1 }), ErrOutOfRange, "hp"},
		{"undefined action", f.Object(), fighter(func(s *ObjectState) { s.Fighter.Action = 99 }), ErrOutOfRange, "action"},
		{"kick with an arm", f.Object(), fighter(func(s *ObjectState) {
			s.Fighter.Action, s.Fighter.Phase, s.Fighter.Strike = ActionKick, PhaseActive, PartLowerArmL
		}), ErrOutOfRange, "strike"},
		{"prop with a fighter state", ball, &ObjectState{ID: 5, Bodies: prop.Bodies, Fighter: f.State()}, ErrOutOfRange, "fighter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.obj.Validate(tc.s)
			var se *StateError
			switch {
			case tc.err == nil && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tc.err == nil:
				if f := tc.obj.Fighter(); f != nil {
					if err := f.SetRemoteState(tc.s.Fighter); err != nil {
						t.Errorf("a validated fighter state does not apply: %v", err)
					}
				}
				if err := tc.obj.WriteState(tc.s.Bodies); err != nil {
					t.Errorf("validated bodies do not write: %v", err)
				}
			case !errors.Is(err, tc.err) || !errors.As(err, &se) || se.Field != tc.field:
				t.Errorf("Validate = %v, want %v on field %s", err, tc.err, tc.field)
			}
		})
	}
}

func TestWriteStateRoundTrip(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, -1)
	ball, _ := w.AddBall(2, PropConfig{Pos: V(2, 3)})
	steps(w, 20)
	// Write a moved, spinning copy and read it back exactly.
	st := f.Object().ReadState(nil)
	for i := range st {
		st[i].Pos.X += 0.5
		st[i].Vel = V(1, 2)
		st[i].AngVel = 0.5
	}
	if err := f.Object().WriteState(st); err != nil {
		t.Fatal(err)
	}
	got := f.Object().ReadState(nil)
	for i := range st {
		if got[i] != st[i] {
			t.Errorf("body %d: wrote %+v read %+v", i, st[i], got[i])
		}
	}
	// Angles are taken modulo 2π: a state with every angle off by whole
	// turns (as decoded snapshots are, wrapped) keeps the joints intact.
	body := ball.Body(0)
	body.SetTransform(body.M_xf.P, 4*math.Pi+0.3)
	if err := ball.WriteState([]BodyState{{Pos: V(2, 3), Angle: 0.4}}); err != nil {
		t.Fatal(err)
	}
	if a := ball.readBody(0).Angle; math.Abs(a-(4*math.Pi+0.4)) > 1e-12 {
		t.Errorf("root angle written as %v, want the representative near the current one", a)
	}
	st = f.Object().ReadState(nil)
	for i := range st {
		st[i].Angle = angle.Wrap(st[i].Angle + 2*math.Pi*float64(i%3-1))
	}
	if err := f.Object().WriteState(st); err != nil {
		t.Fatal(err)
	}
	for j, rj := range f.joints {
		lo, hi := rj.M_lowerAngle, rj.M_upperAngle
		if a := jointAngle(rj); a < lo-0.1 || a > hi+0.1 {
			t.Errorf("joint %d at %.2f outside [%.2f, %.2f] after writing wrapped angles", j, a, lo, hi)
		}
	}
	steps(w, 60)
	if math.Abs(torsoAngle(f)) > 20*math.Pi/180 {
		t.Errorf("fighter fell after a state write (%.1f°)", deg(torsoAngle(f)))
	}
}

func TestReadStateAllocatesNothing(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, 0)
	buf := make([]BodyState, 0, FighterBodies)
	if n := testing.AllocsPerRun(200, func() { buf = f.Object().ReadState(buf[:0]) }); n != 0 {
		t.Errorf("ReadState: %v allocs", n)
	}
	if n := testing.AllocsPerRun(200, func() { _ = f.Object().readBody(3) }); n != 0 {
		t.Errorf("ReadBody: %v allocs", n)
	}
}

// TestWriteStateAddsNoAllocations compares WriteState with the bare box2d
// calls it makes (SetTransform, velocities, SetAwake): box2d's own
// allocations (if any) are the baseline, and WriteState must add none.
func TestWriteStateAddsNoAllocations(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, 0)
	o := f.Object()
	steps(w, 5)
	st := o.ReadState(nil)
	alt := o.ReadState(nil)
	for i := range alt {
		alt[i].Pos.X += 0.01
	}
	flip := false
	raw := testing.AllocsPerRun(200, func() {
		src := st
		if flip = !flip; flip {
			src = alt
		}
		for i, b := range o.Bodies() {
			b.SetTransform(box2d.B2Vec2{X: src[i].Pos.X, Y: src[i].Pos.Y}, src[i].Angle)
			b.SetLinearVelocity(box2d.B2Vec2{X: src[i].Vel.X, Y: src[i].Vel.Y})
			b.SetAngularVelocity(src[i].AngVel)
			b.SetAwake(true)
		}
	})
	ours := testing.AllocsPerRun(200, func() {
		src := st
		if flip = !flip; flip {
			src = alt
		}
		if err := o.WriteState(src); err != nil {
			t.Fatal(err)
		}
	})
	if ours > raw {
		t.Errorf("WriteState: %v allocs, box2d baseline %v", ours, raw)
	}
	t.Logf("WriteState %v allocs/op, raw box2d calls %v", ours, raw)
}

func TestWriteBody(t *testing.T) {
	w := newWorld(t)
	ball, _ := w.AddBall(1, PropConfig{Pos: V(0, 2)})
	if err := ball.writeBody(0, BodyState{Pos: V(1, 3), Angle: 0.2, Vel: V(1, 0), AngVel: 2}); err != nil {
		t.Fatal(err)
	}
	if s := ball.readBody(0); s.Pos != V(1, 3) || s.Vel != V(1, 0) || s.AngVel != 2 || math.Abs(s.Angle-0.2) > 1e-12 {
		t.Errorf("wrote, read %+v", s)
	}
	var se *StateError
	if err := ball.writeBody(0, BodyState{Pos: V(math.NaN(), 3)}); !errors.Is(err, ErrNotFinite) || !errors.As(err, &se) || se.Field != "pos.x" {
		t.Errorf("NaN: %v", err)
	}
	if err := ball.writeBody(1, BodyState{}); !errors.Is(err, ErrBodyCount) {
		t.Errorf("bad index: %v", err)
	}
	if err := w.RemoveObject(1); err != nil {
		t.Fatal(err)
	}
	if err := ball.writeBody(0, BodyState{Pos: V(1, 1)}); !errors.Is(err, ErrUnknownObject) {
		t.Errorf("removed object: %v", err)
	}
	if err := ball.WriteState([]BodyState{{Pos: V(1, 1)}}); !errors.Is(err, ErrUnknownObject) {
		t.Errorf("removed object: %v", err)
	}
}
