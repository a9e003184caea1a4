package clocksync

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestSample(t *testing.T) {
	// The remote clock is 1000 ns ahead; 50 ns out, 70 ns back, 10 ns hold.
	s, err := newSample(100, 1150, 1160, 230)
	if err != nil {
		t.Fatal(err)
	}
	// θ̂ = θ + (dfwd − dback)/2 = 1000 − 10; δ = 120.
	if s.Offset != 990 || s.Delay != 120 || s.At != 230 {
		t.Errorf("sample %+v", s)
	}
	if s.forward() != 1050 || s.backward() != 930 {
		t.Errorf("Forward %v Backward %v", s.forward(), s.backward())
	}
	// Odd sums round consistently: Forward − Backward == Delay.
	s, _ = newSample(0, 3, 3, 2)
	if s.forward()-s.backward() != s.Delay {
		t.Errorf("odd sample %+v: %v %v", s, s.forward(), s.backward())
	}

	bad := [][4]time.Duration{
		{100, 0, 0, 99},              // t4 < t1
		{0, 100, 99, 200},            // t3 < t2
		{0, 0, 2 * time.Second, 3e9}, // held 2 s
		{0, 0, 5000, 1000},           // held longer than the round trip
		{math.MinInt64, 0, 0, 0},     // out of range
		{0, math.MaxInt64, math.MaxInt64, 0},
	}
	for _, b := range bad {
		_, err := newSample(b[0], b[1], b[2], b[3])
		var te *TimestampError
		if !errors.Is(err, ErrBadTimestamps) || !errors.As(err, &te) || te.T1 != b[0] || te.T4 != b[3] {
			t.Errorf("NewSample%v = %v", b, err)
		}
	}
	// A hold a hair longer than the round trip (clock rates over the hold)
	// is clamped, not rejected.
	if s, err := newSample(0, 0, 1000, 1000-time.Duration(1)); err != nil || s.Delay != 0 {
		t.Errorf("tiny negative delay: %+v, %v", s, err)
	}
}

// synth generates samples of a remote clock offset by off + drift·t, with
// one-way delays base + U(0, jitter) each way (asymmetry added to the way
// back), one exchange every interval.
type synth struct {
	r                  *rand.Rand
	off                time.Duration
	driftPPM           float64
	base, jitter, asym time.Duration
	interval           time.Duration
	t                  time.Duration
}

func (s *synth) trueOffset(t time.Duration) time.Duration {
	return s.off + time.Duration(float64(t)*s.driftPPM*1e-6)
}

func (s *synth) next() Sample {
	s.t += s.interval
	j := func() time.Duration { return time.Duration(s.r.Int64N(int64(s.jitter) + 1)) }
	fwd, back := s.base+j(), s.base+s.asym+j()
	t1 := s.t
	t2 := t1 + fwd + s.trueOffset(t1+fwd)
	t4 := t1 + fwd + back
	smp, err := newSample(t1, t2, t2, t4)
	if err != nil {
		panic(err)
	}
	return smp
}

