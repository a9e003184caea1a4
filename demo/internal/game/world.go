package game

import (
	"github.com/ragsync/ragsync"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
)

// Object ids, the same on both peers.
const (
	Fighter1 physics.ObjectID = 1 // peer 1's (the offerer's), on the left
	Fighter2 physics.ObjectID = 2 // peer 2's, on the right
	CrateID  physics.ObjectID = 3 // shared; peer 1 owns it first
	BallID   physics.ObjectID = 4 // shared; peer 1 owns it first
)

// Objects lists every object of the match in id order.
var Objects = [...]physics.ObjectID{Fighter1, Fighter2, CrateID, BallID}

// FighterOf returns the fighter side p (1 or 2) controls: the one
// matchConfig lists for it.
func FighterOf(p ownership.PeerID) physics.ObjectID {
	if p == 2 {
		return Fighter2
	}
	return Fighter1
}

// Start positions.
const (
	fighterX = 2.0
	crateX   = -4.5
	ballX    = 4.5
)

// arena is the match's world with the start states of its objects, to reset
// them for a new round.
type arena struct {
	world *physics.World
	start map[physics.ObjectID][]physics.BodyState
}

// newArena builds the match's world, identical on both peers: two fighters
// facing each other, a crate and a ball.
func newArena() (*arena, error) {
	w, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		return nil, err
	}
	if _, err := w.AddFighter(Fighter1, physics.FighterConfig{X: -fighterX}); err != nil {
		return nil, err
	}
	if _, err := w.AddFighter(Fighter2, physics.FighterConfig{X: fighterX}); err != nil {
		return nil, err
	}
	if _, err := w.AddCrate(CrateID, physics.PropConfig{Pos: physics.V(crateX, 0.3)}); err != nil {
		return nil, err
	}
	if _, err := w.AddBall(BallID, physics.PropConfig{Pos: physics.V(ballX, 0.2)}); err != nil {
		return nil, err
	}
	a := &arena{world: w, start: map[physics.ObjectID][]physics.BodyState{}}
	for _, id := range Objects {
		a.start[id] = w.Object(id).ReadState(nil)
	}
	return a, nil
}

// matchConfig names the match's objects: each fighter is its side's for the
// whole match (fighter 1 the offerer's, fighter 2 the answerer's); the props
// are shared and start with side 1. onMessage gets the round protocol.
func matchConfig(onMessage func(p []byte)) ragsync.MatchConfig {
	return ragsync.MatchConfig{
		Fighters:  [2]physics.ObjectID{Fighter1, Fighter2},
		Props:     []physics.ObjectID{CrateID, BallID},
		OnMessage: onMessage,
	}
}

// reset puts every object this peer owns back at its start for a new
// round; the caller then declares the round (Match.ResetRound), which heals
// the local fighter and lets the rival's HP rise. The rival does the same with what it
// owns when it adopts the round; its new states then pull the local copies
// of its objects back smoothly (the correction's hard path, over a few
// ticks), without teleporting them twice.
func (a *arena) reset(r *ownership.Replicator, me physics.ObjectID) error {
	for _, id := range Objects {
		if r.Mode(id) != ownership.ModeOwned {
			continue
		}
		if err := a.world.Object(id).WriteState(a.start[id]); err != nil {
			return err
		}
	}
	a.world.Fighter(me).SetInput(0)
	return nil
}
