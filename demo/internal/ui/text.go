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
	lineH  = 15
)

// textCache keeps each line of text rendered once, white, in an image of
// its own, and draws it with one DrawImage (scaled and tinted), so a frame
// costs one draw per line instead of one per glyph plus the layout. Lines
// not drawn for a while are dropped. It is used from Draw only: it caches
// pixels, never game state.
type textCache struct {
	lines map[string]*textLine
	frame uint64
	op    ebiten.DrawImageOptions
}

type textLine struct {
	img  *ebiten.Image
	used uint64
}

// textKeep is how many frames an undrawn line stays cached.
const textKeep = 120

func newTextCache() *textCache { return &textCache{lines: map[string]*textLine{}} }

// endFrame ages the cache: lines unused for textKeep frames go.
func (t *textCache) endFrame() {
	t.frame++
	if t.frame%30 != 0 {
		return
	}
	for s, l := range t.lines {
		if t.frame-l.used > textKeep {
			l.img.Deallocate()
			delete(t.lines, s)
		}
	}
}

func (t *textCache) line(s string) *textLine {
	if l, ok := t.lines[s]; ok {
		l.used = t.frame
		return l
	}
	w := max(len([]rune(s))*glyphW, 1)
	img := ebiten.NewImage(w, lineH)
	var op text.DrawOptions
	text.Draw(img, s, face, &op)
	l := &textLine{img: img, used: t.frame}
	t.lines[s] = l
	return l
}

// width returns the width in pixels of s at size.
func textWidth(s string, size float64) float64 { return float64(len([]rune(s))*glyphW) * size }

// draw draws one line s with its top at y, scaled by size (whole numbers
// keep the bitmap font crisp), left-aligned at x, or centred on x.
func (t *textCache) draw(dst *ebiten.Image, s string, x, y, size float64, col color.Color, centre bool) {
	if s == "" {
		return
	}
	l := t.line(s)
	if centre {
		x -= textWidth(s, size) / 2
	}
	op := &t.op
	op.GeoM.Reset()
	op.GeoM.Scale(size, size)
	op.GeoM.Translate(float64(int(x)), float64(int(y)))
	op.ColorScale.Reset()
	op.ColorScale.ScaleWithColor(col)
	dst.DrawImage(l.img, op)
}