func mustEstimator(t testing.TB, cfg EstimatorConfig) *estimator {
	t.Helper()
	e, err := newEstimator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEstimatorSymmetric(t *testing.T) {
	// 40 ms + U(0, 20 ms) each way, 100 ppm, 4 samples a second.
	s := &synth{r: rand.New(rand.NewPCG(1, 1)), off: 3 * time.Second, driftPPM: 100,
		base: 40 * time.Millisecond, jitter: 20 * time.Millisecond, interval: 250 * time.Millisecond}
	e := mustEstimator(t, EstimatorConfig{})
	if e.Ready() {
		t.Fatal("ready without samples")
	}
	var worst time.Duration
	var rtt RTTEstimator
	for i := range 2400 { // 10 min
		smp := s.next()
		if err := e.Add(smp); err != nil {
			t.Fatal(err)
		}
		rtt.Add(smp.At, smp.Delay)
		est := e.Estimate()
		errNow := est.Offset - s.trueOffset(smp.At)
		if i >= 240 { // after the first minute
			worst = max(worst, errNow, -errNow)
			if math.Abs(est.DriftPPM-100) > 5 {
				t.Fatalf("sample %d: drift %.2f ppm, want 100", i, est.DriftPPM)
			}
		}
		// The bound always holds.
		if errNow > est.Uncertainty || -errNow > est.Uncertainty {
			t.Fatalf("sample %d: error %v beyond the bound %v", i, errNow, est.Uncertainty)
		}
	}
	t.Logf("worst |error| after 1 min: %v; %+v", worst, e.Estimate())
	if worst > 500*time.Microsecond {
		t.Errorf("worst error %v, want ≤ 0.5 ms", worst)
	}
	est := e.Estimate()
	if est.Samples != 512 || !est.Drifting || est.DriftUncertaintyPPM > 5 || est.Outliers != 0 {
		t.Errorf("estimate %+v", est)
	}
	// Extrapolation uses the drift: 1 ppm over 10 s is 10 µs.
	if d := e.OffsetAt(est.At+10*time.Second) - est.Offset; d != time.Duration(est.DriftPPM*1e4) {
		t.Errorf("OffsetAt +10s moved %v", d)
	}
	if u := est.UncertaintyAt(est.At - 10*time.Second); u != est.Uncertainty+150*time.Microsecond {
		t.Errorf("UncertaintyAt: %v vs %v", u, est.Uncertainty)
	}
	r := rtt.Stats(est.At)
	if r.Samples != 2400 || r.Recent < 39 || r.Recent > 41 || r.Min < 80*time.Millisecond || r.Min > 85*time.Millisecond || r.P95 > 120*time.Millisecond ||
		r.Smoothed < 90*time.Millisecond || r.Smoothed > 110*time.Millisecond || r.Jitter < 3*time.Millisecond || r.Jitter > 10*time.Millisecond {
		t.Errorf("RTT %+v", r)
	}
}

// TestEstimatorBeatsMinDelaySample compares the offset error with NTP's
// classic choice, the offset of the window's minimum-delay sample.
func TestEstimatorBeatsMinDelaySample(t *testing.T) {
	var ours, ntp float64
	const n = 400
	for seed := range uint64(20) {
		s := &synth{r: rand.New(rand.NewPCG(seed, 3)), base: 40 * time.Millisecond, jitter: 20 * time.Millisecond, interval: 250 * time.Millisecond}
		e := mustEstimator(t, EstimatorConfig{Window: 128})
		for range n {
			if err := e.Add(s.next()); err != nil {
				t.Fatal(err)
			}
		}
		best := e.ring[e.byDelay[0]]
		ours += math.Abs(float64(e.Estimate().Offset))
		ntp += math.Abs(float64(best.Offset))
	}
	t.Logf("mean |error| over 20 runs: one-way minima %v, min-delay sample %v", time.Duration(ours/20), time.Duration(ntp/20))
	if ours*2 > ntp {
		t.Errorf("one-way minima (%v) not at least twice as good as the min-delay sample (%v)", time.Duration(ours/20), time.Duration(ntp/20))
	}
}

func TestEstimatorAsymmetryBias(t *testing.T) {
	// 20 ms out, 80 ms back: the estimate is off by −30 ms, inside the bound.
	s := &synth{r: rand.New(rand.NewPCG(5, 5)), base: 20 * time.Millisecond, asym: 60 * time.Millisecond,
		jitter: time.Millisecond, interval: 250 * time.Millisecond}
	e := mustEstimator(t, EstimatorConfig{})
	for range 400 {
		e.Add(s.next())
	}
	est := e.Estimate()
	if d := est.Offset + 30*time.Millisecond; d > 100*time.Microsecond || d < -100*time.Microsecond {
		t.Errorf("offset %v, want −30 ms (half the asymmetry)", est.Offset)
	}
	if est.Uncertainty < 30*time.Millisecond || est.Uncertainty > 51*time.Millisecond {
		t.Errorf("uncertainty %v, want ≥ 30 ms (and ≈ 50)", est.Uncertainty)
	}
}

func TestEstimatorOutliers(t *testing.T) {
	s := &synth{r: rand.New(rand.NewPCG(7, 7)), off: time.Second, base: 10 * time.Millisecond,
		jitter: 2 * time.Millisecond, interval: 100 * time.Millisecond}
	e := mustEstimator(t, EstimatorConfig{})
	for range 100 {
		e.Add(s.next())
	}
	before := e.Estimate()
	// Corrupted exchanges: a responder timestamp 500 ms early makes a
	// sample claim a one-way delay of −490 ms.
	for i := range 3 {
		smp := s.next()
		smp.Offset -= 250 * time.Millisecond
		smp.Delay -= 500 * time.Millisecond
		smp.Delay = max(smp.Delay, 0)
		if err := e.Add(smp); err != nil {
			t.Fatal(err)
		}
		if got := e.Estimate(); got.Outliers != i+1 {
			t.Fatalf("outliers %d after %d bad samples", got.Outliers, i+1)
		}
	}
	after := e.Estimate()
	if d := after.Offset - before.Offset; d > 200*time.Microsecond || d < -200*time.Microsecond {
		t.Errorf("outliers moved the offset by %v", d)
	}
}

// TestEstimatorOutlierRun: a run of bad samples longer than the offset's
// minimum support still leaves a finite estimate near the truth.
func TestEstimatorOutlierRun(t *testing.T) {
	s := &synth{r: rand.New(rand.NewPCG(8, 8)), off: time.Second, base: 30 * time.Millisecond,
		jitter: 10 * time.Millisecond, interval: 250 * time.Millisecond, driftPPM: 80}
	e := mustEstimator(t, EstimatorConfig{})
	for range 120 {
		e.Add(s.next())
	}
	for range 20 {
		smp := s.next()
		smp.Offset += 400 * time.Millisecond // claims a forward delay of −370 ms
		if err := e.Add(smp); err != nil {
			t.Fatal(err)
		}
		est := e.Estimate()
		if d := est.Offset - s.trueOffset(est.At); d > 5*time.Millisecond || d < -5*time.Millisecond {
			t.Fatalf("estimate %+v, true offset %v", est, s.trueOffset(est.At))
		}
	}
	if est := e.Estimate(); est.Outliers != 20 {
		t.Errorf("outliers %d, want 20", est.Outliers)
	}
}

func TestEstimatorErrors(t *testing.T) {
	e := mustEstimator(t, EstimatorConfig{Window: 4})
	if err := e.Add(Sample{At: 10, Delay: -1}); !errors.Is(err, errNegativeDelay) {
		t.Errorf("negative delay: %v", err)
	}
	if err := e.Add(Sample{At: 10, Offset: 5, Delay: 4}); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(Sample{At: 9}); !errors.Is(err, errSampleOrder) {
		t.Errorf("out of order: %v", err)
	}
	if est := e.Estimate(); est.Samples != 1 || est.Offset != 5 || est.Uncertainty != 2 {
		t.Errorf("after rejected samples: %+v", est)
	}
	// More samples than the window: the oldest go.
	for i := range 10 {
		e.Add(Sample{At: time.Duration(20 + i), Offset: 7, Delay: 2})
	}
	if est := e.Estimate(); est.Samples != 4 || est.Offset != 7 {
		t.Errorf("full window: %+v", est)
	}
	e.Reset()
	if e.Ready() || e.Estimate() != (Estimate{}) {
		t.Error("Reset")
	}
	for _, c := range []EstimatorConfig{{Window: 3}, {Window: 5000}, {GoodFraction: 1.5}, {GoodFraction: -1},
		{DriftWindow: time.Millisecond}, {MinDriftSpan: -1}, {MaxDriftPPM: -5}, {MaxDriftPPM: math.Inf(1)}} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			if _, err := newEstimator(c); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%+v: %v", c, err)
			}
		})
	}
	if c := e.Config(); c.Window != 4 || c.DriftWindow != defaultDriftWindow {
		t.Errorf("Config %+v", c)
	}
}

