package ui

import (
	"image"
	"image/color"
	"math"

	"github.com/hajimehoshi/ebiten/v2"

	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
)

// Screen size (logical pixels), the top bar's height and the net HUD's
// (drawn below the world, which then gets less room).
const (
	screenW = 1280
	screenH = 720
	topBar  = 64
	hudH    = 250
)

// Palette. Solid fills without anti-aliasing, so the window test can find
// these exact colours in a screenshot.
var (
	colSky     = color.RGBA{24, 28, 40, 255}
	colSkyLow  = color.RGBA{52, 50, 66, 255}
	colArena   = color.RGBA{112, 98, 82, 255}  // ground, walls, ceiling
	colGround  = color.RGBA{132, 118, 96, 255} // top edge of the ground
	colShadow  = color.RGBA{0, 0, 0, 90}
	colBar     = color.RGBA{12, 14, 20, 255}
	colText    = color.RGBA{235, 235, 240, 255}
	colDim     = color.RGBA{150, 155, 170, 255}
	colWarn    = color.RGBA{255, 196, 64, 255}
	colBad     = color.RGBA{255, 96, 80, 255}
	colGood    = color.RGBA{120, 220, 120, 255}
	colGhost   = color.RGBA{255, 255, 255, 55}
	colPanel   = color.RGBA{0, 0, 0, 170}
	colHPBack  = color.RGBA{60, 20, 20, 255}
	colHPFront = color.RGBA{80, 200, 90, 255}
	colOutline = color.RGBA{14, 14, 20, 255}
	colSpark   = color.RGBA{255, 236, 150, 255}
	colSparkHi = color.RGBA{255, 255, 255, 255}
	colEye     = color.RGBA{236, 236, 228, 255} // not the sparks' white

	// Per peer: fighter body, its far limbs (drawn behind), and props it owns.
	colFighter = [3]color.RGBA{{}, {66, 135, 245, 255}, {235, 80, 70, 255}}
	colFarLimb = [3]color.RGBA{{}, {40, 90, 175, 255}, {165, 50, 45, 255}}
	colProp    = [3]color.RGBA{{}, {150, 190, 250, 255}, {250, 160, 150, 255}}
	colPropOff = color.RGBA{170, 170, 170, 255}
)

// mix returns a moved a fraction t toward b.
func mix(a, b color.RGBA, t float32) color.RGBA {
	l := func(x, y uint8) uint8 { return uint8(float32(x) + (float32(y)-float32(x))*t) }
	return color.RGBA{l(a.R, b.R), l(a.G, b.G), l(a.B, b.B), l(a.A, b.A)}
}

// farLimb reports whether fighter body i is a left limb, drawn behind.
func farLimb(i int) bool {
	switch physics.PartOf(i) {
	case physics.PartUpperArmL, physics.PartLowerArmL, physics.PartUpperLegL, physics.PartLowerLegL:
		return true
	}
	return false
}

// outlinePx is the width of a fighter's outline, in pixels.
const outlinePx = 2.5

// shape draws one fixture of a body at pos, angle: a circle, or a box as a
// capsule along its long side (limbs and torso get round ends, so the
// fighter reads as a body, not a stick figure), or any other polygon as
// it is. grow widens it by that many pixels (the outline pass).
func (g *Game) shape(dst *ebiten.Image, c camera, s *physics.Shape, pos physics.Vec2, angle float64, col color.RGBA, grow float32) {
	b := g.batch
	switch s.Kind {
	case physics.ShapeCircle:
		x, y := c.pt(pos.Add(s.Center.Rotate(angle)))
		b.circle(dst, x, y, float32(s.Radius*c.scale)+grow, col)
	case physics.ShapeBox:
		a := angle + s.Angle
		ctr := pos.Add(s.Center.Rotate(angle))
		hx, hy := s.HalfExtents.X, s.HalfExtents.Y
		var u physics.Vec2
		var half, r float64
		if hy >= hx {
			u, half, r = physics.V(0, 1).Rotate(a), hy-hx, hx
		} else {
			u, half, r = physics.V(1, 0).Rotate(a), hx-hy, hy
		}
		x0, y0 := c.pt(ctr.Sub(u.Scale(half)))
		x1, y1 := c.pt(ctr.Add(u.Scale(half)))
		b.capsule(dst, x0, y0, x1, y1, float32(r*c.scale)+grow, col)
	case physics.ShapePolygon:
		g.xy = g.xy[:0]
		for _, v := range s.Vertices {
			x, y := c.pt(pos.Add(v.Rotate(angle)))
			g.xy = append(g.xy, x, y)
		}
		b.poly(dst, g.xy, col)
	}
}

