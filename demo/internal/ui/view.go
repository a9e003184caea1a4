package ui

import (
	"image/color"
	"math"

	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/physics"
)

// view is everything the window shows that is not game state: the camera,
// hit sparks, flashes, the KO moment, the HUD's text. Update advances it
// once per tick after the game's logic; Draw only reads it.
type view struct {
	world *physics.World // the match the effects belong to

	cam    camera // where the camera is
	camSet bool
	// headsTop is the screen y of the top of the highest head (the round
	// banners stay above it), +Inf with no fighters.
	headsTop float64

	sparks  []spark
	rings   []ring
	flash   [3]float32 // per peer (1, 2): 1 just hit, fading to 0
	lastHP  [3]int
	hitTick uint64 // the world tick whose hits were handled
	rng     uint64

	koPeer  int // the peer whose fighter is knocked out, 0: none
	koTicks int // ticks since the KO
	wasKO   [3]bool

	hudLines []hudLine     // the net HUD's figures, refreshed every hudEvery ticks
	samples  []game.Sample // the net graph
	ticks    uint64
}

type hudLine struct {
	s string
	c color.Color
}

// hudEvery is how often (ticks) the HUD's figures are refreshed: 4 times
// a second, readable and cheap.
const hudEvery = 15

// spark is one particle of a hit: world position and velocity (m, m/s).
type spark struct {
	p, v physics.Vec2
	life int // ticks left
}

// ring is the shock ring of a hit.
type ring struct {
	p   physics.Vec2
	age int
}

const (
	sparkLife = 22 // ticks
	ringLife  = 14
	koLength  = 150 // ticks of the KO moment (the camera closes in)
	koBanner  = 110 // ticks of the K.O. text, before the result's banner
)

func newView() *view {
	return &view{rng: 0x9e3779b97f4a7c15, samples: make([]game.Sample, 0, game.GraphLen)}
}

func (v *view) rand() float64 {
	// xorshift64*: effects only, never the game.
	v.rng ^= v.rng >> 12
	v.rng ^= v.rng << 25
	v.rng ^= v.rng >> 27
	return float64((v.rng*2685821657736338717)>>11) / (1 << 53)
}

// update advances the view by one tick, after the game's logic.
func (v *view) update(g *Game) {
	v.ticks++
	pl := g.app.Local()
	var w *physics.World
	if pl != nil && pl.Match() != nil {
		w = pl.World()
	}
	if w != v.world {
		// A new match (or none): forget the last one's effects.
		v.world, v.camSet, v.headsTop = w, false, math.Inf(1)
		v.sparks, v.rings = v.sparks[:0], v.rings[:0]
		v.flash, v.koPeer, v.koTicks, v.wasKO = [3]float32{}, 0, 0, [3]bool{}
		v.lastHP, v.hitTick = [3]int{}, 0
		v.hudLines, v.samples = nil, v.samples[:0]
	}
	if w == nil {
		return
	}
	v.effects(pl, w)
	target := frame(pl, v.region(g.hud), v.koPeer, v.koTicks)
	if !v.camSet {
		v.cam, v.camSet = target, true
	} else {
		v.cam = v.cam.toward(target, 0.08)
	}
	v.headsTop = headsTop(pl, v.cam)
	if g.hud && (v.hudLines == nil || v.ticks%hudEvery == 0) {
		v.hudLines = netLines(g.app, pl, v.hudLines[:0])
		if d := pl.Diag(); d != nil {
			v.samples = d.Graph(v.samples)
		}
	}
}

// region is the part of the screen the world is drawn in: below the top
// bar, above the HUD when it is shown.
func (v *view) region(hud bool) rect {
	r := rect{0, topBar, screenW, screenH - topBar}
	if hud {
		r.h -= hudH
	}
	return r
}

