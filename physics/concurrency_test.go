package physics

import (
	"sync"
	"testing"
)

// Worlds stepped from different goroutines must not race inside box2d, whose
// package-level state Step guards (run with -race).
func TestWorldsStepConcurrently(t *testing.T) {
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
