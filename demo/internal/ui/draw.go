package ui

import (
	"image"
	"image/color"
	"math"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/vector"

	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
)

// Screen size (logical pixels) and the top bar's height.
const (
	screenW = 1280
	screenH = 720
	topBar  = 64
)

// Palette. Solid fills without anti-aliasing, so the window test can find
// these exact colours in a screenshot.
var (
	colSky     = color.RGBA{24, 28, 40, 255}
	colArena   = color.RGBA{112, 98, 82, 255}  // ground, walls, ceiling
	colGround  = color.RGBA{132, 118, 96, 255} // top edge of the ground
	colBar     = color.RGBA{12, 14, 20, 255}
	colText    = color.RGBA{235, 235, 240, 255}
	colDim     = color.RGBA{150, 155, 170, 255}
	colWarn    = color.RGBA{255, 196, 64, 255}
	colBad     = color.RGBA{255, 96, 80, 255}
	colGood    = color.RGBA{120, 220, 120, 255}
	colGhost   = color.RGBA{255, 255, 255, 200}
	colPanel   = color.RGBA{0, 0, 0, 170}
	colHPBack  = color.RGBA{60, 20, 20, 255}
	colHPFront = color.RGBA{80, 200, 90, 255}

	// Per peer: fighter body, its far limbs (drawn behind), and props it owns.
	colFighter = [3]color.RGBA{{}, {66, 135, 245, 255}, {235, 80, 70, 255}}
	colFarLimb = [3]color.RGBA{{}, {40, 90, 175, 255}, {165, 50, 45, 255}}
	colProp    = [3]color.RGBA{{}, {150, 190, 250, 255}, {250, 160, 150, 255}}
	colPropOff = color.RGBA{170, 170, 170, 255}
)

// camera maps world metres (y up) to screen pixels (y down).
type camera struct {
	scale, ox, oy float64
}

// newCamera fits the arena with its walls below the top bar.
func newCamera(w *physics.World) camera {
	cfg := w.Config().Arena
	in := w.Arena()
	wt := cfg.WallThickness
	viewW := in.Max.X - in.Min.X + 2*wt
	viewH := in.Max.Y - in.Min.Y + 2*wt
	s := math.Min(screenW/viewW, (screenH-topBar)/viewH)
	cx := (in.Min.X + in.Max.X) / 2
	return camera{scale: s, ox: screenW/2 - cx*s, oy: topBar + (in.Max.Y+wt)*s}
}

func (c camera) pt(p physics.Vec2) (float32, float32) {
	return float32(c.ox + p.X*c.scale), float32(c.oy - p.Y*c.scale)
}

// painter fills convex polygons with DrawTriangles (no anti-aliasing),
// reusing its buffers.
type painter struct {
	white *ebiten.Image
	vs    []ebiten.Vertex
	is    []uint16
	pts   []physics.Vec2
}

func newPainter() *painter {
	img := ebiten.NewImage(3, 3)
	img.Fill(color.White)
	return &painter{white: img.SubImage(image.Rect(1, 1, 2, 2)).(*ebiten.Image)}
}

func (p *painter) fillPoly(dst *ebiten.Image, c camera, pts []physics.Vec2, col color.RGBA) {
	if len(pts) < 3 {
		return
	}
	p.vs, p.is = p.vs[:0], p.is[:0]
	r, g, b, a := float32(col.R)/255, float32(col.G)/255, float32(col.B)/255, float32(col.A)/255
	for _, q := range pts {
		x, y := c.pt(q)
		p.vs = append(p.vs, ebiten.Vertex{DstX: x, DstY: y, SrcX: 1, SrcY: 1, ColorR: r, ColorG: g, ColorB: b, ColorA: a})
	}
	for i := 1; i+1 < len(pts); i++ {
		p.is = append(p.is, 0, uint16(i), uint16(i+1))
	}
	dst.DrawTriangles(p.vs, p.is, p.white, nil)
}

func strokePoly(dst *ebiten.Image, c camera, pts []physics.Vec2, col color.Color) {
	for i := range pts {
		x0, y0 := c.pt(pts[i])
		x1, y1 := c.pt(pts[(i+1)%len(pts)])
		vector.StrokeLine(dst, x0, y0, x1, y1, 1.5, col, true)
	}
}

