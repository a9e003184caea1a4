package physics

import (
	"math"
	"testing"

	"github.com/ragsync/ragsync/internal/angle"
)

func newWorld(t testing.TB) *World {
	t.Helper()
	w, err := NewWorld(WorldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// newWorldLimits returns a default world that validates states against lim
// (zero fields: the arena's limits) instead of its arena's limits.
func newWorldLimits(t testing.TB, lim bodyLimits) *World {
	t.Helper()
	w := newWorld(t)
	if lim.Bounds == (Rect{}) {
		lim.Bounds = w.limits.Bounds
	}
	w.limits = lim.withDefaults()
	c, err := newCodec(w.limits, w)
	if err != nil {
		t.Fatal(err)
	}
	w.codec = c
	return w
}

func addFighter(t testing.TB, w *World, id ObjectID, x float64) *Fighter {
	t.Helper()
	f, err := w.AddFighter(id, FighterConfig{X: x})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func steps(w *World, n int) {
	for i := 0; i < n; i++ {
		w.Step()
	}
}

func deg(rad float64) float64 { return rad * 180 / math.Pi }

// torsoAngle returns the fighter's torso angle wrapped to [-π, π).
func torsoAngle(f *Fighter) float64 { return angle.Wrap(f.Object().readBody(0).Angle) }

// hipPoint returns the world position of the fighter's hip joint.
func hipPoint(f *Fighter) Vec2 {
	s := f.Object().readBody(0)
	return s.Pos.Add(Vec2{0, hipY}.Rotate(s.Angle))
}

// lowestFoot returns the lowest y of either foot's sole corners.
func lowestFoot(f *Fighter) float64 {
	low := math.Inf(1)
	for _, i := range []int{PartLowerLegL.Index(), PartLowerLegR.Index()} {
		s := f.Object().readBody(i)
		for _, c := range []Vec2{{-footHX, footY - footHY}, {footHX, footY - footHY}} {
			low = math.Min(low, s.Pos.Add(c.Rotate(s.Angle)).Y)
		}
	}
	return low
}

// layDown writes a state with the fighter lying on its back (or front) on the
// ground at x, all velocities zero.
func layDown(t testing.TB, f *Fighter, x float64, faceUp bool) {
	t.Helper()
	st := f.Object().ReadState(nil)
	rot := math.Pi / 2 // head toward -x
	if !faceUp {
		rot = -rot
	}
	origin := st[0].Pos
	minY := math.Inf(1)
	for i := range st {
		st[i].Pos = st[i].Pos.Sub(origin).Rotate(rot)
		st[i].Angle += rot
		st[i].Vel, st[i].AngVel = Vec2{}, 0
		minY = math.Min(minY, st[i].Pos.Y)
	}
	for i := range st {
		st[i].Pos = st[i].Pos.Add(Vec2{x, 0.16 - minY})
	}
	if err := f.Object().WriteState(st); err != nil {
		t.Fatal(err)
	}
}