// effects spawns sparks and flashes for this tick's hits and HP losses,
// ages the particles, and follows KOs.
func (v *view) effects(pl *game.Player, w *physics.World) {
	for i := range v.flash {
		v.flash[i] = max(0, v.flash[i]-0.08)
	}
	n := 0
	for _, s := range v.sparks {
		s.life--
		if s.life <= 0 {
			continue
		}
		s.v.Y -= 9.8 / physics.TickRate
		s.p = s.p.Add(s.v.Scale(1.0 / physics.TickRate))
		v.sparks[n] = s
		n++
	}
	v.sparks = v.sparks[:n]
	n = 0
	for _, r := range v.rings {
		r.age++
		if r.age < ringLife {
			v.rings[n] = r
			n++
		}
	}
	v.rings = v.rings[:n]

	rep := pl.Match().Replicator()
	hit := [3]bool{}
	if t := w.Tick(); t != v.hitTick {
		v.hitTick = t
		for _, h := range w.Hits() {
			if h.Tick != t {
				continue
			}
			peer := peerOf(h.Victim)
			if peer == 0 {
				continue
			}
			p, _ := rep.Shown(h.Victim, h.Part.Index())
			att, _ := rep.Shown(h.Attacker, 0)
			dir := 1.0
			if att.X > p.X {
				dir = -1
			}
			v.burst(p.Add(physics.V(-dir*0.08, 0)), -dir, math.Min(1, h.Impulse/20)+0.5)
			v.flash[peer], hit[peer] = 1, true
		}
	}
	for _, f := range w.Fighters() {
		peer := peerOf(f.ID())
		if peer == 0 {
			continue
		}
		hp := f.HP()
		if v.lastHP[peer] != 0 && hp < v.lastHP[peer] && !hit[peer] {
			// Damage decided by the victim's owner, whose hit this world
			// did not see: a spark on the victim's torso.
			p, _ := rep.Shown(f.ID(), 0)
			v.burst(p, 0, 0.8)
			v.flash[peer] = 1
		}
		v.lastHP[peer] = hp
		ko := f.Action() == physics.ActionKO || hp == 0
		if ko && !v.wasKO[peer] {
			v.koPeer, v.koTicks = peer, 0
			p, _ := rep.Shown(f.ID(), 1)
			v.burst(p, 0, 1.6)
		}
		v.wasKO[peer] = ko
	}
	if v.koPeer != 0 {
		v.koTicks++
		if v.koTicks > koLength || !v.wasKO[v.koPeer] {
			v.koPeer, v.koTicks = 0, 0
		}
	}
}

// burst spawns the sparks and ring of a hit at p, thrown toward dir (-1
// left, 1 right, 0 all around), scaled by strength.
func (v *view) burst(p physics.Vec2, dir, strength float64) {
	v.rings = append(v.rings, ring{p: p})
	k := int(10 * strength)
	for range k {
		a := v.rand() * 2 * math.Pi
		sp := (1.5 + 3*v.rand()) * strength
		vel := physics.V(math.Cos(a)*sp, math.Sin(a)*sp+1.5)
		if dir != 0 && vel.X*dir < 0 {
			vel.X = -vel.X
		}
		v.sparks = append(v.sparks, spark{p: p, v: vel, life: sparkLife/2 + int(v.rand()*sparkLife/2)})
	}
}

// peerOf returns the peer (1, 2) whose fighter id is, 0 for others.
func peerOf(id physics.ObjectID) int {
	switch id {
	case game.Fighter1:
		return 1
	case game.Fighter2:
		return 2
	}
	return 0
}

// rect is a screen rectangle in logical pixels.
type rect struct{ x, y, w, h float64 }

// camera maps world metres (y up) to screen pixels (y down): the world
// point (cx, cy) at the centre of the region r, scale pixels a metre.
type camera struct {
	r      rect
	cx, cy float64
	scale  float64
}

