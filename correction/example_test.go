package correction_test

import (
	"fmt"
	"log"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/correction"
	"github.com/ragsync/ragsync/physics"
)

// The local copy of a crate the rival owns: the rival's states say it slides
// right at 2 m/s from x = 0.1, while the local copy still rests at x = 0. Fed
// one state per tick, the corrector (the default method, MethodFollow) puts
// the copy onto the moving target within a fraction of a second, and the pose
// a game draws (the body plus Corrector.Offset) gets there without a jump.
func Example() {
	w, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		log.Fatal(err)
	}
	crate, err := w.AddCrate(1, physics.PropConfig{Pos: physics.V(0, 0.25)})
	if err != nil {
		log.Fatal(err)
	}
	c, err := correction.New(correction.Config{}, crate.NumBodies()) // MethodFollow
	if err != nil {
		log.Fatal(err)
	}
	const tick = clocksync.GameTime(1_000_000 / physics.TickRate)
	var now clocksync.GameTime
	drawn := func() physics.Vec2 {
		pos, _ := crate.Transform(0)
		offset, _ := c.Offset(0)
		return pos.Add(offset)
	}
	largestStep, firstError := 0.0, 0.0
	state := crate.ReadState(nil)
	for i := range physics.TickRate / 2 {
		// The rival's state, sent one tick ago.
		x := 0.1 + 2*float64(i)/physics.TickRate
		state[0].Pos, state[0].Vel = physics.V(x, 0.25), physics.V(2, 0)
		state[0].Angle, state[0].AngVel = 0, 0
		if err := c.SetTarget(state, now-tick); err != nil {
			log.Fatal(err)
		}
		before := drawn()
		c.Apply(crate.Bodies(), now) // before the step
		if i == 0 {
			firstError = c.Stats().MaxError // measured before correcting
		}
		w.Step()
		now += tick
		largestStep = max(largestStep, drawn().Sub(before).Len())
	}
	fmt.Printf("error at first: %.0f cm; after half a second under 5 cm: %v\n", 100*firstError, c.Stats().MaxError < 0.05)
	fmt.Printf("largest move of the drawn pose in one tick under 6 cm: %v\n", largestStep < 0.06)
	// Output:
	// error at first: 10 cm; after half a second under 5 cm: true
	// largest move of the drawn pose in one tick under 6 cm: true
}
