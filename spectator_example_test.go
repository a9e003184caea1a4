package ragsync_test

import (
	"fmt"
	"log"
	"time"

	"github.com/ragsync/ragsync"
	"github.com/ragsync/ragsync/physics"
)

// A player sends its feed frame after every tick, once, to the spectator
// feed (sendToFeed stands for the game's connection to its server).
func ExampleMatch_AppendFeedFrame() {
	var m *ragsync.Match // the player's match, as in ExampleMatch
	var round ragsync.FeedRound
	var frame []byte
	tick := func() {
		if err := m.Tick(); err != nil {
			return
		}
		// round: what the game's rules say (round number, start, length).
		var err error
		if frame, err = m.AppendFeedFrame(frame[:0], round); err == nil {
			sendToFeed(frame)
		}
	}
	_ = tick
}

func sendToFeed([]byte) {}

// A spectator builds the players' world, feeds the frames it receives
// into a Spectator, and at every frame of its own writes the poses into
// the world it draws (it never steps it).
func ExampleSpectator() {
	world, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		log.Fatal(err)
	}
	// ... the same fighters and props, with the same ids, as the players'
	world.AddFighter(1, physics.FighterConfig{X: -1})
	world.AddFighter(2, physics.FighterConfig{X: 1})
	fighters := [2]physics.ObjectID{1, 2} // by side, as in the players' MatchConfig
	sp, err := ragsync.NewSpectator(world, ragsync.SpectatorConfig{Fighters: fighters})
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range world.Fighters() {
		f.SetControlled(false) // its owner's states drive it
	}
	var frames <-chan []byte // from the server's spectator feed
	ticker := time.NewTicker(time.Second / 60)
	defer ticker.Stop()
	for {
		select {
		case p, ok := <-frames:
			if !ok {
				return
			}
			if err := sp.Push(p, time.Now()); err != nil {
				log.Print(err) // a bad frame: dropped, nothing changed
			}
		case now := <-ticker.C:
			v := sp.View(now)
			for _, o := range world.Objects() {
				if pose := sp.Pose(o.ID()); pose != nil {
					o.WriteState(pose) // validated again; a bad pose changes nothing
				}
			}
			for k, id := range fighters {
				if v.Seen[k] {
					world.Fighter(id).SetRemoteState(v.Fighters[k]) // HP, action, facing
				}
			}
			hud := fmt.Sprintf("round %d, %v left, HP %d–%d, hits %d–%d, KOs %d–%d",
				v.Round, v.Timer.Round(time.Second), v.Fighters[0].HP, v.Fighters[1].HP,
				v.HitsTaken[1], v.HitsTaken[0], v.KOs[1], v.KOs[0])
			_ = hud // ... render world and hud
		}
	}
}
