package physics

import (
	"sync"
	"testing"

	"github.com/ragsync/ragsync/internal/leaktest"
)

// Worlds stepped from different goroutines must not race inside box2d, whose
// package-level state Step guards (run with -race). The package starts no
// goroutine of its own: none is left behind.
func TestWorldsStepConcurrently(t *testing.T) {
	leaktest.Check(t)
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := NewWorld(WorldConfig{})
			if err != nil {
				t.Error(err)
				return
			}
			a, _ := w.AddFighter(1, FighterConfig{X: -0.4})
			w.AddFighter(2, FighterConfig{X: 0.4})
			w.AddBall(3, PropConfig{Pos: V(0, 3)})
			for i := range 120 {
				in := InputPunch
				if (i+g)%20 >= 10 {
					in = 0
				}
				a.SetInput(in)
				w.Step()
			}
			if len(w.Contacts()) == 0 {
				t.Error("no contacts between fighters standing together")
			}
		}()
	}
	wg.Wait()
}

func TestBotFights(t *testing.T) {
	w, err := NewWorld(WorldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	w.AddFighter(1, FighterConfig{X: -3})
	w.AddFighter(2, FighterConfig{X: 3})
	a, b := NewBot(1), NewBot(2)
	moved := false
	for range 30 * TickRate {
		w.Fighter(1).SetInput(a.Input(w, 1, 2))
		w.Fighter(2).SetInput(b.Input(w, 2, 1))
		w.Step()
		if p, _ := w.Object(1).Transform(0); p.X > -2 {
			moved = true
		}
		for _, h := range w.Hits() {
			w.Fighter(h.Victim).ApplyHit(h)
		}
	}
	if !moved {
		t.Error("bot 1 never walked toward its rival")
	}
	if w.Fighter(1).HP() == w.Fighter(1).MaxHP() && w.Fighter(2).HP() == w.Fighter(2).MaxHP() {
		t.Error("no damage in 30 s of two bots fighting")
	}
	if (&Bot{}).Input(w, 9, 1) != 0 {
		t.Error("input for a missing fighter")
	}
}
