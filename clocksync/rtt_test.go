package clocksync

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestRTTEstimator(t *testing.T) {
	var e RTTEstimator
	if s := e.Stats(0); s != (RTTStats{}) {
		t.Fatalf("zero value stats %+v", s)
	}
	e.Add(0, 100*time.Millisecond)
	s := e.Stats(0)
	if s.Smoothed != 100*time.Millisecond || s.Jitter != 50*time.Millisecond || s.Min != s.Last || s.P95 != s.Last || s.Recent != 1 {
		t.Errorf("first sample: %+v", s)
	}
	// 1..100 ms over a second: p50 = 50 ms, p95 = 95 ms (nearest rank), max 100.
	var e2 RTTEstimator
	perm := rand.New(rand.NewPCG(1, 1)).Perm(100)
	for k, i := range perm {
		e2.Add(time.Duration(k)*10*time.Millisecond, time.Duration(i+1)*time.Millisecond)
	}
	s = e2.Stats(time.Second)
	if s.P50 != 50*time.Millisecond || s.P95 != 95*time.Millisecond || s.Max != 100*time.Millisecond ||
		s.Min != time.Millisecond || s.Recent != 100 {
		t.Errorf("quantiles: %+v", s)
	}
	// Smoothed converges to a constant input.
	for i := range 300 {
		e2.Add(time.Second+time.Duration(i)*10*time.Millisecond, time.Second)
	}
	s = e2.Stats(4 * time.Second)
	if d := s.Smoothed - time.Second; d < -time.Millisecond || d > time.Millisecond || s.Samples != 400 {
		t.Errorf("smoothed %+v", s)
	}
	e2.Add(4*time.Second, -1)
	if e2.Stats(4*time.Second).Samples != 400 {
		t.Error("negative sample accepted")
	}
}

// TestRTTWindowAgesOut: the windowed figures cover the last 10 s of the
// caller's time, however few samples came since: an outage's round trips
// stop counting 10 s after it, and a silent link reports none.
func TestRTTWindowAgesOut(t *testing.T) {
	var e RTTEstimator
	at := time.Duration(0)
	add := func(n int, every, rtt time.Duration) {
		for range n {
			at += every
			e.Add(at, rtt)
		}
	}
	add(100, 100*time.Millisecond, 20*time.Millisecond) // 10 s of a good link
	add(10, 500*time.Millisecond, 2*time.Second)        // 5 s of an outage's late pongs
	add(150, 100*time.Millisecond, 20*time.Millisecond) // 15 s recovered
	if s := e.Stats(at); s.P95 != 20*time.Millisecond || s.Max != 20*time.Millisecond || s.Recent != 100 {
		t.Errorf("10 s after the outage: %+v", s)
	}
	// Before it had aged out, the outage showed.
	var f RTTEstimator
	f.Add(time.Second, 2*time.Second)
	f.Add(2*time.Second, 20*time.Millisecond)
	if s := f.Stats(5 * time.Second); s.Max != 2*time.Second || s.Min != 20*time.Millisecond {
		t.Errorf("within the window: %+v", s)
	}
	// Silent for 10 s: nothing recent, the smoothed figures stay.
	s := e.Stats(at + 10*time.Second)
	if s.Recent != 0 || s.Min != 0 || s.P95 != 0 || s.Max != 0 || s.Smoothed == 0 || s.Samples != 260 {
		t.Errorf("silent link: %+v", s)
	}
}

// TestRTTQuantilesMatchSort compares the quantiles with a sort of the
// window's samples, at every rate, including more than the 512 kept.
func TestRTTQuantilesMatchSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, every := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond, time.Second} {
		t.Run(fmt.Sprint(every), func(t *testing.T) {
			var e RTTEstimator
			var at time.Duration
			var all []rttSample
			for range 2000 {
				at += every
				d := time.Duration(rng.IntN(1000)) * time.Microsecond
				e.Add(at, d)
				all = append(all, rttSample{at, d})
				if rng.IntN(50) > 0 {
					continue
				}
				var w []time.Duration
				for _, s := range all[max(0, len(all)-rttCap):] {
					if s.at > at-rttWindow {
						w = append(w, s.rtt)
					}
				}
				slices.Sort(w)
				q := func(p float64) time.Duration { return w[int(math.Ceil(p*float64(len(w))))-1] }
				got := e.Stats(at)
				if got.Recent != len(w) || got.P50 != q(0.5) || got.P95 != q(0.95) || got.Min != w[0] || got.Max != w[len(w)-1] {
					t.Fatalf("at %v: %+v, want %d samples, p50 %v, p95 %v", at, got, len(w), q(0.5), q(0.95))
				}
			}
		})
	}
}

func TestRTTEstimatorDoesNotAllocate(t *testing.T) {
	var e RTTEstimator
	at := time.Duration(0)
	if n := testing.AllocsPerRun(1000, func() {
		at += 30 * time.Millisecond
		e.Add(at, at%(7*time.Millisecond))
		_ = e.Stats(at)
	}); n != 0 {
		t.Errorf("%v allocs per run", n)
	}
}

func BenchmarkRTTEstimator(b *testing.B) {
	var e RTTEstimator
	at := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		at += 60 * time.Millisecond // the calibrator's rate; Stats each time
		e.Add(at, at%(7*time.Millisecond))
		_ = e.Stats(at)
	}
}
