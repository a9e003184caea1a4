package clocksync

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// EstimatorConfig configures the calibrator's offset and drift estimator
// (see the package doc). The zero value gives the documented defaults;
// NewCalibrator validates it.
type EstimatorConfig struct {
	// Window is how many of the most recent samples are kept: 32 s at 16
	// pings a second, 2 min at 4. Zero: 512. Range [4, 4096].
	Window int
	// GoodFraction is the share of the window's lowest-delay samples that
	// form the "good" set: the reference for outlier rejection and the
	// jitter figure. Zero: 0.5. Range (0, 1].
	GoodFraction float64
	// DriftWindow is how much history the drift is estimated over, kept
	// as 128 buckets of equal time. Drift changes slowly (with
	// temperature), so longer is better. Zero: 4 min. Range [1 s, 24 h].
	DriftWindow time.Duration
	// MinDriftSpan is the time the history must span before drift is
	// estimated; until then it is taken as zero. Zero: 2 s.
	MinDriftSpan time.Duration
	// DriftPriorPPM is the spread of drifts expected before measuring:
	// two quartz clocks within ±50 ppm each. A drift measured over a short
	// or jittery history is weighed against a mixture prior: 0 ±
	// DriftPriorPPM (the usual case, share 0.9) and 0 ± MaxDriftPPM/2 (a
	// badly tuned or throttled clock, share 0.1). A small, uncertain
	// measurement is pulled toward 0 and cannot swing wildly; a large, well
	// measured one (thousands of ppm) is taken nearly as measured. Zero:
	// 100 ppm. Range (0, 10000].
	DriftPriorPPM float64
	// MaxDriftPPM bounds the drift estimate. Quartz clocks differ by ≲ 200
	// ppm, but a virtual machine's or a throttled device's clock can run
	// thousands of ppm off. Zero: 6000 ppm, which tracks a clock 5000 ppm
	// off either way (5025 ppm of the other's when it runs slow). Range
	// [DriftPriorPPM, 10000].
	MaxDriftPPM float64
}

// Estimator defaults (see EstimatorConfig).
const (
	defaultWindow        = 512
	defaultGoodFraction  = 0.5
	defaultDriftWindow   = 4 * time.Minute
	defaultMinDriftSpan  = 2 * time.Second
	defaultDriftPriorPPM = 100
	defaultMaxDriftPPM   = 6000
)

const (
	// driftBuckets is the number of buckets of the drift history.
	driftBuckets = 128
	// dispersionPPM is how fast an estimate's uncertainty grows with its
	// age: NTP's PHI (15 ppm), a bound on the error of a drift estimate.
	dispersionPPM = 15
	// wideDriftShare is the wide component's share of the drift prior
	// (see EstimatorConfig.DriftPriorPPM).
	wideDriftShare = 0.1
)

// ErrInvalidConfig is wrapped by the errors constructors in this package
// return for a bad config.
var ErrInvalidConfig = errors.New("clocksync: invalid config")

func configError(field string, v any, want string) error {
	return fmt.Errorf("%w: %s = %v, want %s", ErrInvalidConfig, field, v, want)
}

func (c EstimatorConfig) resolve() (EstimatorConfig, error) {
	if c.Window == 0 {
		c.Window = defaultWindow
	}
	if c.GoodFraction == 0 {
		c.GoodFraction = defaultGoodFraction
	}
	if c.DriftWindow == 0 {
		c.DriftWindow = defaultDriftWindow
	}
	if c.MinDriftSpan == 0 {
		c.MinDriftSpan = defaultMinDriftSpan
	}
	if c.DriftPriorPPM == 0 {
		c.DriftPriorPPM = defaultDriftPriorPPM
	}
	if c.MaxDriftPPM == 0 {
		c.MaxDriftPPM = defaultMaxDriftPPM
	}
	switch {
	case c.Window < 4 || c.Window > 4096:
		return c, configError("Window", c.Window, "4..4096 samples")
	case !(c.GoodFraction > 0 && c.GoodFraction <= 1):
		return c, configError("GoodFraction", c.GoodFraction, "(0, 1]")
	case c.DriftWindow < time.Second || c.DriftWindow > 24*time.Hour:
		return c, configError("DriftWindow", c.DriftWindow, "[1s, 24h]")
	case c.MinDriftSpan < 0 || c.MinDriftSpan > time.Hour:
		return c, configError("MinDriftSpan", c.MinDriftSpan, "[0, 1h]")
	case !(c.DriftPriorPPM > 0 && c.DriftPriorPPM <= 10000):
		return c, configError("DriftPriorPPM", c.DriftPriorPPM, "(0, 10000]")
	case !(c.MaxDriftPPM >= c.DriftPriorPPM && c.MaxDriftPPM <= 10000):
		return c, configError("MaxDriftPPM", c.MaxDriftPPM, "[DriftPriorPPM, 10000]")
	}
	return c, nil
}

