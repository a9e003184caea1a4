package ragsync_test

import (
	"context"
	"log"
	"time"

	"github.com/ragsync/ragsync"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/physics"
	"github.com/ragsync/ragsync/signaling"
)

// A whole peer: pair through a signaling server, build the world both peers
// agree on, and run the match at 60 Hz. Both players run the same program;
// the session tells each which side it is.
func ExampleMatch() {
	ctx := context.Background()
	// "" is quick match: the next two players on the server are paired.
	sess, err := p2p.Connect(ctx, "http://127.0.0.1:8080", p2p.QuickMatch, p2p.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	// The same world on both peers, with the same object ids.
	world, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		log.Fatal(err)
	}
	const left, right, crate physics.ObjectID = 1, 2, 3
	world.AddFighter(left, physics.FighterConfig{X: -2})
	world.AddFighter(right, physics.FighterConfig{X: 2})
	world.AddCrate(crate, physics.PropConfig{Pos: physics.V(0, 0.25)})

	// The offerer is peer 1 and plays the left fighter.
	local, remote, mine := ownership.PeerID(1), ownership.PeerID(2), left
	if sess.Role() == signaling.RoleAnswerer {
		local, remote, mine = 2, 1, right
	}
	m, err := ragsync.NewMatch(world, sess, ragsync.MatchConfig{Local: local, Remote: remote})
	if err != nil {
		log.Fatal(err)
	}
	rep := m.Replicator()
	rep.Track(left, 1, false)  // each fighter belongs to its player
	rep.Track(right, 2, false) //
	rep.Track(crate, 1, true)  // the crate changes hands on touch
	sess.StartMatch()

	tick := time.NewTicker(time.Second / physics.TickRate)
	defer tick.Stop()
	for range tick.C {
		world.Fighter(mine).SetInput(readKeyboard())
		if err := m.Tick(); err == ragsync.ErrNotSynced {
			continue // the clock is still calibrating: a second at most
		}
		s := m.Stats()
		_ = s.Replicator.Correction.MaxError // how far the rival's copy is off
		_ = sess.Stats()                     // ping, jitter, loss, transport...
		select {
		case <-sess.Done():
			return // the rival left or the link died
		default:
		}
	}
}

func readKeyboard() physics.Input { return physics.InputRight | physics.InputPunch }
