package physics

import (
	"testing"

	"github.com/ByteArena/box2d"

	"github.com/ragsync/ragsync/clocksync"
)

// A game's own body (AddBodies) that spins for a long time keeps valid,
// encodable angles: the world winds it back by whole turns like its own
// props. Before, it passed Limits.MaxAngle after ~160 turns and every
// snapshot including it failed.
func TestCustomBodySpinsForever(t *testing.T) {
	w, err := NewWorld(WorldConfig{Gravity: 1e-9})
	if err != nil {
		t.Fatal(err)
	}
	bd := box2d.MakeB2BodyDef()
	bd.Type = box2d.B2BodyType.B2_dynamicBody
	bd.Position.Set(0, 5)
	wheel := w.B2().CreateBody(&bd)
	shape := box2d.MakeB2CircleShape()
	shape.M_radius = 0.3
	fd := box2d.MakeB2FixtureDef()
	fd.Shape = &shape
	fd.Density = 1
	fd.Filter = box2d.MakeB2Filter()
	wheel.CreateFixtureFromDef(&fd)
	obj, err := w.AddBodies(9, []*box2d.B2Body{wheel}, nil)
	if err != nil {
		t.Fatal(err)
	}
	codec := w.codec
	var snap Snapshot
	var buf []byte
	for i := range 60 * 20 { // 20 s at 90 rad/s: ~290 turns, 1800 rad
		wheel.SetAngularVelocity(90)
		wheel.SetLinearVelocity(box2d.MakeB2Vec2(0, 0))
		w.Step()
		if i%60 == 0 {
			snap.Reset(clocksync.GameTime(i), uint32(i))
			snap.Add(obj)
			if buf, err = codec.appendSnapshot(buf[:0], &snap); err != nil {
				t.Fatalf("step %d, angle %v: %v", i, wheel.M_sweep.A, err)
			}
		}
	}
	if a := wheel.M_sweep.A; a > 2*3.15*unwindTurns+2 {
		t.Errorf("angle %v was never wound back", a)
	}
}
