package clocksync

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ragsync/ragsync/p2p/netsim"
)

// sim runs a leader and a follower Calibrator over a netsim Pair in virtual
// time. The leader is peer A: Pair.AB carries leader→follower.
type sim struct {
	t        testing.TB
	truth    *ManualClock
	lc, fc   *SkewedClock
	leader   *Calibrator
	follower *Calibrator
	pair     *netsim.Pair
	buf      []byte
	errs     int // Handle errors other than expected ones
}

type simConfig struct {
	ab, ba         netsim.Config // leader→follower, follower→leader
	seed           uint64
	leaderOffset   time.Duration // local clocks' readings at true time 0
	followerOffset time.Duration
	leaderPPM      float64
	followerPPM    float64
	cfg            Config // Role is set by newSim
}

func newSim(t testing.TB, sc simConfig) *sim {
	t.Helper()
	s := &sim{t: t, truth: new(ManualClock), buf: make([]byte, 0, 64)}
	s.lc = &SkewedClock{Base: s.truth, Offset: sc.leaderOffset, SkewPPM: sc.leaderPPM}
	s.fc = &SkewedClock{Base: s.truth, Offset: sc.followerOffset, SkewPPM: sc.followerPPM}
	var err error
	if s.pair, err = netsim.NewAsymmetricPair(sc.ab, sc.ba, sc.seed); err != nil {
		t.Fatal(err)
	}
	lcfg, fcfg := sc.cfg, sc.cfg
	lcfg.Role, fcfg.Role = RoleLeader, RoleFollower
	if s.leader, err = NewCalibrator(lcfg, s.lc); err != nil {
		t.Fatal(err)
	}
	if s.follower, err = NewCalibrator(fcfg, s.fc); err != nil {
		t.Fatal(err)
	}
	return s
}

// trueTime returns the first true time at which clock c reads at least
// local.
func trueTime(c *SkewedClock, local time.Duration) time.Duration {
	t := time.Duration(math.Ceil(float64(local-c.Offset) / (1 + c.SkewPPM*1e-6)))
	for c.Offset+t+time.Duration(float64(t)*c.SkewPPM*1e-6) < local {
		t++
	}
	return t
}

// gameError is the follower's game time minus the leader's at this true
// instant, in ns.
func (s *sim) gameError() time.Duration {
	return s.follower.game.At(s.fc.Now()) - s.leader.game.At(s.lc.Now())
}

// run advances true time to until, event by event; observe (if not nil)
// is called every `every` of true time.
func (s *sim) run(until, every time.Duration, observe func(now time.Duration)) {
	now := s.truth.Now()
	nextObs := now
	handle := func(c *Calibrator, back *netsim.Link, now time.Duration) func([]byte) {
		return func(p []byte) {
			reply, err := c.Handle(p, s.buf[:0])
			if err != nil {
				s.errs++
				s.t.Logf("%v at %v: %v", c.Role(), now, err)
			}
			if reply != nil {
				back.Send(now, reply)
			}
		}
	}
	for now < until {
		next := min(until, trueTime(s.lc, s.leader.NextPing()), trueTime(s.fc, s.follower.NextPing()))
		if observe != nil {
			next = min(next, nextObs)
		}
		if a, ok := s.pair.NextArrival(); ok {
			next = min(next, a)
		}
		now = max(now, next)
		s.truth.Set(now)
		s.pair.AB.Deliver(now, handle(s.follower, s.pair.BA, now))
		s.pair.BA.Deliver(now, handle(s.leader, s.pair.AB, now))
		if msg, _ := s.leader.Poll(s.buf[:0]); msg != nil {
			s.pair.AB.Send(now, msg)
		}
		if msg, _ := s.follower.Poll(s.buf[:0]); msg != nil {
			s.pair.BA.Send(now, msg)
		}
		if observe != nil && now >= nextObs {
			observe(now)
			nextObs += every
		}
	}
}

// errorStats summarises |error| samples.
type errorStats struct {
	n                        int
	mean, p50, p95, p99, max time.Duration
}

func summarize(errs []time.Duration) errorStats {
	abs := make([]time.Duration, len(errs))
	var sum time.Duration
	for i, e := range errs {
		abs[i] = max(e, -e)
		sum += e
	}
	slices.Sort(abs)
	q := func(p float64) time.Duration { return abs[min(len(abs)-1, int(p*float64(len(abs))))] }
	return errorStats{len(errs), sum / time.Duration(len(errs)), q(0.5), q(0.95), q(0.99), abs[len(abs)-1]}
}

// convergedAt returns the first time after which |error| stays ≤ tol, or -1.
func convergedAt(times, errs []time.Duration, tol time.Duration) time.Duration {
	at := time.Duration(-1)
	for i, e := range errs {
		if e > tol || e < -tol {
			at = -1
		} else if at < 0 {
			at = times[i]
		}
	}
	return at
}

func TestExperiment(t *testing.T) {
	for _, tc := range []struct {
		name string
		link netsim.Config
		ppm  float64
	}{
		{"lan", netsim.LAN, 0},
		{"rtt100j20", netsim.RoundTrip(100*time.Millisecond, 20*time.Millisecond, 0.05), 0},
		{"rtt100j20-100ppm", netsim.RoundTrip(100*time.Millisecond, 20*time.Millisecond, 0.05), 100},
		{"rtt100j40-100ppm", netsim.RoundTrip(100*time.Millisecond, 40*time.Millisecond, 0.05), 100},
		{"awful-100ppm", netsim.Awful, 100},
	} {
		for seed := uint64(1); seed <= 3; seed++ {
			s := newSim(t, simConfig{ab: tc.link, ba: tc.link, seed: seed, leaderOffset: 1000 * time.Second, followerOffset: 990 * time.Second, followerPPM: tc.ppm})
			var times, errs []time.Duration
			obs := func(now time.Duration) { times = append(times, now); errs = append(errs, s.gameError()) }
			s.run(10*time.Second, 10*time.Millisecond, obs)
			conv := convergedAt(times, errs, time.Millisecond)
			s.leader.StartMatch()
			s.follower.StartMatch()
			times, errs = nil, nil
			s.run(130*time.Second, 10*time.Millisecond, obs)
			st := summarize(errs)
			e := s.follower.Estimate()
			t.Logf("%-18s seed %d conv %-8v | match: mean %-9v p50 %-9v p95 %-9v p99 %-9v max %-9v | drift %.1f unc %v jit %v", tc.name, seed, conv, st.mean, st.p50, st.p95, st.p99, st.max, e.DriftPPM, e.Uncertainty, e.Jitter)
		}
	}
}
