package ui

import (
	"errors"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/hajimehoshi/ebiten/v2"

	"github.com/ragsync/ragsync/demo/internal/game"
)

// Ebiten draws only inside its game loop, which needs a display (Xvfb
// will do: xvfb-run -a go test -bench Draw ./demo/internal/ui). With one,
// TestMain runs the tests and benchmarks inside the loop of a hidden
// window, drawing offscreen; without one they run as usual and what needs
// the GPU skips.

var inLoop bool

type mainGame struct {
	m    *testing.M
	code int
}

func (g *mainGame) Update() error {
	inLoop = true
	g.code = g.m.Run()
	return ebiten.Termination
}

func (*mainGame) Draw(*ebiten.Image)         {}
func (*mainGame) Layout(int, int) (int, int) { return 64, 64 }

func TestMain(m *testing.M) {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		os.Exit(m.Run())
	}
	ebiten.SetWindowVisible(false)
	g := &mainGame{m: m, code: 1}
	if err := ebiten.RunGame(g); err != nil && !errors.Is(err, ebiten.Termination) {
		os.Stderr.WriteString("ebiten: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(g.code)
}

// BenchmarkDraw measures one frame of the window during a bot match on
// loopback, drawn into an offscreen image of the window's size; one pixel
// read back after each makes the GPU (Xvfb's software GL) finish the
// frame. Every iteration draws three frames of the same game state, so a
// busy machine's drift falls on all three alike:
//
//   - all: everything on (the net HUD and its graph, the ghost, the
//     controls panel);
//   - world: the world and the top bar only;
//   - clear: the image cleared only (the readback's own cost).
//
// It reports the medians of each (all-ms, world-ms, clear-ms) and hud-ms,
// the median of all minus world in the same iteration: what the HUD, the
// graph, the ghost and the panel add to a frame (the issue bounds it by
// 2 ms). The game ticks between iterations, outside the timing.
func BenchmarkDraw(b *testing.B) {
	if !inLoop {
		b.Skip("no display: run under xvfb-run to benchmark drawing")
	}
	cfg, err := game.ParseFlags([]string{"-bot", "-listen", "127.0.0.1:0", "-hud", "-ghost"}, os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	g := NewGame(cfg, nil)
	defer g.Close()
	// Play until the fight is on (both peers paired and synced, the
	// countdown over), ticking at the game's rate.
	tick := time.NewTicker(time.Second / 60)
	defer tick.Stop()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		<-tick.C
		if err := g.Update(); err != nil {
			b.Fatal(err)
		}
		pl := g.app.Local()
		if pl != nil && pl.Rules() != nil && pl.Rules().Phase(pl.Now()) == game.PhaseFight && g.view.camSet {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the bot match did not start within 2 minutes")
		}
	}
	dst := ebiten.NewImage(screenW, screenH)
	frame := func(hud, ghost, controls, clear bool) time.Duration {
		g.hud, g.ghost, g.controls = hud, ghost, controls
		t0 := time.Now()
		if clear {
			dst.Fill(colSky)
		} else {
			g.Draw(dst)
		}
		dst.At(0, 0)
		return time.Since(t0)
	}
	frame(true, true, true, false) // fills the caches
	var all, world, clear, hud []float64
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	for b.Loop() {
		b.StopTimer()
		g.Update()
		b.StartTimer()
		a := frame(true, true, true, false)
		w := frame(false, false, false, false)
		c := frame(false, false, false, true)
		all, world, clear, hud = append(all, ms(a)), append(world, ms(w)), append(clear, ms(c)), append(hud, ms(a-w))
	}
	b.ReportMetric(median(all), "all-ms")
	b.ReportMetric(median(world), "world-ms")
	b.ReportMetric(median(clear), "clear-ms")
	b.ReportMetric(median(hud), "hud-ms")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