// solid draws a prop's or the arena's fixture exactly as its geometry is.
func (g *Game) solid(dst *ebiten.Image, c camera, s *physics.Shape, pos physics.Vec2, angle float64, col color.RGBA) {
	b := g.batch
	switch s.Kind {
	case physics.ShapeCircle:
		ctr := pos.Add(s.Center.Rotate(angle))
		x, y := c.pt(ctr)
		r := float32(s.Radius * c.scale)
		b.circle(dst, x, y, r+outlinePx, colOutline)
		b.circle(dst, x, y, r, col)
		// A mark to see it roll.
		ex, ey := c.pt(pos.Add(s.Center.Add(physics.V(s.Radius*0.7, 0)).Rotate(angle)))
		b.line(dst, x, y, ex, ey, 3, colOutline)
	case physics.ShapeBox, physics.ShapePolygon:
		g.xy = g.xy[:0]
		for _, v := range s.Vertices {
			x, y := c.pt(pos.Add(v.Rotate(angle)))
			g.xy = append(g.xy, x, y)
		}
		b.poly(dst, g.xy, col)
	case physics.ShapeEdge, physics.ShapeChain:
		g.xy = g.xy[:0]
		for _, v := range s.Vertices {
			x, y := c.pt(pos.Add(v.Rotate(angle)))
			g.xy = append(g.xy, x, y)
		}
		b.polyline(dst, g.xy, 3, col)
	}
}

// Prop materials: the crate's wood and the ball's panels, tinted by the
// owner's colour.
var (
	colWood     = color.RGBA{176, 122, 68, 255}
	colWoodDark = color.RGBA{112, 72, 36, 255}
	colBallLite = color.RGBA{245, 245, 240, 255}
)

