// Package ui is the demo's window: Ebiten's game loop calls Update at a
// fixed 60 Hz, which reads the keyboard, runs game.App.Update (all game
// logic) and advances the view (camera, hit sparks, the KO moment, the
// HUD's figures); Draw only reads the App's state and the view and paints
// the arena, the fighters, the HUD and the banners.
//
// Drawing is cheap by construction, so the logic keeps its 60 ticks a
// second even under a software GL: every shape of a frame goes into a few
// batched DrawTriangles calls (batch), all its text into one more, from a
// glyph atlas rendered once (textBatch), and no pixel is filled twice
// where it can be helped. BenchmarkDraw measures a frame with everything
// on.
package ui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hajimehoshi/ebiten/v2"

	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/physics"
)

// Game is the ebiten.Game of the demo.
type Game struct {
	cfg game.Config
	log *slog.Logger
	app *game.App // created by the first Update, once the window exists

	hud      bool       // F1
	ghost    bool       // F2
	controls bool       // F3 or H; shown at the start
	touched  bool       // the player toggled the controls panel
	fought   int        // ticks of fighting seen, to put the controls away
	shared   shareState // the page's share link (web only)

	// The logic's own clock: ticks run since start. Ebiten calls Update 60
	// times a second, but runs at most 5 to catch up after a slow frame;
	// Update runs the ticks the wall clock says are due, so the game keeps
	// 60 a second even when a frame takes longer than 5 ticks.
	start   time.Time
	done    int64
	confirm bool            // R or Enter pressed, for the next tick
	stop    <-chan struct{} // the process was asked to end

	watch *game.Watcher // -spectate or -replay (watch.go): no App
	speed int           // a replay's speed, an index in speeds

	view  *view
	batch *batch
	text  *textBatch
	texts []textItem
	xy    []float32
}

// controlsFor is how long (ticks of fighting) the controls panel stays up
// at the start if the player does not toggle it.
const controlsFor = 12 * 60

// NewGame returns the game; the App (pairing, the server) starts with the
// first Update.
func NewGame(cfg game.Config, log *slog.Logger) *Game {
	return &Game{cfg: cfg, log: log, hud: cfg.HUD, ghost: cfg.Ghost, controls: true,
		view: newView(), batch: newBatch(), text: newTextBatch()}
}

// ErrNoDisplay is returned by Run when no window can be opened.
var ErrNoDisplay = errors.New("no display to open the window on")

// Run opens the window and plays until it is closed, Esc is pressed or ctx
// is done (the process got SIGINT or SIGTERM); then it closes the App, so
// the rival's session hears a goodbye instead of waiting out a timeout.
func Run(ctx context.Context, cfg game.Config, log *slog.Logger) error {
	g := NewGame(cfg, log)
	g.stop = ctx.Done()
	defer g.Close()
	ebiten.SetTPS(60)
	ebiten.SetWindowSize(screenW, screenH)
	ebiten.SetWindowTitle("ragsync demo")
	ebiten.SetWindowResizingMode(ebiten.WindowResizingModeEnabled)
	ebiten.SetRunnableOnUnfocused(true) // the rival keeps playing when this window is in the background
	err := ebiten.RunGame(g)
	if errors.Is(err, ebiten.Termination) {
		return nil
	}
	if err != nil && g.app == nil && noDisplay(err) {
		return fmt.Errorf("%w (%v)", ErrNoDisplay, err)
	}
	return err
}

