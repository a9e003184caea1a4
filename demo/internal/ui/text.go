package ui

import (
	"image"
	"image/color"

	"github.com/hajimehoshi/ebiten/v2"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// face is the bitmap font of every text: 7×13 pixels a glyph, drawn at
// whole multiples for headings.
var face = basicfont.Face7x13

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
// no layout is needed. The atlas is copied from the font's glyph masks,
// not drawn with Ebiten's text package, which would link a font shaper
// and its image decoders into the web build for nothing.
type textBatch struct {
	atlas *ebiten.Image
	vs    []ebiten.Vertex
	is    []uint16
	opts  ebiten.DrawTrianglesOptions
}

func newTextBatch() *textBatch {
	return &textBatch{atlas: ebiten.NewImageFromImage(glyphAtlas())}
}

// glyphAtlas renders the glyphs firstGlyph…lastGlyph white, side by side,
// each in a glyphW×glyphH cell with its line's top at the cell's top.
func glyphAtlas() *image.RGBA {
	n := int(lastGlyph - firstGlyph + 1)
	img := image.NewRGBA(image.Rect(0, 0, n*glyphW, glyphH))
	for c := firstGlyph; c <= lastGlyph; c++ {
		x0 := int(c-firstGlyph) * glyphW
		dot := fixed.P(x0, face.Ascent)
		dr, mask, mp, _, ok := face.Glyph(dot, c)
		if !ok {
			continue
		}
		for y := dr.Min.Y; y < dr.Max.Y; y++ {
			for x := dr.Min.X; x < dr.Max.X; x++ {
				_, _, _, a := mask.At(mp.X+x-dr.Min.X, mp.Y+y-dr.Min.Y).RGBA()
				v := uint8(a >> 8) // premultiplied white
				img.SetRGBA(x, y, color.RGBA{v, v, v, v})
			}
		}
	}
	return img
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
