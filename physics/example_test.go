package physics_test

import (
	"fmt"
	"log"

	"github.com/ragsync/ragsync/physics"
)

// Two fighters in an arena: one walks up to the other and punches; the hits
// the step reports are applied by the victim's owner (here, the same
// program). Then the world's objects travel as a snapshot to a second world
// built the same way, as they would to the other peer.
func Example() {
	w, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		log.Fatal(err)
	}
	me, err := w.AddFighter(1, physics.FighterConfig{X: -1})
	if err != nil {
		log.Fatal(err)
	}
	rival, err := w.AddFighter(2, physics.FighterConfig{X: 1})
	if err != nil {
		log.Fatal(err)
	}

	hits := 0
	for i := range 3 * physics.TickRate {
		in := physics.InputRight
		mine, _ := me.Object().Transform(0) // torso position and angle
		theirs, _ := rival.Object().Transform(0)
		if theirs.X-mine.X < 0.9 {
			in = physics.InputPunch
			if i%20 >= 10 {
				in = 0 // release the button: each press is one punch
			}
		}
		me.SetInput(in)
		w.Step()
		for _, h := range w.Hits() {
			w.Fighter(h.Victim).ApplyHit(h)
			hits++
		}
	}
	fmt.Println("punches landed:", hits > 0, "- rival hurt:", rival.HP() < rival.MaxHP())

	// The other peer's world: the same arena and objects under the same ids.
	other, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		log.Fatal(err)
	}
	other.AddFighter(1, physics.FighterConfig{X: -1})
	other.AddFighter(2, physics.FighterConfig{X: 1})

	var out, in physics.Snapshot
	out.Reset(0, 1)
	out.Add(me.Object())
	out.Add(rival.Object())
	pkt, err := w.AppendSnapshot(nil, &out)
	if err != nil {
		log.Fatal(err)
	}
	if err := other.DecodeSnapshot(pkt, &in); err != nil {
		log.Fatal(err)
	}
	sent, _ := me.Object().Transform(0)
	got := in.Objects[0].Bodies[0].Pos
	fmt.Printf("%d fighters in under 150 bytes: %v; torso within 1 mm: %v; rival's HP: %v\n",
		len(in.Objects), len(pkt) < 150, got.Sub(sent).Len() < 0.001, in.Objects[1].Fighter.HP == rival.HP())
	// Output:
	// punches landed: true - rival hurt: true
	// 2 fighters in under 150 bytes: true; torso within 1 mm: true; rival's HP: true
}
