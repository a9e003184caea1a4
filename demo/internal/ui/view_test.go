package ui

import (
	"testing"

	"github.com/ragsync/ragsync/physics"
)

// The camera keeps both fighters in view, with room around them, as large
// as that allows; it never shows more than the arena with its walls, and
// zooms out to the whole arena when the fighters are at its two ends.
func TestFrameBox(t *testing.T) {
	in := physics.Rect{Min: physics.V(-8, 0), Max: physics.V(8, 10)}
	const wt = 0.5
	for _, hud := range []bool{false, true} {
		r := (&view{}).region(hud)
		for _, tc := range []struct {
			name             string
			minX, maxX, maxY float64
		}{
			{"close together", -0.8, 0.8, 1.7},
			{"apart", -3, 3, 1.7},
			{"one jumps", -1, 1, 3.2},
			{"at the walls", -7.8, 7.8, 1.7},
			{"in a corner", 5.5, 7.9, 1.7},
		} {
			c := frameBox(in, wt, tc.minX, tc.maxX, tc.maxY, r, false)
			x0, yTop := c.pt(physics.V(tc.minX, tc.maxY))
			x1, yGround := c.pt(physics.V(tc.maxX, 0))
			inside := func(x, y float32) bool {
				return float64(x) >= r.x && float64(x) <= r.x+r.w && float64(y) >= r.y && float64(y) <= r.y+r.h
			}
			if !inside(x0, yTop) || !inside(x1, yGround) {
				t.Errorf("hud %v, %s: fighters at (%.0f,%.0f)-(%.0f,%.0f) outside the region %+v", hud, tc.name, x0, yTop, x1, yGround, r)
			}
			// Never beyond the walls.
			wl, _ := c.pt(physics.V(in.Min.X-wt, 0))
			wr, _ := c.pt(physics.V(in.Max.X+wt, 0))
			if float64(wl) > r.x+0.5 && float64(wr) < r.x+r.w-0.5 {
				t.Errorf("hud %v, %s: the view (%.0f..%.0f) is wider than the arena", hud, tc.name, wl, wr)
			}
			t.Logf("hud %v, %s: %.0f px/m, a 1.7 m fighter is %.0f px tall", hud, tc.name, c.scale, 1.7*c.scale)
		}
		// Close together, the fighters fill a good part of the region.
		if c := frameBox(in, wt, -0.8, 0.8, 1.7, r, false); 1.7*c.scale < r.h/3 {
			t.Errorf("hud %v: a fighter %.0f px tall in a region %.0f px tall", hud, 1.7*c.scale, r.h)
		}
	}
}

// The round's banners are drawn in the world's region, which the HUD (below
// it) never covers, whatever their size.
func TestBannersClearOfHUD(t *testing.T) {
	for _, hud := range []bool{false, true} {
		g := &Game{hud: hud, view: &view{}}
		r := g.view.region(hud)
		// K.O. (growing from 12 to 8), FIGHT!, the countdown, the
		// waiting and agreeing lines, the result with its rematch line.
		for _, b := range []struct {
			lines int
			size  float64
		}{{1, 12}, {1, 8}, {1, 5}, {2, 3}, {1, 2}, {3, 2}} {
			y := g.bannerY(b.lines, b.size)
			top, bottom := y-12, y+float64(b.lines)*lineH*b.size+12
			if top < r.y || bottom > r.y+r.h {
				t.Errorf("hud %v: a %d-line banner at size %v spans %.0f..%.0f, outside the world's region %.0f..%.0f",
					hud, b.lines, b.size, top, bottom, r.y, r.y+r.h)
			}
		}
	}
}