// prop draws a shared prop with its geometry and some detail to read it
// by: a box as a wooden crate (frame, planks, a brace), a circle as a
// panelled ball (a band and a hub that turn with it, a fixed highlight);
// owner is its owner's colour.
func (g *Game) prop(dst *ebiten.Image, c camera, s *physics.Shape, pos physics.Vec2, angle float64, owner color.RGBA) {
	b := g.batch
	switch {
	case s.Kind == physics.ShapeCircle:
		ctr := pos.Add(s.Center.Rotate(angle))
		x, y := c.pt(ctr)
		r := float32(s.Radius * c.scale)
		b.circle(dst, x, y, r+outlinePx, colOutline)
		b.circle(dst, x, y, r, mix(colBallLite, owner, 0.35))
		// The band: a panel of the owner's colour across the ball.
		ax, ay := c.pt(ctr.Add(physics.V(-s.Radius*0.92, 0).Rotate(angle)))
		bx, by := c.pt(ctr.Add(physics.V(s.Radius*0.92, 0).Rotate(angle)))
		b.line(dst, ax, ay, bx, by, r*0.45, mix(owner, colOutline, 0.15))
		b.circle(dst, x, y, r*0.3, colOutline)
		b.circle(dst, x, y, r*0.2, colBallLite)
		b.circle(dst, x-r*0.38, y-r*0.42, r*0.16, color.RGBA{255, 255, 255, 150})
	case (s.Kind == physics.ShapeBox || s.Kind == physics.ShapePolygon) && len(s.Vertices) == 4:
		var xy [8]float32
		var cx, cy float32
		for i, v := range s.Vertices {
			xy[2*i], xy[2*i+1] = c.pt(pos.Add(v.Rotate(angle)))
			cx, cy = cx+xy[2*i]/4, cy+xy[2*i+1]/4
		}
		// Outline: the corners pushed outlinePx out from the centre.
		out := g.xy[:0]
		for i := 0; i < 8; i += 2 {
			dx, dy := xy[i]-cx, xy[i+1]-cy
			d := float32(math.Hypot(float64(dx), float64(dy)))
			k := (d + 2*outlinePx) / max(d, 1)
			out = append(out, cx+dx*k, cy+dy*k)
		}
		b.poly(dst, out, colOutline)
		wood := mix(colWood, owner, 0.3)
		b.poly(dst, xy[:], mix(colWoodDark, owner, 0.2))
		// The planks inside the frame: the box shrunk toward its centre.
		in := out[:0]
		for i := 0; i < 8; i += 2 {
			in = append(in, cx+(xy[i]-cx)*0.78, cy+(xy[i+1]-cy)*0.78)
		}
		b.poly(dst, in, wood)
		dark := mix(colWoodDark, owner, 0.2)
		for _, t := range []float32{1.0 / 3, 2.0 / 3} { // plank seams, parallel to one pair of sides
			b.line(dst, in[0]+(in[2]-in[0])*t, in[1]+(in[3]-in[1])*t, in[6]+(in[4]-in[6])*t, in[7]+(in[5]-in[7])*t, 1.5, dark)
		}
		b.line(dst, in[0], in[1], in[4], in[5], float32(0.06*c.scale), dark) // the brace
		g.xy = in
	default:
		g.solid(dst, c, s, pos, angle, owner)
	}
}

// drawWorld draws the arena, the props (coloured by their current owner),
// the fighters with their hit flashes, the sparks and, with ghost, the last
// received state of every object the rival owns.
//
// Under a software GL the cost of a frame is mostly its pixels: the sky is
// the screen's clear colour with a glow near the horizon only, and the
// world is drawn clipped to its region (a sub-image), so the arena's shapes
// never fill the top bar's or the HUD's pixels twice.
func (g *Game) drawWorld(screen *ebiten.Image, pl *game.Player) {
	v := g.view
	c := v.cam
	w := pl.World()
	b := g.batch
	r := c.r
	dst := screen.SubImage(image.Rect(int(r.x), int(r.y), int(r.x+r.w), int(r.y+r.h))).(*ebiten.Image)
	defer b.flush(dst)
	_, hy := c.pt(physics.V(0, 0))
	glow := float32(1.2 * c.scale)
	b.gradient(dst, float32(r.x), hy-glow, float32(r.w), glow, colSky, colSkyLow)
	for _, s := range w.ArenaShapes() {
		g.solid(dst, c, &s, physics.Vec2{}, 0, colArena)
	}
	in := w.Arena()
	x0, y0 := c.pt(physics.V(in.Min.X, 0))
	x1, _ := c.pt(physics.V(in.Max.X, 0))
	b.rect(dst, x0, y0, x1-x0, 4, colGround)

	// Bodies are drawn where the replicator shows them: a rival's body,
	// with the correction's smoothing, its own body as it is.
	rep := pl.Match().Replicator()
	// Shadows on the ground.
	for _, f := range w.Fighters() {
		p, _ := rep.Shown(f.ID(), 0)
		sx, sy := c.pt(physics.V(p.X, 0))
		hw := float32(0.45*c.scale) * float32(max(0.3, 1-p.Y/4))
		b.quad(dst, sx-hw, sy-3, sx+hw, sy-3, sx+hw*0.8, sy+4, sx-hw*0.8, sy+4, colShadow)
	}
	for _, id := range []physics.ObjectID{game.CrateID, game.BallID} {
		o := w.Object(id)
		owner, _ := rep.Owner(id)
		col := colPropOff
		if owner == 1 || owner == 2 {
			col = colProp[owner]
		}
		for _, s := range o.Shapes() {
			pos, ang := rep.Shown(id, s.Body)
			g.prop(dst, c, &s, pos, ang, col)
		}
	}
	for _, f := range w.Fighters() {
		g.drawFighter(dst, c, rep, f)
	}
	if g.ghost {
		g.drawGhosts(dst, pl, c)
	}
	for _, s := range v.sparks {
		x, y := c.pt(s.p)
		tx, ty := c.pt(s.p.Sub(s.v.Scale(0.025)))
		col := colSpark
		if s.life > sparkLife*2/3 {
			col = colSparkHi
		}
		b.line(dst, tx, ty, x, y, 3, col)
	}
	for _, rg := range v.rings {
		x, y := c.pt(rg.p)
		k := float32(rg.age) / ringLife
		rad := float32(0.1*c.scale) + k*float32(0.45*c.scale)
		b.ring(dst, x, y, rad, 4*(1-k)+1, color.RGBA{255, 240, 180, uint8(230 * (1 - k))})
	}
	// The KO moment opens with a white flash.
	if t := v.koTicks; v.koPeer != 0 && t < 12 {
		b.rect(dst, float32(r.x), float32(r.y), float32(r.w), float32(r.h), color.RGBA{255, 255, 255, uint8(200 - 15*t)})
	}
}

