package ui

import (
	"image"
	"image/color"
	"math"

	"github.com/hajimehoshi/ebiten/v2"
)

// batch collects solid triangles (rectangles, lines, circles, polygons,
// capsules) and draws them with one DrawTriangles call per flush, from a
// one-pixel white source. Ebiten's vector package fills every path through
// a stencil pass of its own; under a software GL (Xvfb) a few hundred of
// those cost tens of milliseconds a frame, where one batch of the same
// triangles costs well under one. No anti-aliasing: solid colours stay
// exact, which the window test relies on.
//
// A batch is used from Draw only, and keeps its buffers between frames, so
// drawing allocates nothing once they have grown.
type batch struct {
	white *ebiten.Image
	vs    []ebiten.Vertex
	is    []uint16
	opts  ebiten.DrawTrianglesOptions
}

func newBatch() *batch {
	img := ebiten.NewImage(3, 3)
	img.Fill(color.White)
	return &batch{white: img.SubImage(image.Rect(1, 1, 2, 2)).(*ebiten.Image)}
}

// maxVerts keeps the indices within uint16; flush is automatic past it.
const maxVerts = 60000

// flush draws what was collected onto dst and empties the batch.
func (b *batch) flush(dst *ebiten.Image) {
	if len(b.is) > 0 {
		dst.DrawTriangles(b.vs, b.is, b.white, &b.opts)
	}
	b.vs, b.is = b.vs[:0], b.is[:0]
}

// reserve makes room for n more vertices (flushing to dst if needed) and
// returns the index of the first.
func (b *batch) reserve(dst *ebiten.Image, n int) uint16 {
	if len(b.vs)+n > maxVerts {
		b.flush(dst)
	}
	return uint16(len(b.vs))
}

func vert(x, y float32, c color.RGBA) ebiten.Vertex {
	// Straight alpha: DrawTrianglesOptions' default ColorScaleMode.
	a := float32(c.A) / 255
	return ebiten.Vertex{DstX: x, DstY: y, SrcX: 1, SrcY: 1,
		ColorR: float32(c.R) / 255, ColorG: float32(c.G) / 255, ColorB: float32(c.B) / 255, ColorA: a}
}

// quad adds the quadrilateral p0 p1 p2 p3 (in order around it).
func (b *batch) quad(dst *ebiten.Image, x0, y0, x1, y1, x2, y2, x3, y3 float32, c color.RGBA) {
	i := b.reserve(dst, 4)
	b.vs = append(b.vs, vert(x0, y0, c), vert(x1, y1, c), vert(x2, y2, c), vert(x3, y3, c))
	b.is = append(b.is, i, i+1, i+2, i, i+2, i+3)
}

// rect fills an axis-aligned rectangle.
func (b *batch) rect(dst *ebiten.Image, x, y, w, h float32, c color.RGBA) {
	b.quad(dst, x, y, x+w, y, x+w, y+h, x, y+h, c)
}

// gradient fills an axis-aligned rectangle from top colour to bottom colour.
func (b *batch) gradient(dst *ebiten.Image, x, y, w, h float32, top, bottom color.RGBA) {
	i := b.reserve(dst, 4)
	b.vs = append(b.vs, vert(x, y, top), vert(x+w, y, top), vert(x+w, y+h, bottom), vert(x, y+h, bottom))
	b.is = append(b.is, i, i+1, i+2, i, i+2, i+3)
}

// strokeRect outlines an axis-aligned rectangle with lines of width t.
func (b *batch) strokeRect(dst *ebiten.Image, x, y, w, h, t float32, c color.RGBA) {
	b.rect(dst, x, y, w, t, c)
	b.rect(dst, x, y+h-t, w, t, c)
	b.rect(dst, x, y+t, t, h-2*t, c)
	b.rect(dst, x+w-t, y+t, t, h-2*t, c)
}

// line adds a segment of width w with square ends.
func (b *batch) line(dst *ebiten.Image, x0, y0, x1, y1, w float32, c color.RGBA) {
	dx, dy := x1-x0, y1-y0
	l := float32(math.Hypot(float64(dx), float64(dy)))
	if l == 0 {
		return
	}
	nx, ny := -dy/l*w/2, dx/l*w/2
	b.quad(dst, x0+nx, y0+ny, x1+nx, y1+ny, x1-nx, y1-ny, x0-nx, y0-ny, c)
}

// segments is how many sides a circle of radius r pixels gets.
func segments(r float32) int {
	n := int(r / 2)
	return max(10, min(n, 40))
}

// circle fills a disc.
func (b *batch) circle(dst *ebiten.Image, x, y, r float32, c color.RGBA) {
	if r <= 0 {
		return
	}
	n := segments(r)
	i := b.reserve(dst, n+1)
	b.vs = append(b.vs, vert(x, y, c))
	for k := range n {
		a := 2 * math.Pi * float64(k) / float64(n)
		b.vs = append(b.vs, vert(x+r*float32(math.Cos(a)), y+r*float32(math.Sin(a)), c))
	}
	for k := range n {
		b.is = append(b.is, i, i+1+uint16(k), i+1+uint16((k+1)%n))
	}
}

// ring outlines a circle with a band of width w.
func (b *batch) ring(dst *ebiten.Image, x, y, r, w float32, c color.RGBA) {
	n := segments(r)
	i := b.reserve(dst, 2*n)
	ri := max(r-w, 0)
	for k := range n {
		a := 2 * math.Pi * float64(k) / float64(n)
		cs, sn := float32(math.Cos(a)), float32(math.Sin(a))
		b.vs = append(b.vs, vert(x+r*cs, y+r*sn, c), vert(x+ri*cs, y+ri*sn, c))
	}
	for k := range n {
		o, p := i+uint16(2*k), i+uint16(2*((k+1)%n))
		b.is = append(b.is, o, p, o+1, p, p+1, o+1)
	}
}

// capsule fills a segment of radius r with round ends: a limb with volume.
func (b *batch) capsule(dst *ebiten.Image, x0, y0, x1, y1, r float32, c color.RGBA) {
	b.line(dst, x0, y0, x1, y1, 2*r, c)
	b.circle(dst, x0, y0, r, c)
	b.circle(dst, x1, y1, r, c)
}

// poly fills a convex polygon given as x, y pairs.
func (b *batch) poly(dst *ebiten.Image, xy []float32, c color.RGBA) {
	n := len(xy) / 2
	if n < 3 {
		return
	}
	i := b.reserve(dst, n)
	for k := range n {
		b.vs = append(b.vs, vert(xy[2*k], xy[2*k+1], c))
	}
	for k := 1; k+1 < n; k++ {
		b.is = append(b.is, i, i+uint16(k), i+uint16(k+1))
	}
}

// polyline strokes the open path xy (x, y pairs) with width w.
func (b *batch) polyline(dst *ebiten.Image, xy []float32, w float32, c color.RGBA) {
	for k := 0; k+3 < len(xy); k += 2 {
		b.line(dst, xy[k], xy[k+1], xy[k+2], xy[k+3], w, c)
	}
}
