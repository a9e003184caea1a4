// Package ui is the demo's window: Ebiten's game loop calls Update at a
// fixed 60 Hz, which reads the keyboard and runs game.App.Update (all game
// logic); Draw only reads the App's state and paints the arena, the
// fighters, props coloured by owner, the HUD and the status banners.
package ui

import (
	"errors"
	"log/slog"

	"github.com/hajimehoshi/ebiten/v2"

	"github.com/ragsync/ragsync/demo/internal/game"
)

// Game is the ebiten.Game of the demo.
type Game struct {
	app     *game.App
	hud     bool // F1
	ghost   bool // F2
	paint   *painter
	cam     camera
	samples []game.Sample
}

// Run opens the window and plays until it is closed or Esc is pressed.
func Run(cfg game.Config, log *slog.Logger) error {
	g := &Game{app: game.NewApp(cfg, log), paint: newPainter(), samples: make([]game.Sample, 0, game.GraphLen),
		hud: cfg.HUD, ghost: cfg.Ghost}
	defer g.app.Close()
	ebiten.SetTPS(60)
	ebiten.SetWindowSize(screenW, screenH)
	ebiten.SetWindowTitle("ragsync demo")
	ebiten.SetWindowResizingMode(ebiten.WindowResizingModeEnabled)
	ebiten.SetRunnableOnUnfocused(true) // the rival keeps playing when this window is in the background
	err := ebiten.RunGame(g)
	if errors.Is(err, ebiten.Termination) {
		return nil
	}
	return err
}

// Update runs one tick: keyboard, then the game logic.
func (g *Game) Update() error {
	k := readKeys()
	if k.quit {
		return ebiten.Termination
	}
	if k.hud {
		g.hud = !g.hud
	}
	if k.ghost {
		g.ghost = !g.ghost
	}
	g.app.Update(game.Controls{Fighter: k.fighter, Confirm: k.confirm})
	return nil
}

// Draw paints the current state; it changes nothing.
func (g *Game) Draw(screen *ebiten.Image) {
	screen.Fill(colSky)
	pl := g.app.Local()
	inMatch := pl != nil && pl.World() != nil && pl.Match() != nil
	if inMatch {
		g.drawWorld(screen, pl)
		g.drawTopBar(screen, pl)
	}
	if g.drawStatus(screen) {
		return
	}
	g.drawRoundBanner(screen, pl)
	if pl.Status() == game.StatusInterrupted {
		panel(screen, []string{"Connection interrupted - waiting for the rival..."}, nil, 420, 1.5)
	}
	if g.hud {
		g.drawNetHUD(screen, pl)
	}
}

// Layout keeps a fixed logical size; Ebiten scales it to the window.
func (g *Game) Layout(int, int) (int, int) { return screenW, screenH }
