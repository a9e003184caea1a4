package physics

import (
	"math"
	"testing"
)

func TestCodecAllocatesNothing(t *testing.T) {
	w := newWorld(t)
	a := addFighter(t, w, 1, -0.5)
	b := addFighter(t, w, 2, 0.5)
	w.AddBall(3, PropConfig{Pos: V(0, 3)})
	a.SetInput(InputKick)
	steps(w, 20)
	c := w.codec
	var s, d Snapshot
	buf := make([]byte, 0, maxPacketSize)
	fill := func() {
		s.Reset(12345, 6)
		for _, o := range w.Objects() {
			s.Add(o)
		}
	}
	fill()
	var err error
	buf, _ = c.appendSnapshot(buf[:0], &s)
	if err = c.decodeSnapshot(buf, &d); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, fill); n != 0 {
		t.Errorf("Snapshot.Reset+Add: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { buf, err = c.appendSnapshot(buf[:0], &s) }); n != 0 || err != nil {
		t.Errorf("AppendSnapshot: %v allocs (%v)", n, err)
	}
	if n := testing.AllocsPerRun(100, func() { err = c.decodeSnapshot(buf, &d) }); n != 0 || err != nil {
		t.Errorf("DecodeSnapshot: %v allocs (%v)", n, err)
	}
	_ = b
}

// TestStepAddsNoAllocations runs the parts of World.Step that are ours (the
// fighters' controllers, hit and contact collection) and checks they allocate
// nothing; box2d's own step allocates inside and is not ours to fix.
func TestStepAddsNoAllocations(t *testing.T) {
	w := newWorld(t)
	a := addFighter(t, w, 1, -0.35)
	b := addFighter(t, w, 2, 0.35)
	w.AddCrate(3, PropConfig{Pos: V(0.9, 0.3)})
	for i := 0; i < 120; i++ {
		a.SetInput([]Input{InputPunch, 0, InputKick, 0, InputRight}[i/10%5])
		b.SetInput(InputLeft)
		w.Step()
	}
	if len(w.Contacts()) == 0 {
		t.Fatal("set-up: nothing touching")
	}
	in := []Input{InputPunch, InputKick | InputLeft, InputJump, InputBlock, 0}
	i := 0
	n := testing.AllocsPerRun(200, func() {
		i++
		a.SetInput(in[i%len(in)])
		for _, f := range w.fighters {
			f.update()
		}
		w.contacts = w.contacts[:0]
		w.fpContacts = w.fpContacts[:0]
		w.collectContacts()
		for _, o := range w.objects {
			o.clampSpeeds(&w.limits)
			o.unwindAngles()
		}
	})
	if n != 0 {
		t.Errorf("our per-step code allocates %v times", n)
	}
	// PostSolve's hit bookkeeping.
	ra := bodyRef{obj: a.Object(), index: PartLowerLegR.Index()}
	rb := bodyRef{obj: b.Object(), index: 0}
	a.phase, a.strikeBody = PhaseActive, ra.index
	a.hitVictims = a.hitVictims[:0]
	w.pending = append(w.pending[:0], HitEvent{})
	if n := testing.AllocsPerRun(200, func() {
		w.pending = w.pending[:0]
		w.hitCandidate(ra, rb, 10)
		w.hitCandidate(ra, rb, 12)
	}); n != 0 {
		t.Errorf("hit bookkeeping allocates %v times", n)
	}
	if len(w.pending) != 1 || w.pending[0].Impulse != 12 {
		t.Errorf("pending hits %+v, want one with the stronger impulse", w.pending)
	}
}

// BodyDistance judges poses from the past (hit confirmation, prop reach)
// without allocating, and measures shape to shape.
func TestBodyDistance(t *testing.T) {
	w, err := NewWorld(WorldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := w.AddFighter(1, FighterConfig{X: -1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.AddCrate(2, PropConfig{Pos: V(3, 0.25)})
	if err != nil {
		t.Fatal(err)
	}
	head, fist := PartHead.Index(), PartLowerArmR.Index()
	pa := a.Object().Pose(head)
	if d := BodyDistance(a.Object(), head, pa, a.Object(), head, pa); d != 0 {
		t.Errorf("a body from itself: %v, want 0", d)
	}
	// The fist 1 m to the right of the head: the gap is 1 m less both
	// shapes' extents along x, so between 0.5 and 1 m.
	pf := Pose{Pos: pa.Pos.Add(V(1, 0)), Angle: 0}
	if d := BodyDistance(a.Object(), fist, pf, a.Object(), head, pa); !(d > 0.5 && d < 1) {
		t.Errorf("fist 1 m from the head: %v m apart", d)
	}
	if d := BodyDistance(a.Object(), head, pa, c, 0, c.Pose(0)); !(d > 3 && d < 4.5) {
		t.Errorf("head to crate: %v m", d)
	}
	if d := BodyDistance(a.Object(), 99, pa, c, 0, pa); !math.IsInf(d, 1) {
		t.Errorf("body 99: %v, want +Inf", d)
	}
	if d := BodyDistance(a.Object(), head, Pose{Pos: V(math.NaN(), 0)}, c, 0, pa); !math.IsInf(d, 1) {
		t.Errorf("NaN pose: %v, want +Inf", d)
	}
	if n := testing.AllocsPerRun(100, func() { _ = BodyDistance(a.Object(), fist, pf, a.Object(), head, pa) }); n != 0 {
		t.Errorf("BodyDistance allocates %v times", n)
	}
}