// noDisplay recognises Ebiten's errors for a missing window system.
func noDisplay(err error) bool {
	s := err.Error()
	for _, k := range []string{"no window system", "failed to open display", "DISPLAY", "X11", "x11", "Wayland", "wayland"} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// Close stops the App, if it started.
func (g *Game) Close() {
	if g.watch != nil {
		g.watch.Close()
	}
	if g.app != nil {
		g.app.Close()
	}
}

// App returns the game's App (nil before the first Update).
func (g *Game) App() *game.App { return g.app }

// Catching up: beyond catchUpAfter ticks behind the wall clock, Update
// runs up to maxCatchUp ticks at once; further behind than maxBacklog, the
// backlog is dropped (the machine was suspended, or is far too slow).
const (
	catchUpAfter = 2
	maxCatchUp   = 60
	maxBacklog   = 180
)

// Update runs the keyboard, then one tick of the game logic and of the
// view, or more when the wall clock says the game fell behind (see start).
func (g *Game) Update() error {
	now := time.Now()
	if g.watching() {
		k := readKeys()
		select {
		case <-g.stop:
			return ebiten.Termination
		default:
		}
		if k.quit {
			return ebiten.Termination
		}
		return g.updateWatch(k)
	}
	if g.app == nil {
		g.app = game.NewApp(g.cfg, g.log)
		g.app.SetFrameRate(ebiten.ActualFPS)
		g.start = now
	}
	k := readKeys()
	select {
	case <-g.stop:
		k.quit = true
	default:
	}
	if k.quit {
		return ebiten.Termination
	}
	g.apply(k)
	g.share()
	due := int64(now.Sub(g.start)/physics.TickDuration) + 1
	n := int64(1)
	switch behind := due - g.done; {
	case behind > maxBacklog:
		g.done = due - 1
	case behind > catchUpAfter:
		n = min(behind, maxCatchUp)
	case behind < -catchUpAfter: // ahead of the wall clock: wait a tick
		n = 0
	}
	g.confirm = g.confirm || k.confirm
	c := game.Controls{Fighter: k.fighter, Confirm: g.confirm}
	for range n {
		g.confirm = false
		g.app.Update(c)
		g.step()
		g.done++
		c.Confirm = false // a key press counts once
	}
	return nil
}

// share shows the page's share link while the local player waits for a
// human rival: the room's code once it has one, the page itself in quick
// match.
func (g *Game) share() {
	pl, cfg := g.app.Local(), g.app.Config()
	show := pl != nil && pl.Status() == game.StatusWaiting && cfg.Bot == game.BotOff &&
		(cfg.Room == "" || pl.Room() != "")
	room := ""
	if show && cfg.Room != "" {
		room = pl.Room()
	}
	g.shared.pageShare(show, room)
}

// apply handles the window's own keys.
func (g *Game) apply(k keys) {
	if k.hud {
		g.hud = !g.hud
	}
	if k.ghost {
		g.ghost = !g.ghost
	}
	if k.controls {
		g.controls, g.touched = !g.controls, true
	}
}

// step advances what the window shows by one tick, after the game's logic.
func (g *Game) step() {
	if pl := g.app.Local(); pl != nil && pl.Rules() != nil && pl.Rules().Phase(pl.Now()) == game.PhaseFight {
		g.fought++
		if g.fought == controlsFor && !g.touched {
			g.controls = false
		}
	}
	g.view.update(g)
}

// Draw paints the current state; it changes nothing the game or the view
// holds (only the batches' vertex buffers).
func (g *Game) Draw(screen *ebiten.Image) {
	g.texts = g.texts[:0]
	screen.Fill(colSky)
	if g.watch != nil {
		g.drawWatch(screen)
	} else if g.app != nil {
		g.drawAll(screen)
	}
	g.batch.flush(screen)
	for _, t := range g.texts {
		g.text.draw(screen, t.s, t.x, t.y, t.size, t.col, t.centre)
	}
	g.text.flush(screen)
}

func (g *Game) drawAll(screen *ebiten.Image) {
	pl := g.app.Local()
	inMatch := pl != nil && pl.World() != nil && pl.Match() != nil && g.view.world == pl.World() && g.view.camSet
	if inMatch {
		g.drawWorld(screen, pl) // flushes its shapes, clipped to its region
		g.drawTopBar(screen, pl)
	}
	if g.drawStatus(screen) {
		if g.controls {
			g.drawControls(screen)
		}
		return
	}
	g.drawRoundBanner(screen, pl)
	if pl.Status() == game.StatusReconnecting {
		g.panel(screen, []hudLine{{fmt.Sprintf("Rival reconnecting (%d s)", int(pl.ReconnectingFor().Seconds())), colWarn},
			{"Its game dropped out; the match is paused and resumes when it comes back.", colDim}},
			screenW/2, g.bannerY(2, 1.5)+120, 1.5)
	}
	if st := pl.Status(); (st == game.StatusConnected || st == game.StatusInterrupted) && pl.RivalInBackground() {
		g.panel(screen, []hudLine{{"The rival's tab is in the background", colWarn},
			{"Its browser stops its game while the tab is hidden; the match goes on when it is back.", colDim}},
			screenW/2, g.bannerY(2, 1.5)+120, 1.5)
	} else if pl.Status() == game.StatusConnected && pl.RivalSilent() {
		g.panel(screen, []hudLine{{"The rival sends no game states", colWarn},
			{fmt.Sprintf("for %.0f s: its fighter stays frozen. It answers pings, so it is connected: another game, or a client that does not play?",
				pl.Diag().StatesSilent().Seconds()), colDim}},
			screenW/2, g.bannerY(2, 1.5)+120, 1.5)
	}
	if pl.Status() == game.StatusInterrupted && !pl.RivalInBackground() {
		lines := []hudLine{{"Connection interrupted - waiting for the rival...", colWarn},
			{"Nothing has arrived from the rival for a moment; the match resumes by itself if it comes back.", colDim}}
		if s := pl.Session(); s != nil && s.Stats().SignalingLost {
			// The session waits up to the server's rejoin grace (30 s)
			// while the server is unreachable; say why.
			lines = []hudLine{{"Server lost, reconnecting...", colWarn},
				{"The signaling server does not answer; the match resumes by itself when it is back (up to 30 s).", colDim}}
		}
		g.panel(screen, lines, screenW/2, g.bannerY(2, 1.5)+120, 1.5)
	}
	if g.controls {
		g.drawControls(screen)
	}
	if g.hud {
		g.drawNetHUD(screen)
	}
}

// Layout keeps a fixed logical size; Ebiten scales it to the window.
func (g *Game) Layout(int, int) (int, int) { return screenW, screenH }