// Estimate is the calibrator's current view of the peer's clock.
type Estimate struct {
	// At is the local time of the newest sample: the estimate's reference.
	At time.Duration
	// Offset is the remote clock minus the local clock at At.
	Offset time.Duration
	// DriftPPM is how fast Offset changes, in parts per million of local
	// time: positive if the remote clock runs faster.
	DriftPPM float64
	// Uncertainty bounds |error| at At, whatever the path asymmetry: half
	// the sum of the smallest forward and backward delays seen, plus the
	// dispersion of those samples' age. The error is this large only if
	// the network is maximally asymmetric; on a symmetric path it is far
	// smaller (see Jitter).
	Uncertainty time.Duration
	// Jitter is the RMS deviation of the good samples' offsets from the
	// estimate: how noisy single exchanges are on this link.
	Jitter time.Duration
	// Samples is the number of samples in the window, Outliers how many of
	// them were rejected.
	Samples, Outliers int
	// Drifting reports whether DriftPPM was estimated (the samples span
	// MinDriftSpan) rather than assumed zero.
	Drifting bool
	// DriftUncertaintyPPM is how well the drift is known: half the range
	// of drifts that fit the minimal delays within their noise, combined
	// with the prior (DriftPriorPPM while not Drifting). On a link with
	// ±10 ms of jitter it falls from ~100 ppm in the first seconds to
	// ~1 ppm after minutes.
	DriftUncertaintyPPM float64
	// Horizon is the age of the oldest sample the offset was taken from.
	Horizon time.Duration
}

// OffsetAt extrapolates the offset to local time t with the drift.
func (e Estimate) OffsetAt(t time.Duration) time.Duration {
	return e.Offset + time.Duration(float64(t-e.At)*e.DriftPPM*1e-6)
}

// UncertaintyAt is Uncertainty grown by 15 ppm (NTP's PHI, a bound on the
// error of a drift estimate) of |t − At|.
func (e Estimate) UncertaintyAt(t time.Duration) time.Duration {
	age := t - e.At
	if age < 0 {
		age = -age
	}
	return e.Uncertainty + time.Duration(float64(age)*dispersionPPM*1e-6)
}

// errSampleOrder is returned by Add for a sample older than the previous
// one, errNegativeDelay for a sample with a negative delay.
var (
	errSampleOrder   = errors.New("clocksync: sample older than the previous one")
	errNegativeDelay = errors.New("clocksync: sample with a negative delay")
)

