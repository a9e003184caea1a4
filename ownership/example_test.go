package ownership_test

import (
	"fmt"

	"github.com/ByteArena/box2d"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
)

// A game's own box2d body (a plain crate, not a ragdoll) owned by one peer
// and replicated to the other. Here the "network" is a function call; a game
// sends the packets over a p2p.Session.
func Example_crate() {
	const crateID physics.ObjectID = 7
	const tick = clocksync.GameTime(1_000_000 / physics.TickRate)

	// Both peers build the same world with the same ids.
	newPeer := func(local, remote ownership.PeerID) (*physics.World, *ownership.Replicator) {
		w, err := physics.NewWorld(physics.WorldConfig{})
		if err != nil {
			panic(err)
		}
		// The game makes its own crate with box2d...
		bd := box2d.MakeB2BodyDef()
		bd.Type = box2d.B2BodyType.B2_dynamicBody
		bd.Position.Set(-3, 2)
		body := w.B2().CreateBody(&bd)
		shape := box2d.MakeB2PolygonShape()
		shape.SetAsBox(0.3, 0.3)
		fd := box2d.MakeB2FixtureDef()
		fd.Shape = &shape
		fd.Density = 20
		fd.Filter = box2d.MakeB2Filter()
		body.CreateFixtureFromDef(&fd)
		// ...and wraps it as an object with an id both peers agree on.
		if _, err := w.AddBodies(crateID, []*box2d.B2Body{body}, nil); err != nil {
			panic(err)
		}
		r, err := ownership.New(w, local, remote, ownership.Config{})
		if err != nil {
			panic(err)
		}
		// Peer 1 owns the crate.
		if err := r.Track(crateID, 1, false); err != nil {
			panic(err)
		}
		return w, r
	}
	owner, ownerRep := newPeer(1, 2)
	rival, rivalRep := newPeer(2, 1)

	// The owner throws the crate; the rival's copy knows nothing of it.
	owner.Object(crateID).Body(0).SetLinearVelocity(box2d.MakeB2Vec2(6, 4))

	var pkt []byte
	for i := range 120 {
		now := clocksync.GameTime(i) * tick
		// Owner: simulate, then send the state of what it owns.
		ownerRep.BeforeStep(now)
		owner.Step()
		ownerRep.AfterStep()
		pkt, _ = ownerRep.AppendPacket(pkt[:0], now)

		// Rival: receive, correct its copy toward the owner's state, step.
		if err := rivalRep.HandlePacket(pkt, now); err != nil {
			fmt.Println("refused:", err)
		}
		rivalRep.BeforeStep(now)
		rival.Step()
		rivalRep.AfterStep()
	}
	p1, _ := owner.Object(crateID).Transform(0)
	p2, _ := rival.Object(crateID).Transform(0)
	fmt.Printf("owner's crate moved more than 3 m: %v; copies within 5 cm: %v\n",
		p1.X-(-3) > 3, p1.Sub(p2).Len() < 0.05)
	fmt.Println("rival mode:", rivalRep.Mode(crateID), "states applied:", rivalRep.Stats().Applied)
	// Output:
	// owner's crate moved more than 3 m: true; copies within 5 cm: true
	// rival mode: remote states applied: 120
}
