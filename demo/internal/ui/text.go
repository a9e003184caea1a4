package ui

import (
	"image/color"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/text/v2"
	"golang.org/x/image/font/basicfont"
)

// face is the bitmap font of every text: 7×13 pixels a glyph, drawn at
// whole multiples for headings.
var face = text.NewGoXFace(basicfont.Face7x13)

// Glyph size of face, and the line height used for blocks of text.
const (
	glyphW = 7
	glyphH = 13
	lineH  = 15
)

// Printable ASCII, the characters the atlas holds; others are drawn as '?'.
const (
	firstGlyph = ' '
	lastGlyph  = '~'
)

// textBatch draws text from a glyph atlas: the font's printable ASCII
// glyphs rendered once, white, side by side in one image. A line is then
// one textured quad a character, and every line of a frame goes into one
// DrawTriangles call. Drawing the same text with text.Draw costs a draw
// command a glyph and its layout every frame, and rendering each line into
// an image of its own costs a GPU texture for every changed line, which
// under a software GL (Xvfb) is slower still. The font is monospaced, so
// no layout is needed.
type textBatch struct {
	atlas *ebiten.Image
	vs    []ebiten.Vertex
	is    []uint16
	opts  ebiten.DrawTrianglesOptions
}

func newTextBatch() *textBatch {
	n := int(lastGlyph - firstGlyph + 1)
	img := ebiten.NewImage(n*glyphW, glyphH)
	var op text.DrawOptions
	for c := firstGlyph; c <= lastGlyph; c++ {
		op.GeoM.Reset()
		op.GeoM.Translate(float64((c-firstGlyph)*glyphW), 0)
		text.Draw(img, string(rune(c)), face, &op)
	}
	return &textBatch{atlas: img}
}

// textWidth returns the width in pixels of s at size.
func textWidth(s string, size float64) float64 { return float64(len([]rune(s))*glyphW) * size }

// draw queues one line s with its top at y, scaled by size (whole numbers
// keep the bitmap font crisp), left-aligned at x, or centred on x.
func (t *textBatch) draw(dst *ebiten.Image, s string, x, y, size float64, col color.Color, centre bool) {
	if s == "" {
		return
	}
	if centre {
		x -= textWidth(s, size) / 2
	}
	x, y = float64(int(x)), float64(int(y))
	r, g, b, a := col.RGBA()
	cr, cg, cb, ca := float32(r)/0xffff, float32(g)/0xffff, float32(b)/0xffff, float32(a)/0xffff
	if ca > 0 { // straight alpha for the vertices
		cr, cg, cb = cr/ca, cg/ca, cb/ca
	}
	w, h := float32(glyphW*size), float32(glyphH*size)
	px, py := float32(x), float32(y)
	for _, c := range s {
		if c < firstGlyph || c > lastGlyph {
			c = '?'
		}
		if c != ' ' {
			if len(t.vs)+4 > maxVerts {
				t.flush(dst)
			}
			sx := float32((c - firstGlyph) * glyphW)
			i := uint16(len(t.vs))
			v := func(dx, dy, sx, sy float32) ebiten.Vertex {
				return ebiten.Vertex{DstX: px + dx, DstY: py + dy, SrcX: sx, SrcY: sy, ColorR: cr, ColorG: cg, ColorB: cb, ColorA: ca}
			}
			t.vs = append(t.vs, v(0, 0, sx, 0), v(w, 0, sx+glyphW, 0), v(w, h, sx+glyphW, glyphH), v(0, h, sx, glyphH))
			t.is = append(t.is, i, i+1, i+2, i, i+2, i+3)
		}
		px += w
	}
}

// flush draws the queued text onto dst.
func (t *textBatch) flush(dst *ebiten.Image) {
	if len(t.is) > 0 {
		dst.DrawTriangles(t.vs, t.is, t.atlas, &t.opts)
	}
	t.vs, t.is = t.vs[:0], t.is[:0]
}