// estimator estimates the offset and drift of a remote clock from NTP-style
// samples (see newSample). It is a plain value fed by Add: no goroutines,
// no clock of its own, no allocation after newEstimator. It is not safe for
// concurrent use.
//
// Each sample bounds the offset θ at its time t on both sides, whatever the
// asymmetry of the path:
//
//	θ(t) + dfwd  = t2 − t1 = Forward  ⇒ θ(t) ≤ Forward
//	θ(t) − dback = t3 − t4 = Backward ⇒ θ(t) ≥ Backward
//
// and θ(t) = θ₀ + β·t is a straight line (β is the drift). NTP's clock
// filter takes the offset of the sample with the smallest round trip,
// whose bounds are the tightest. The estimator goes one step further and
// takes the tightest bound on each side separately, each from whichever
// sample of the window had the smallest delay in that direction:
//
//	U = min over the window of (Forward − β·t)  = θ₀ + min dfwd
//	L = max over the window of (Backward − β·t) = θ₀ − min dback
//	θ̂₀ = (U + L)/2, exact when the two minimal one-way delays are equal.
//
// With random queueing delay, the minimum of one direction over n samples
// is within about spread/n of the true minimum, while the best round trip
// is only within about spread/√n: this converges faster and ends closer
// than any single best sample. Uncertainty is (U − L)/2 plus dispersion:
// a hard bound that holds for any asymmetry.
//
// Drift: the last DriftWindow of samples is summarised in driftBuckets
// buckets of equal time, each keeping its sample with the smallest Forward
// and its sample with the largest Backward. β is the slope of the widest
// corridor that separates the forward points (above it) from the backward
// points (below it), over the window and the older buckets: it maximises
//
//	W(β) = min(Forward − β·t) − max(Backward − β·t)
//
// a concave piecewise-linear function, found by bisection on the sign of
// its slope over the two convex hulls. This is the two-sided form of the
// linear-programming skew estimate of Moon, Skelly and Towsley
// ("Estimation and removal of clock skew from network delay measurements",
// 1999). Like the offset, it is limited by the noise of the minimal delays
// divided by the length of the history: about 1 ppm after minutes on a
// link with ±10 ms of jitter, where a least-squares regression of the
// offsets, with the whole jitter in the numerator, is 2–4 times worse
// (measured). Its uncertainty σ is half the range of β over which W stays
// within 2ε of its maximum, ε being the noise of the minimal delays (the
// mean gap between the four smallest). Over a short history σ is large
// (±100 ppm after 5 s on that link), so β is weighed against a mixture
// prior (0 ± DriftPriorPPM, or rarely 0 ± MaxDriftPPM/2: see
// EstimatorConfig), clamped to ±MaxDriftPPM, and taken as zero until the
// history spans MinDriftSpan.
//
// Horizon: a minimum found t ago carries an error of σ·t from the drift,
// while fewer, newer samples give a noisier minimum (its excess grows like
// 1/count). The offset uses the newest whole window, half, quarter or
// eighth of it, whichever minimises ε·n/m + σ·H/2 (Estimate.Horizon): the
// newest few seconds while the drift is uncertain, the whole window once
// it is known.
//
// Outliers: a sample that puts the offset outside its own bounds, by more
// than the delay spread of the good samples (the GoodFraction of the
// window with the lowest round trip) plus 1 ms, measured from the median
// offset of the good samples (and the offsets' spread over the window that
// the drift's uncertainty allows), claims a negative one-way delay. It is
// ignored, in the window and in the drift history. Such samples come from
// clock steps or corrupted timestamps, not from network jitter.
//
// The physical limit: if the minimal one-way delays differ, dfwd − dback =
// a, every estimate is off by a/2, and nothing measured at the two
// endpoints can reveal it (the same timestamps arise from a clock offset
// by a/2 on a symmetric path). The Uncertainty bound covers it; Jitter
// does not.
type estimator struct {
	cfg EstimatorConfig

	ring    []Sample
	next, n int     // write position; number of samples
	byDelay []int32 // ring indexes, by delay then age

	// Drift history: a ring of buckets.
	buckets    [driftBuckets]bucket
	bnext, bn  int
	bucketSpan time.Duration

	// Scratch, indexed by time order (0 = oldest); see compute.
	ts, fs, bs, tmp []float64
	out             []bool
	hullF, hullB    []point

	est     Estimate
	driftPP float64 // current drift, as a fraction (ppm·10⁻⁶)
	// driftTol is how far the drift used for outlier rejection may be
	// off, as a fraction: MaxDriftPPM until the drift is measured, then
	// three times its uncertainty.
	driftTol float64
}

// bucket holds the extreme points of DriftWindow/driftBuckets of samples.
type bucket struct {
	start time.Duration
	tF, f time.Duration // the sample with the smallest Forward
	tB, b time.Duration // the sample with the largest Backward
}

// point is a vertex of a hull: time (ns, relative) and value (ns).
type point struct{ t, y float64 }

// newEstimator returns an estimator, or an error wrapping ErrInvalidConfig.
func newEstimator(cfg EstimatorConfig) (*estimator, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	w := cfg.Window
	return &estimator{
		cfg:        cfg,
		driftTol:   cfg.MaxDriftPPM * 1e-6,
		ring:       make([]Sample, w),
		byDelay:    make([]int32, 0, w),
		bucketSpan: cfg.DriftWindow / driftBuckets,
		ts:         make([]float64, w),
		fs:         make([]float64, w),
		bs:         make([]float64, w),
		tmp:        make([]float64, w),
		out:        make([]bool, w),
		hullF:      make([]point, 0, w+driftBuckets),
		hullB:      make([]point, 0, w+driftBuckets),
	}, nil
}

