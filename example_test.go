package ragsync_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/ragsync/ragsync"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/physics"
	"github.com/ragsync/ragsync/signaling/server"
)

// A p2p session is the Link a Match runs over.
var _ ragsync.Link = (*p2p.Session)(nil)

// A whole peer: pair through a signaling server, build the world both peers
// agree on, and run the match at 60 Hz. Both players run the same program;
// the pairing decides which side each plays. README.md shows this code.
func ExampleMatch() {
	ctx := context.Background()
	// QuickMatch ("") pairs the next two players on the server.
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
	_, err1 := world.AddFighter(1, physics.FighterConfig{X: -2})
	_, err2 := world.AddFighter(2, physics.FighterConfig{X: 2})
	_, err3 := world.AddCrate(3, physics.PropConfig{Pos: physics.V(0, 0.25)})
	if err := errors.Join(err1, err2, err3); err != nil {
		log.Fatal(err)
	}

	m, err := ragsync.NewMatch(world, sess, ragsync.MatchConfig{
		Fighters: [2]physics.ObjectID{1, 2}, // by side: the offerer's, the answerer's
		Props:    []physics.ObjectID{3},     // shared; side 1 starts with them
	})
	if err != nil {
		log.Fatal(err)
	}

	tick := time.NewTicker(time.Second / physics.TickRate)
	defer tick.Stop()
	for range tick.C { // or Ebiten's Update
		m.Fighter().SetInput(readKeyboard()) // the keys held now; jump, punch, kick act on the press
		switch err := m.Tick(); {
		case err == ragsync.ErrNotSynced:
			continue // the clock is still calibrating: a second at most
		case err != nil:
			log.Fatal(err) // an object of the world nobody registered
		}
		_ = m.Stats().Replicator.Correction.MaxError // how far the rival's copy is off
		_ = sess.Stats()                             // ping, jitter, loss, transport...
		select {
		case <-sess.Done():
			return // the rival left or the link died
		default:
		}
	}
}

// readKeyboard stands for your game's input: the keys held this tick.
// Jump, punch and kick act on the press (a held key does not repeat), so
// this player walks right and presses punch twice a second, letting go
// between presses.
func readKeyboard() physics.Input {
	keyTicks++
	if keyTicks%30 < 15 {
		return physics.InputRight | physics.InputPunch
	}
	return physics.InputRight
}

var keyTicks int

// ExampleMatch's code, run: two players in this process pair through a
// signaling server on loopback and play at least three seconds each. Side 1
// walks right for its first second; both screens show it.
func ExampleMatch_loopback() {
	// The server both players reach; quiet here.
	srv, err := server.Start("127.0.0.1:0", server.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	var (
		lines   [3]string // what each side saw, by side
		errs    [2]error  // by player
		played  sync.WaitGroup
		players sync.WaitGroup
	)
	played.Add(2)
	bothPlayed := make(chan struct{})
	go func() { played.Wait(); close(bothPlayed) }()
	players.Add(2)
	for i := range 2 {
		go func() {
			defer players.Done()
			side, line, err := play(srv.URL(), played.Done, bothPlayed)
			if err != nil {
				errs[i] = err
				return
			}
			lines[side] = line
		}()
	}
	players.Wait()
	for _, err := range errs {
		if err != nil {
			log.Fatal(err)
		}
	}
	for _, l := range lines[1:] {
		fmt.Println(l)
	}
	// Output:
	// side 1: fighter 1 moved right more than 0.5 m: true; fighter 2 stayed within 10 cm: true; states of the rival applied: true
	// side 2: fighter 1 moved right more than 0.5 m: true; fighter 2 stayed within 10 cm: true; states of the rival applied: true
}

// play is one player of ExampleMatch_loopback: ExampleMatch's code. It
// calls played after three seconds of synced ticks (or when it fails), and
// keeps playing until bothPlayed is closed, so that neither player stops
// sending while the other is still catching up.
func play(signalURL string, played func(), bothPlayed <-chan struct{}) (side int, seen string, err error) {
	played = sync.OnceFunc(played)
	defer played()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, err := p2p.Connect(ctx, signalURL, p2p.QuickMatch, p2p.Config{})
	if err != nil {
		return 0, "", err
	}
	defer sess.Close()

	world, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		return 0, "", err
	}
	_, err1 := world.AddFighter(1, physics.FighterConfig{X: -2})
	_, err2 := world.AddFighter(2, physics.FighterConfig{X: 2})
	_, err3 := world.AddCrate(3, physics.PropConfig{Pos: physics.V(0, 0.25)})
	if err := errors.Join(err1, err2, err3); err != nil {
		return 0, "", err
	}

	m, err := ragsync.NewMatch(world, sess, ragsync.MatchConfig{
		Fighters: [2]physics.ObjectID{1, 2},
		Props:    []physics.ObjectID{3},
	})
	if err != nil {
		return 0, "", err
	}

	tick := time.NewTicker(time.Second / physics.TickRate)
	defer tick.Stop()
	for ticks := 0; ; {
		select {
		case <-bothPlayed:
			x1, _ := world.Object(1).Transform(0)
			x2, _ := world.Object(2).Transform(0)
			seen = fmt.Sprintf("side %d: fighter 1 moved right more than 0.5 m: %v; fighter 2 stayed within 10 cm: %v; states of the rival applied: %v",
				m.Side(), x1.X-(-2) > 0.5, math.Abs(x2.X-2) < 0.1, m.Stats().Replicator.Applied > 0)
			return m.Side(), seen, nil
		case <-tick.C:
		}
		var in physics.Input
		if m.Side() == 1 && ticks < physics.TickRate {
			in = physics.InputRight
		}
		m.Fighter().SetInput(in)
		switch err := m.Tick(); {
		case err == ragsync.ErrNotSynced:
			continue
		case err != nil:
			return 0, "", err
		}
		if ticks++; ticks == 3*physics.TickRate {
			played()
		}
	}
}
