package physics

import (
	"errors"
	"math"
	"testing"

	"github.com/ByteArena/box2d"
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
		bad := tc.edit(append([]BodyState(nil), good...))
		before := o.ReadState(nil)
		err := o.WriteState(bad)
		var se *StateError
		if !errors.Is(err, tc.err) || !errors.As(err, &se) || se.Body != tc.body || se.Field != tc.field || se.Object != 4 {
			t.Errorf("%s: got %v, want %v on body %d field %s", tc.name, err, tc.err, tc.body, tc.field)
			continue
		}
		if se.Error() == "" {
			t.Errorf("%s: empty message", tc.name)
		}
		// Nothing was written.
		after := o.ReadState(nil)
		for i := range before {
			if before[i] != after[i] {
				t.Fatalf("%s: body %d changed by a rejected write", tc.name, i)
			}
		}
		// The standalone check agrees.
		if err2 := (&w.limits).validateState(4, bad, FighterBodies); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%s: ValidateState says %v", tc.name, err2)
		}
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
		st[i].Angle = wrapAngle(st[i].Angle + 2*math.Pi*float64(i%3-1))
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