// Config returns the configuration with defaults filled in.
func (e *estimator) Config() EstimatorConfig { return e.cfg }

// Reset forgets every sample and the drift.
func (e *estimator) Reset() {
	e.next, e.n = 0, 0
	e.bnext, e.bn = 0, 0
	e.byDelay = e.byDelay[:0]
	e.est = Estimate{}
	e.driftPP = 0
	e.driftTol = e.cfg.MaxDriftPPM * 1e-6
}

// Ready reports whether the estimator has at least one sample.
func (e *estimator) Ready() bool { return e.n > 0 }

// Estimate returns the current estimate (the zero Estimate before the first
// sample).
func (e *estimator) Estimate() Estimate { return e.est }

// OffsetAt returns the estimated offset at local time t.
func (e *estimator) OffsetAt(t time.Duration) time.Duration { return e.est.OffsetAt(t) }

// Add adds a sample and updates the estimate. Samples must come in order of
// At (errSampleOrder) and have Delay ≥ 0 (errNegativeDelay); a rejected
// sample changes nothing.
func (e *estimator) Add(s Sample) error {
	if s.Delay < 0 {
		return fmt.Errorf("%w: %v", errNegativeDelay, s.Delay)
	}
	w := len(e.ring)
	if e.n > 0 {
		if last := e.ring[(e.next+w-1)%w]; s.At < last.At {
			return fmt.Errorf("%w: at %v, previous at %v", errSampleOrder, s.At, last.At)
		}
	}
	// Evict the oldest sample if the ring is full.
	if e.n == w {
		j := slices.Index(e.byDelay, int32(e.next))
		e.byDelay = slices.Delete(e.byDelay, j, j+1)
	} else {
		e.n++
	}
	i := int32(e.next)
	e.ring[i] = s
	e.next = (e.next + 1) % w
	j, _ := slices.BinarySearchFunc(e.byDelay, s.Delay, func(k int32, d time.Duration) int {
		if e.ring[k].Delay <= d { // equal delays: the newer one goes after
			return -1
		}
		return 1
	})
	e.byDelay = slices.Insert(e.byDelay, j, i)

	e.compute()
	return nil
}

// addToHistory puts s into the current drift bucket, or a new one.
func (e *estimator) addToHistory(s Sample) {
	f, b := s.forward(), s.backward()
	if e.bn > 0 {
		cur := &e.buckets[(e.bnext+driftBuckets-1)%driftBuckets]
		if s.At < cur.start+e.bucketSpan {
			if f < cur.f {
				cur.tF, cur.f = s.At, f
			}
			if b > cur.b {
				cur.tB, cur.b = s.At, b
			}
			return
		}
	}
	e.buckets[e.bnext] = bucket{start: s.At, tF: s.At, f: f, tB: s.At, b: b}
	e.bnext = (e.bnext + 1) % driftBuckets
	e.bn = min(e.bn+1, driftBuckets)
}

// minSupport is the number of newest samples the offset always uses.
const minSupport = 8

