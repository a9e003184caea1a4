package ui

import (
	"fmt"
	"image"
	"math"
	"time"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/inpututil"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
)

// The window of a spectator (-spectate CODE) or a replay (-replay FILE): a
// game.Watcher instead of an App. Its world holds the interpolated poses
// (the Watcher writes them), drawn as they are; the top bar shows both
// fighters' HP, the round, its timer and the hits, and says that this is
// spectating (and how many watch) or a replay (with its position, speed and
// keys).

// watching reports whether the window shows a Watcher rather than plays.
func (g *Game) watching() bool { return g.cfg.Spectate != "" || g.cfg.Replay != "" }

// seekStep and the speeds a replay offers.
const seekStep = 5 * time.Second

var speeds = []float64{0.25, 0.5, 1, 2, 4}

// updateWatch runs one window tick of the Watcher, opening it first.
func (g *Game) updateWatch(k keys) error {
	if g.watch == nil {
		var err error
		if g.cfg.Replay != "" {
			g.watch, err = game.OpenReplay(g.cfg.Replay)
		} else {
			g.watch, err = game.NewSpectate(g.cfg.Signal, g.cfg.Spectate, g.cfg.Record)
		}
		if err != nil {
			return err
		}
		g.speed = 2 // speeds[2] = 1
	}
	w := g.watch
	if w.Replay() {
		switch {
		case k.confirm || inpututil.IsKeyJustPressed(ebiten.KeySpace):
			w.Paused = !w.Paused
		case inpututil.IsKeyJustPressed(ebiten.KeyArrowLeft) || inpututil.IsKeyJustPressed(ebiten.KeyA):
			w.Seek(w.Clock().Add(-seekStep))
		case inpututil.IsKeyJustPressed(ebiten.KeyArrowRight) || inpututil.IsKeyJustPressed(ebiten.KeyD):
			w.Seek(w.Clock().Add(seekStep))
		case inpututil.IsKeyJustPressed(ebiten.KeyArrowUp) || inpututil.IsKeyJustPressed(ebiten.KeyW):
			g.speed = min(g.speed+1, len(speeds)-1)
		case inpututil.IsKeyJustPressed(ebiten.KeyArrowDown) || inpututil.IsKeyJustPressed(ebiten.KeyS):
			g.speed = max(g.speed-1, 0)
		}
		w.Speed = speeds[g.speed]
	}
	w.Update()
	return nil
}

// drawWatch paints the Watcher's world and its top bar.
func (g *Game) drawWatch(screen *ebiten.Image) {
	w := g.watch
	if w == nil {
		return
	}
	wd := w.World()
	r := rect{0, topBar, screenW, screenH - topBar}
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, f := range wd.Fighters() {
		for _, st := range f.Object().ReadState(nil) {
			minX, maxX, maxY = math.Min(minX, st.Pos.X), math.Max(maxX, st.Pos.X), math.Max(maxY, st.Pos.Y)
		}
	}
	c := frameBox(wd.Arena(), wd.Config().Arena.WallThickness, minX, maxX, maxY, r, false)
	b := g.batch
	dst := screen.SubImage(image.Rect(int(r.x), int(r.y), int(r.x+r.w), int(r.y+r.h))).(*ebiten.Image)
	_, hy := c.pt(physics.V(0, 0))
	glow := float32(1.2 * c.scale)
	b.gradient(dst, float32(r.x), hy-glow, float32(r.w), glow, colSky, colSkyLow)
	for _, s := range wd.ArenaShapes() {
		g.solid(dst, c, &s, physics.Vec2{}, 0, colArena)
	}
	in := wd.Arena()
	x0, y0 := c.pt(physics.V(in.Min.X, 0))
	x1, _ := c.pt(physics.V(in.Max.X, 0))
	b.rect(dst, x0, y0, x1-x0, 4, colGround)
	for _, id := range []physics.ObjectID{game.CrateID, game.BallID} {
		o := wd.Object(id)
		st := o.ReadState(nil)
		for _, s := range o.Shapes() {
			g.prop(dst, c, &s, st[s.Body].Pos, st[s.Body].Angle, colPropOff)
		}
	}
	for _, f := range wd.Fighters() {
		peer := peerOf(f.ID())
		st := f.Object().ReadState(nil)
		for pass := range 2 {
			for _, s := range f.Object().Shapes() {
				col, grow := colFighter[peer], float32(0)
				if pass == 0 {
					col, grow = colOutline, outlinePx
				} else if farLimb(s.Body) {
					col = colFarLimb[peer]
				}
				g.shape(dst, c, &s, st[s.Body].Pos, st[s.Body].Angle, col, grow)
			}
		}
	}
	b.flush(dst)
	g.drawWatchBar(screen)
}

// drawWatchBar is the watcher's top bar.
func (g *Game) drawWatchBar(dst *ebiten.Image) {
	w := g.watch
	v := w.View()
	b := g.batch
	b.rect(dst, 0, 0, screenW, topBar, colBar)
	wd := w.World()
	for peer := 1; peer <= 2; peer++ {
		f := wd.Fighter(game.FighterOf(ownership.PeerID(peer)))
		hp := v.Fighters[peer-1].HP
		label := fmt.Sprintf("P%d  %d/%d  hits %d  KOs %d", peer, hp, f.MaxHP(), v.HitsDealt[peer-1], v.KOs[peer-1])
		x := float32(20)
		if peer == 2 {
			x = screenW - 20 - 460
		}
		b.rect(dst, x-10, 10, 6, 24, colFighter[peer])
		hpBar(b, dst, x, 10, 460, 24, hp, f.MaxHP(), peer == 2, 0)
		tx := float64(x) + 8
		if peer == 2 {
			tx = float64(x) + 460 - 8 - textWidth(label, 1)
		}
		g.say(label, tx, 15, 1, colText, false)
	}
	if v.Round > 0 {
		g.say(clock(v.Timer), screenW/2, 6, 2, colText, true)
		g.say(fmt.Sprintf("round %d", v.Round), screenW/2, 36, 1, colDim, true)
	}
	var status, keys string
	if w.Replay() {
		start, end := w.Span()
		pos := func(t clocksync.GameTime) string { return clock(t.Sub(start)) }
		state := fmt.Sprintf("%gx", w.Speed)
		if w.Paused {
			state = "paused"
		}
		status = fmt.Sprintf("REPLAY %s / %s  %s", pos(min(w.Clock(), end)), pos(end), state)
		keys = "Space pause  ←/→ seek 5 s  ↑/↓ speed  Esc quit"
	} else {
		st := w.States()
		status = fmt.Sprintf("SPECTATING room %s - %d watching - %d+%d states", w.Room(), w.Watchers(), st[0], st[1])
		switch {
		case w.Err() != nil:
			status += " - " + w.Err().Error()
		case w.Ended():
			status += " - the match ended"
		case st[0]+st[1] == 0:
			status += " - waiting for the players' feed"
		}
		keys = "Esc quit"
	}
	g.say(status, 20, 44, 1, colWarn, false)
	g.say(keys, screenW-20-textWidth(keys, 1), 44, 1, colDim, false)
}