func (c camera) pt(p physics.Vec2) (float32, float32) {
	return float32(c.r.x + c.r.w/2 + (p.X-c.cx)*c.scale), float32(c.r.y + c.r.h/2 - (p.Y-c.cy)*c.scale)
}

// toward moves c a fraction k of the way to t (the scale in log space, so
// zooming feels even); the region is t's.
func (c camera) toward(t camera, k float64) camera {
	c.r = t.r
	c.cx += (t.cx - c.cx) * k
	c.cy += (t.cy - c.cy) * k
	c.scale *= math.Pow(t.scale/c.scale, k)
	return c
}

// headRadius bounds a head's size from its body origin, m.
const headRadius = 0.2

// headsTop returns the screen y, in camera c, of the top of the highest
// fighter's head as it is drawn.
func headsTop(pl *game.Player, c camera) float64 {
	top := math.Inf(1)
	rep := pl.Match().Replicator()
	for _, f := range pl.World().Fighters() {
		p, _ := rep.Shown(f.ID(), physics.PartHead.Index())
		_, y := c.pt(p.Add(physics.V(0, headRadius)))
		top = math.Min(top, float64(y))
	}
	return top
}

// Framing: the view keeps this much room around the fighters (m), and is
// at least this wide (so a lone fighter is not a giant).
const (
	frameSide  = 1.7
	frameAbove = 2.0  // the sky the round banners go in, clear of the heads
	frameBelow = 0.75 // ground shown below the feet
	frameMinW  = 7.5
)

// frame returns the camera that frames both fighters in r, as large as the
// room around them allows and never wider than the arena, which it keeps in
// view at its walls. During a KO moment it closes in on the fallen fighter.
func frame(pl *game.Player, r rect, koPeer, koTicks int) camera {
	w := pl.World()
	rep := pl.Match().Replicator()
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, f := range w.Fighters() {
		if koPeer != 0 && peerOf(f.ID()) != koPeer && koTicks > 20 {
			continue
		}
		for i := range f.Object().NumBodies() {
			p, _ := rep.Shown(f.ID(), i)
			minX, maxX, maxY = math.Min(minX, p.X), math.Max(maxX, p.X), math.Max(maxY, p.Y)
		}
	}
	return frameBox(w.Arena(), w.Config().Arena.WallThickness, minX, maxX, maxY, r, koPeer != 0 && koTicks > 20)
}

// frameBox is frame's geometry: the camera for fighters spanning minX..maxX
// (and up to maxY) in the arena's interior in, walls wt thick, drawn in r;
// close frames tighter (the KO moment).
func frameBox(in physics.Rect, wt, minX, maxX, maxY float64, r rect, close bool) camera {
	if math.IsInf(minX, 0) || math.IsInf(maxX, 0) {
		minX, maxX = in.Min.X, in.Max.X
	}
	// Keep the fighters' box inside the arena (a body may poke into a
	// wall for a tick).
	minX, maxX = math.Max(minX, in.Min.X), math.Min(maxX, in.Max.X)
	maxY = math.Min(math.Max(maxY, 1.8), in.Max.Y)
	side := frameSide
	if close {
		side = 1.2
	}
	viewW := math.Max(maxX-minX+2*side, frameMinW)
	viewH := maxY + frameAbove + frameBelow
	s := math.Min(r.w/viewW, r.h/viewH)
	// Never wider than the arena with its walls.
	s = math.Max(s, r.w/(in.Max.X-in.Min.X+2*wt))
	halfW, halfH := r.w/2/s, r.h/2/s
	cx := (minX + maxX) / 2
	lo, hi := in.Min.X-wt+halfW, in.Max.X+wt-halfW
	if lo > hi {
		cx = (in.Min.X + in.Max.X) / 2
	} else {
		cx = math.Max(lo, math.Min(hi, cx))
	}
	cy := -frameBelow + halfH
	cy = math.Min(cy, in.Max.Y+wt-halfH)
	return camera{r: r, cx: cx, cy: cy, scale: s}
}