// compute recomputes the estimate after a sample was added. Times are
// float64 nanoseconds relative to the newest sample (so ≤ 0), which keeps
// them small and exact enough.
func (e *estimator) compute() {
	w, n := len(e.ring), e.n
	oldest := (e.next - n + w) % w
	now := e.ring[(e.next+w-1)%w].At
	pos := func(ringIdx int32) int { return (int(ringIdx) - oldest + w) % w }
	ts, fs, bs, out := e.ts[:n], e.fs[:n], e.bs[:n], e.out[:n]
	for k := range n {
		s := &e.ring[(oldest+k)%w]
		ts[k] = float64(s.At - now)
		fs[k] = float64(s.forward())
		bs[k] = float64(s.backward())
		out[k] = false
	}

	// Good set and outliers, against the previous drift.
	beta := e.driftPP
	good := max(min(n, 4), int(math.Ceil(float64(n)*e.cfg.GoodFraction)))
	dmin := float64(e.ring[e.byDelay[0]].Delay)
	dgood := float64(e.ring[e.byDelay[good-1]].Delay)
	// The reference: the median offset of the (at most 64) lowest-delay
	// samples.
	ref := e.tmp[:min(good, 64)]
	for j, ri := range e.byDelay[:len(ref)] {
		k := pos(ri)
		ref[j] = (fs[k]+bs[k])/2 - beta*ts[k]
	}
	slices.Sort(ref)
	med := ref[len(ref)/2]
	if len(ref)%2 == 0 {
		med = (ref[len(ref)/2-1] + ref[len(ref)/2]) / 2
	}
	// The drift may be off by driftTol (unknown at first, up to
	// MaxDriftPPM): over the window's span that moves the offsets apart,
	// which is not a sign of an outlier.
	tol := (dgood-dmin)/2 + float64(time.Millisecond) + e.driftTol*(-ts[0])
	outliers := 0
	for k := range n {
		if fs[k]-beta*ts[k] < med-tol || bs[k]-beta*ts[k] > med+tol {
			out[k] = true
			outliers++
		}
	}
	if outliers == n { // cannot happen with a sane median; be safe
		clear(out)
		outliers = 0
	}
	if !out[n-1] {
		e.addToHistory(e.ring[(e.next+w-1)%w])
	}

	// Drift, once the history spans MinDriftSpan, from the hulls of the
	// history's points older than the window and the window's points.
	drifting := false
	// Until then, and as a prior after, the drift is 0 ± DriftPriorPPM.
	prior := e.cfg.DriftPriorPPM * 1e-6
	sigma := prior
	eps := -1.0 // noise of the minimal delays, once computed
	first := e.buckets[(e.bnext-e.bn+driftBuckets)%driftBuckets].start
	if span := now - first; e.bn > 0 && span >= e.cfg.MinDriftSpan && span > 0 {
		e.buildHulls(ts, fs, bs, out, now)
		maxB := e.cfg.MaxDriftPPM * 1e-6
		beta = maxMargin(e.hullF, e.hullB, -maxB, maxB)
		drifting = true
		// How well the data pin β down: half the β range over which the
		// corridor stays within 2ε of its widest.
		sigma = 0
		// (ε hardly depends on β: computed once, here, and reused.)
		if eps = noise(ts, fs, bs, out, beta); eps > 0 {
			level := width(e.hullF, e.hullB, beta) - 2*eps
			lo := levelBound(e.hullF, e.hullB, beta, -maxB, level)
			hi := levelBound(e.hullF, e.hullB, beta, maxB, level)
			sigma = (hi - lo) / 2
		}
		// Combine with the prior: a drift measured over a few seconds of
		// a jittery link is mostly noise.
		if sigma > 0 {
			beta, sigma = driftPosterior(beta, sigma, prior, maxB/2)
		}
		e.driftTol = max(3*sigma, 1e-6)
	}
	if eps < 0 {
		eps = noise(ts, fs, bs, out, beta)
	}

	// The offset uses the newest samples up to horizon old. An older
	// minimum carries the drift's error times its age; a shorter horizon
	// has fewer samples and so a noisier minimum (its excess grows like
	// 1/count). Pick the horizon, among the whole window and its newest
	// half, quarter and eighth, that minimises ε·n/m + σ·H/2.
	horizon := -ts[0]
	if sigma > 0 && eps > 0 {
		best := math.Inf(1)
		for m := n; ; m /= 2 {
			m = max(m, min(n, minSupport))
			h := -ts[n-m]
			if err := eps*float64(n)/float64(m) + sigma*h/2; err < best {
				best, horizon = err, h
			}
			if m <= minSupport || m < n/8 {
				break
			}
		}
	}

	// Offset from the one-way bounds (from the whole window if every
	// sample within the horizon is an outlier).
	U, L, tU, tL := bounds(ts, fs, bs, out, beta, horizon)
	if math.IsInf(U, 0) && horizon < -ts[0] {
		horizon = -ts[0]
		U, L, tU, tL = bounds(ts, fs, bs, out, beta, horizon)
	}
	offset := (U + L) / 2
	width := (U - L) / 2
	if width < 0 || math.IsInf(U, 0) || math.IsInf(L, 0) {
		// The bounds cross (the drift is off or the clocks stepped), or
		// every sample in the horizon is an outlier. Fall back on the best
		// round trip's own offset.
		k := pos(e.byDelay[0])
		offset, width = (fs[k]+bs[k])/2-beta*ts[k], dmin/2
		tU, tL = ts[k], ts[k]
	}
	age := -min(tU, tL)

	var sum2 float64
	m := 0
	for _, ri := range e.byDelay[:good] {
		if k := pos(ri); !out[k] {
			r := (fs[k]+bs[k])/2 - beta*ts[k] - offset
			sum2 += r * r
			m++
		}
	}

	e.driftPP = beta
	e.est = Estimate{
		At:                  now,
		Offset:              time.Duration(math.Round(offset)),
		DriftPPM:            beta * 1e6,
		Uncertainty:         time.Duration(width + age*dispersionPPM*1e-6),
		Jitter:              time.Duration(math.Sqrt(sum2 / float64(max(m, 1)))),
		Samples:             n,
		Outliers:            outliers,
		Drifting:            drifting,
		DriftUncertaintyPPM: sigma * 1e6,
		Horizon:             time.Duration(horizon),
	}
}