func TestEstimatorAllocs(t *testing.T) {
	s := &synth{r: rand.New(rand.NewPCG(1, 1)), off: time.Second, driftPPM: 50, base: 40 * time.Millisecond,
		jitter: 20 * time.Millisecond, interval: 250 * time.Millisecond}
	e := mustEstimator(t, EstimatorConfig{})
	for range 1000 {
		e.Add(s.next())
	}
	smps := make([]Sample, 200)
	for i := range smps {
		smps[i] = s.next()
	}
	i := 0
	if a := testing.AllocsPerRun(len(smps)-1, func() {
		e.Add(smps[i])
		i++
	}); a != 0 {
		t.Errorf("Add: %v allocs", a)
	}
}

func BenchmarkEstimatorAdd(b *testing.B) {
	for _, w := range []int{128, 512} {
		b.Run(fmt.Sprint("window=", w), func(b *testing.B) {
			s := &synth{r: rand.New(rand.NewPCG(1, 1)), off: time.Second, driftPPM: 50, base: 40 * time.Millisecond,
				jitter: 20 * time.Millisecond, interval: 250 * time.Millisecond}
			e := mustEstimator(b, EstimatorConfig{Window: w})
			smps := make([]Sample, 4096)
			for i := range smps {
				smps[i] = s.next()
			}
			for _, smp := range smps[:2048] { // fill the window and the drift history
				e.Add(smp)
			}
			shift := smps[len(smps)-1].At - smps[0].At + time.Second
			b.ReportAllocs()
			i := 2048
			for b.Loop() {
				if i == len(smps) { // keep times increasing: shift the batch
					for j := range smps {
						smps[j].At += shift
					}
					i = 0
				}
				if err := e.Add(smps[i]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