// drawFighter draws a fighter with volume: dark outlines first, then the
// far limbs in a darker shade, then the torso, head and near limbs, all
// whitened for a moment after a hit, and an eye on the side it faces.
func (g *Game) drawFighter(dst *ebiten.Image, c camera, rep *ownership.Replicator, f *physics.Fighter) {
	peer := peerOf(f.ID())
	if peer == 0 {
		return
	}
	o := f.Object()
	shapes := o.Shapes()
	fl := g.view.flash[peer]
	body, far := mix(colFighter[peer], colSparkHi, 0.8*fl), mix(colFarLimb[peer], colSparkHi, 0.8*fl)
	for pass := range 2 {
		farPass := pass == 0
		for i := range shapes {
			s := &shapes[i]
			if farLimb(s.Body) != farPass {
				continue
			}
			pos, ang := rep.Shown(f.ID(), s.Body)
			g.shape(dst, c, s, pos, ang, colOutline, outlinePx)
		}
		col := body
		if farPass {
			col = far
		}
		for i := range shapes {
			s := &shapes[i]
			if farLimb(s.Body) != farPass {
				continue
			}
			pos, ang := rep.Shown(f.ID(), s.Body)
			g.shape(dst, c, s, pos, ang, col, 0)
		}
	}
	// The eye, on the side the fighter faces (a KO'd fighter's is shut).
	head, _ := rep.Shown(f.ID(), physics.PartHead.Index())
	dir := 1.0
	if f.Facing() == physics.FacingLeft {
		dir = -1
	}
	x, y := c.pt(head.Add(physics.V(0.055*dir, 0.03)))
	rad := float32(0.025 * c.scale)
	if f.Action() == physics.ActionKO {
		g.batch.line(dst, x-rad, y, x+rad, y, 2, colOutline)
		return
	}
	g.batch.circle(dst, x, y, rad, colEye)
	g.batch.circle(dst, x+float32(dir)*rad*0.35, y, rad*0.5, colOutline)
}

// drawGhosts shades every body of the rival's objects where the rival's
// last received state put it (Corrector.Target), so the correction toward
// it can be seen.
func (g *Game) drawGhosts(dst *ebiten.Image, pl *game.Player, c camera) {
	w := pl.World()
	m := pl.Match()
	for _, id := range game.Objects {
		if m.Replicator().Mode(id) != ownership.ModeRemote {
			continue
		}
		cr := m.Replicator().Corrector(id)
		if cr == nil || !cr.HasTarget() {
			continue
		}
		o := w.Object(id)
		for _, s := range o.Shapes() {
			st, _ := cr.Target(s.Body)
			g.shape(dst, c, &s, st.Pos, st.Angle, colGhost, 0)
		}
	}
}