// driftPosterior combines a measured drift beta ± sigma with the mixture
// prior 0 ± narrow (share 1 − wideDriftShare) and 0 ± wide (share
// wideDriftShare), all Gaussian, and returns the posterior's mean and
// standard deviation. Each component alone would give inverse-variance
// weighting; the components are weighed by how well each explains beta.
func driftPosterior(beta, sigma, narrow, wide float64) (mean, sd float64) {
	s2 := sigma * sigma
	var logw, m, v [2]float64
	for i, p := range [2]float64{narrow, wide} {
		t := p*p + s2
		share := 1 - wideDriftShare
		if i == 1 {
			share = wideDriftShare
		}
		logw[i] = math.Log(share) - 0.5*math.Log(t) - 0.5*beta*beta/t
		m[i] = beta * p * p / t
		v[i] = p * p * s2 / t
	}
	// Normalise in the log domain: far out, both likelihoods underflow.
	w1 := 1 / (1 + math.Exp(logw[0]-logw[1]))
	w0 := 1 - w1
	mean = w0*m[0] + w1*m[1]
	second := w0*(v[0]+m[0]*m[0]) + w1*(v[1]+m[1]*m[1])
	return mean, math.Sqrt(max(second-mean*mean, 0))
}

// bounds returns U = min(Forward − β·t) and L = max(Backward − β·t) over the
// samples at most horizon old that are not out, and the times at which they
// are attained. U and L are ±Inf if there are none.
func bounds(ts, fs, bs []float64, out []bool, beta, horizon float64) (U, L, tU, tL float64) {
	U, L = math.Inf(1), math.Inf(-1)
	for k := range ts {
		if out[k] || ts[k] < -horizon {
			continue
		}
		if u := fs[k] - beta*ts[k]; u < U {
			U, tU = u, ts[k]
		}
		if l := bs[k] - beta*ts[k]; l > L {
			L, tL = l, ts[k]
		}
	}
	return U, L, tU, tL
}

// buildHulls builds the lower convex hull of the forward points and the
// upper convex hull of the backward points: the history's bucket points
// older than the window, then the window's points that are not out, all in
// order of time. Only hull vertices can attain the min or max in corridor,
// for any β.
func (e *estimator) buildHulls(ts, fs, bs []float64, out []bool, now time.Duration) {
	e.hullF, e.hullB = e.hullF[:0], e.hullB[:0]
	oldest := now + time.Duration(ts[0])
	for k := range e.bn {
		bk := &e.buckets[(e.bnext-e.bn+k+driftBuckets)%driftBuckets]
		if bk.tF < oldest {
			e.hullF = pushHull(e.hullF, point{float64(bk.tF - now), float64(bk.f)})
		}
		if bk.tB < oldest {
			e.hullB = pushHull(e.hullB, point{float64(bk.tB - now), -float64(bk.b)})
		}
	}
	for k := range ts {
		if !out[k] {
			e.hullF = pushHull(e.hullF, point{ts[k], fs[k]})
			e.hullB = pushHull(e.hullB, point{ts[k], -bs[k]})
		}
	}
	for i := range e.hullB {
		e.hullB[i].y = -e.hullB[i].y
	}
}