// shapePoints transforms a box or polygon shape's vertices to world
// coordinates for a body at pos, angle.
func (p *painter) shapePoints(s *physics.Shape, pos physics.Vec2, angle float64) []physics.Vec2 {
	p.pts = p.pts[:0]
	for _, v := range s.Vertices {
		p.pts = append(p.pts, pos.Add(v.Rotate(angle)))
	}
	return p.pts
}

// drawShape fills (or, for a ghost, outlines) one shape of a body at pos,
// angle.
func (p *painter) drawShape(dst *ebiten.Image, c camera, s *physics.Shape, pos physics.Vec2, angle float64, col color.RGBA, outline bool) {
	switch s.Kind {
	case physics.ShapeCircle:
		ctr := pos.Add(s.Center.Rotate(angle))
		x, y := c.pt(ctr)
		r := float32(s.Radius * c.scale)
		if outline {
			vector.StrokeCircle(dst, x, y, r, 1.5, col, true)
			return
		}
		vector.FillCircle(dst, x, y, r, col, false)
		// A mark to see it roll.
		e := pos.Add(s.Center.Add(physics.V(s.Radius*0.7, 0)).Rotate(angle))
		ex, ey := c.pt(e)
		vector.StrokeLine(dst, x, y, ex, ey, 2, colSky, false)
	default:
		pts := p.shapePoints(s, pos, angle)
		if outline {
			strokePoly(dst, c, pts, col)
			return
		}
		p.fillPoly(dst, c, pts, col)
	}
}

// farLimb reports whether fighter body i is a left limb, drawn behind.
func farLimb(i int) bool {
	switch physics.PartOf(i) {
	case physics.PartUpperArmL, physics.PartLowerArmL, physics.PartUpperLegL, physics.PartLowerLegL:
		return true
	}
	return false
}

// drawWorld draws the arena, the props (coloured by their current owner)
// and the fighters, and, with ghost, the last received state of every
// object the rival owns.
func (g *Game) drawWorld(dst *ebiten.Image, pl *game.Player) {
	w := pl.World()
	c := newCamera(w)
	g.cam = c
	for _, s := range w.ArenaShapes() {
		g.paint.drawShape(dst, c, &s, physics.Vec2{}, 0, colArena, false)
	}
	// The ground's top edge.
	in := w.Arena()
	x0, y0 := c.pt(physics.V(in.Min.X, 0))
	x1, _ := c.pt(physics.V(in.Max.X, 0))
	vector.FillRect(dst, x0, y0, x1-x0, 3, colGround, false)

	// Bodies are drawn where the replicator shows them: a rival's body,
	// with the correction's smoothing, its own body as it is.
	rep := pl.Match().Replicator()
	reg := rep.Registry()
	for _, id := range []physics.ObjectID{game.CrateID, game.BallID} {
		o := w.Object(id)
		owner, _ := reg.Owner(id)
		col := colPropOff
		if owner == 1 || owner == 2 {
			col = colProp[owner]
		}
		for _, s := range o.Shapes() {
			pos, ang := rep.Shown(id, s.Body)
			g.paint.drawShape(dst, c, &s, pos, ang, col, false)
		}
	}
	for _, f := range w.Fighters() {
		o := f.Object()
		peer := 1
		if f.ID() == game.Fighter2 {
			peer = 2
		}
		shapes := o.Shapes()
		for pass := range 2 {
			for i := range shapes {
				s := &shapes[i]
				far := farLimb(s.Body)
				if (pass == 0) != far {
					continue
				}
				col := colFighter[peer]
				if far {
					col = colFarLimb[peer]
				}
				pos, ang := rep.Shown(f.ID(), s.Body)
				g.paint.drawShape(dst, c, s, pos, ang, col, false)
			}
		}
	}
	if g.ghost {
		g.drawGhosts(dst, pl, c)
	}
}

// drawGhosts outlines every body of the rival's objects where the rival's
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
			g.paint.drawShape(dst, c, &s, st.Pos, st.Angle, colGhost, true)
		}
	}
}
