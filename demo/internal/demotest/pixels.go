package demotest

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"testing"
)

// Colours the screenshot tests look for (ui's palette; solid, not
// anti-aliased).
var (
	ColArena   = color.RGBA{112, 98, 82, 255}
	ColF1      = color.RGBA{66, 135, 245, 255}
	ColF2      = color.RGBA{235, 80, 70, 255}
	ColWarn    = color.RGBA{255, 196, 64, 255}
	ColBad     = color.RGBA{255, 96, 80, 255} // the K.O. text
	ColSpark   = color.RGBA{255, 236, 150, 255}
	ColSparkHi = color.RGBA{255, 255, 255, 255}
	ColAge     = color.RGBA{255, 210, 90, 255}  // the HUD graph's state age
	ColGood    = color.RGBA{120, 220, 120, 255} // the result banner of a win
)

// The window's layout at 1280×720.
const (
	TopBar = 64
	HUDTop = 720 - 250 // the net HUD's top edge
)

// LoadPNG decodes the PNG file at path.
func LoadPNG(t testing.TB, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// Region counts the pixels of one colour and their bounding box.
type Region struct {
	N   int
	Box image.Rectangle
}

func (r *Region) add(x, y int) {
	p := image.Rect(x, y, x+1, y+1)
	if r.N == 0 {
		r.Box = p
	} else {
		r.Box = r.Box.Union(p)
	}
	r.N++
}

// Count finds the pixels of colour c inside r.
func Count(img image.Image, c color.RGBA, r image.Rectangle) Region {
	var out Region
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if near(img.At(x, y), c) {
				out.add(x, y)
			}
		}
	}
	return out
}

func near(c color.Color, want color.RGBA) bool {
	r, g, b, _ := c.RGBA()
	d := func(a uint32, w uint8) int { return int(a>>8) - int(w) }
	ok := func(v int) bool { return v >= -6 && v <= 6 }
	return ok(d(r, want.R)) && ok(d(g, want.G)) && ok(d(b, want.B))
}

// FightersShown is how many pixels of its colour the less visible fighter
// shows in the world region of a screenshot.
func FightersShown(img image.Image) int {
	world := image.Rect(0, TopBar, 1280, HUDTop)
	return min(Count(img, ColF1, world).N, Count(img, ColF2, world).N)
}
