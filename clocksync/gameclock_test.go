package clocksync

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func mustGameClock(t *testing.T, cfg GameClockConfig) *gameClock {
	t.Helper()
	g, err := newGameClock(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGameClockStepsBeforeMatch(t *testing.T) {
	g := mustGameClock(t, GameClockConfig{})
	if g.Valid() || g.At(time.Second) != 0 {
		t.Fatal("unset clock")
	}
	g.Steer(10*time.Second, 100*time.Second, 0)
	if got := g.At(11 * time.Second); got != 101*time.Second {
		t.Errorf("At = %v, want 101s", got)
	}
	// Before the match a step backwards is allowed.
	g.Steer(12*time.Second, 50*time.Second, 100)
	if got := g.At(12 * time.Second); got != 50*time.Second {
		t.Errorf("after step back: %v", got)
	}
	// Runs at the drift rate: 100 ppm over 10 s is 1 ms.
	if got := g.At(22 * time.Second); got != 60*time.Second+time.Millisecond {
		t.Errorf("with drift: %v", got)
	}
}

// checkMonotone samples g between from and to every step and checks it
// never goes backwards and its rate stays within [1−maxSlew, 1+maxSlew].
func checkMonotone(t *testing.T, g *gameClock, from, to, step time.Duration, maxSlew float64) {
	t.Helper()
	prev := g.At(from)
	for l := from + step; l <= to; l += step {
		cur := g.At(l)
		rate := float64(cur-prev) / float64(step)
		if cur < prev || rate < 1-maxSlew-1e-6 || rate > 1+maxSlew+1e-6 {
			t.Fatalf("at local %v: game %v → %v, rate %.6f", l, prev, cur, rate)
		}
		prev = cur
	}
}

func TestGameClockSlewsBackwardNeverSteps(t *testing.T) {
	g := mustGameClock(t, GameClockConfig{})
	g.Set(0, 0, 0)
	g.Start()
	// The target is 1 s behind: slew at −5 % for 20 s.
	g.Steer(time.Second, 0, 0)
	checkMonotone(t, g, time.Second, 30*time.Second, time.Millisecond, 0.05)
	if got := g.At(21 * time.Second); got != 20*time.Second {
		t.Errorf("after 20 s of slewing: %v, want 20s (caught up)", got)
	}
	if got := g.At(31 * time.Second); got != 30*time.Second {
		t.Errorf("after the slew: %v", got)
	}
	if g.Steps() != 0 {
		t.Errorf("stepped %d times", g.Steps())
	}
	if r := g.Rate(10 * time.Second); r != 0.95 {
		t.Errorf("rate during slew %v", r)
	}
}

func TestGameClockStepsForwardOnLargeError(t *testing.T) {
	g := mustGameClock(t, GameClockConfig{StepThreshold: 100 * time.Millisecond})
	g.Set(0, 0, 0)
	g.Start()
	g.Steer(time.Second, time.Second+101*time.Millisecond, 0)
	if got := g.At(time.Second); got != time.Second+101*time.Millisecond || g.Steps() != 1 {
		t.Errorf("big error ahead: %v, %d steps", got, g.Steps())
	}
	// Just under the threshold: slewed at +5 % (100 ms takes 2 s).
	g.Steer(2*time.Second, 2*time.Second+201*time.Millisecond, 0)
	checkMonotone(t, g, 2*time.Second, 5*time.Second, time.Millisecond, 0.05)
	if got := g.At(4 * time.Second); got != 4*time.Second+201*time.Millisecond || g.Steps() != 1 {
		t.Errorf("after slewing 100 ms: %v, %d steps", got, g.Steps())
	}
	// Negative threshold: never step.
	g = mustGameClock(t, GameClockConfig{StepThreshold: -1})
	g.Set(0, 0, 0)
	g.Start()
	g.Steer(0, time.Hour, 0)
	checkMonotone(t, g, 0, time.Minute, 10*time.Millisecond, 0.05)
	if g.Steps() != 0 {
		t.Error("stepped with StepThreshold < 0")
	}
}

func TestGameClockSmallErrorsOverSlewTime(t *testing.T) {
	g := mustGameClock(t, GameClockConfig{SlewTime: 2 * time.Second})
	g.Set(0, 0, 0)
	g.Start()
	// 1 ms ahead: corrected at 0.05 % over 2 s, then back to rate 1.
	g.Steer(0, time.Millisecond, 0)
	if got := g.At(time.Second); got != time.Second+500*time.Microsecond {
		t.Errorf("half way: %v", got)
	}
	if got := g.At(3 * time.Second); got != 3*time.Second+time.Millisecond {
		t.Errorf("done: %v", got)
	}
	// With drift the rate after the correction is 1 + drift.
	g.Steer(3*time.Second, 3*time.Second+time.Millisecond, -200)
	if got := g.At(13 * time.Second); got != 13*time.Second+time.Millisecond-2*time.Millisecond {
		t.Errorf("drifting: %v", got)
	}
}

// TestGameClockRandomSteering steers a running clock toward random targets
// (small noise, occasional jumps either way) and checks that it never runs
// backwards and its rate always stays within MaxSlew.
func TestGameClockRandomSteering(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	g := mustGameClock(t, GameClockConfig{StepThreshold: -1})
	g.Set(0, 0, 50)
	g.Start()
	local := time.Duration(0)
	for range 2000 {
		target := g.At(local) + time.Duration(r.NormFloat64()*float64(time.Millisecond))
		if r.IntN(50) == 0 {
			target += time.Duration(r.IntN(2000)-1000) * time.Millisecond
		}
		g.Steer(local, target, r.NormFloat64()*100)
		next := local + time.Duration(r.IntN(500))*time.Millisecond
		checkMonotone(t, g, local, next, time.Millisecond, 0.05)
		local = next
	}
}

func TestGameClockConfig(t *testing.T) {
	for _, c := range []GameClockConfig{{MaxSlew: -0.1}, {MaxSlew: 0.6}, {MaxSlew: math.NaN()}, {SlewTime: -time.Second}} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			if _, err := newGameClock(c); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%+v: %v", c, err)
			}
		})
	}
}

func TestGameTime(t *testing.T) {
	if GameTimeOf(1500*time.Nanosecond) != 1 || GameTimeOf(-1) != -1 || GameTimeOf(-1000) != -1 || GameTimeOf(-1001) != -2 {
		t.Error("GameTimeOf rounds towards −∞")
	}
	g := GameTime(12_000_250)
	if g.String() != "12.000250s" || GameTime(-1).String() != "-0.000001s" || g.Duration() != 12000250*time.Microsecond {
		t.Errorf("%v %v", g, GameTime(-1))
	}
	if g.Sub(GameTime(250)) != 12*time.Second || g.Add(time.Millisecond) != 12_001_250 {
		t.Error("Sub/Add")
	}
	if GameTime(math.MinInt64).String() != "-9223372036854.775808s" {
		t.Errorf("%v", GameTime(math.MinInt64))
	}
}

func TestClocks(t *testing.T) {
	var m ManualClock
	if m.Now() != 0 || m.Advance(time.Second) != time.Second || m.Advance(-time.Hour) != time.Second {
		t.Error("ManualClock")
	}
	s := &SkewedClock{Base: &m, Offset: time.Hour, SkewPPM: 100}
	m.Set(1000 * time.Second)
	if got := s.Now(); got != time.Hour+1000*time.Second+100*time.Millisecond {
		t.Errorf("SkewedClock = %v", got)
	}
	var sys SystemClock
	a := sys.Now()
	if b := sys.Now(); b < a || a < 0 {
		t.Error("SystemClock not monotonic")
	}
}