// pushHull adds p, no earlier than the last point, to the lower convex
// hull h (Andrew's monotone chain).
func pushHull(h []point, p point) []point {
	if m := len(h); m > 0 && h[m-1].t == p.t {
		if p.y >= h[m-1].y {
			return h
		}
		h = h[:m-1]
	}
	for m := len(h); m >= 2; m-- {
		a, b := h[m-2], h[m-1]
		if (b.t-a.t)*(p.y-a.y)-(b.y-a.y)*(p.t-a.t) > 0 {
			break // a→b→p turns left: b stays
		}
		h = h[:m-1]
	}
	return append(h, p)
}

// noise estimates the noise ε of the minimal one-way delays in the window
// at drift beta: the mean gap between the four smallest values of
// Forward − β·t (and the four largest of Backward − β·t). For delays with
// a density near their minimum, these gaps are about the expected excess
// of the minimum over the true minimal delay.
func noise(ts, fs, bs []float64, out []bool, beta float64) float64 {
	var lowF, lowB [4]float64 // smallest Forward − βt, smallest −(Backward − βt)
	for i := range 4 {
		lowF[i], lowB[i] = math.Inf(1), math.Inf(1)
	}
	m := 0
	for k := range ts {
		if out[k] {
			continue
		}
		m++
		f, b := fs[k]-beta*ts[k], beta*ts[k]-bs[k]
		if f >= lowF[3] && b >= lowB[3] {
			continue
		}
		for i := range 4 {
			if f < lowF[i] {
				f, lowF[i] = lowF[i], f
			}
			if b < lowB[i] {
				b, lowB[i] = lowB[i], b
			}
		}
	}
	if m < 4 {
		return 0
	}
	return ((lowF[3] - lowF[0]) + (lowB[3] - lowB[0])) / 6
}

// corridor returns U = min(y − β·t) over the forward hull and L = max(y −
// β·t) over the backward hull, and the times of the vertices that attain
// them.
func corridor(hf, hb []point, beta float64) (U, L, tU, tL float64) {
	U, L = math.Inf(1), math.Inf(-1)
	for _, p := range hf {
		if u := p.y - beta*p.t; u < U {
			U, tU = u, p.t
		}
	}
	for _, p := range hb {
		if l := p.y - beta*p.t; l > L {
			L, tL = l, p.t
		}
	}
	return U, L, tU, tL
}

func width(hf, hb []point, beta float64) float64 {
	U, L, _, _ := corridor(hf, hb, beta)
	return U - L
}

// levelBound returns the β between from (where the corridor is at least
// level wide) and limit that is farthest from from with width ≥ level. The
// width is concave in β, so the set where it is ≥ level is an interval.
func levelBound(hf, hb []point, from, limit, level float64) float64 {
	if width(hf, hb, limit) >= level {
		return limit
	}
	in, outside := from, limit
	for math.Abs(outside-in) > 1e-10 {
		mid := (in + outside) / 2
		if width(hf, hb, mid) >= level {
			in = mid
		} else {
			outside = mid
		}
	}
	return in
}

// maxMargin returns the slope β in [lo, hi] that maximises the width
//
//	W(β) = min over hf of (y − β·t) − max over hb of (y − β·t)
//
// of the corridor between the forward points (above) and the backward
// points (below). W is concave and piecewise linear, with derivative
// t_L − t_U (the times of the vertices that attain the max and the min),
// so bisection on that sign finds the maximum. W is flat where one sample
// attains both (a round trip much faster than the rest); then the middle
// of the flat stretch is returned.
func maxMargin(hf, hb []point, lo, hi float64) float64 {
	// Left end of the maximum: the smallest β with W'(β) ≤ 0.
	a, b := lo, hi
	for b-a > 1e-11 {
		mid := (a + b) / 2
		if _, _, tU, tL := corridor(hf, hb, mid); tL > tU {
			a = mid
		} else {
			b = mid
		}
	}
	left := (a + b) / 2
	// Right end: the largest β with W'(β) ≥ 0.
	a, b = left, hi
	for b-a > 1e-11 {
		mid := (a + b) / 2
		if _, _, tU, tL := corridor(hf, hb, mid); tL < tU {
			b = mid
		} else {
			a = mid
		}
	}
	return (left + (a+b)/2) / 2
}
