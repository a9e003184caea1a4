package clocksync

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/clockwire"
)

// direct is a leader and a follower exchanging messages by hand over a
// perfect link with fixed one-way delays, in virtual time.
type direct struct {
	truth    *ManualClock
	lc, fc   *SkewedClock
	leader   *Calibrator
	follower *Calibrator
}

func newDirect(t testing.TB, cfg Config) *direct {
	t.Helper()
	d := &direct{truth: new(ManualClock)}
	d.lc = &SkewedClock{Base: d.truth, Offset: 500 * time.Second}
	d.fc = &SkewedClock{Base: d.truth, Offset: 20 * time.Second}
	var err error
	cfg.Leader = true
	if d.leader, err = NewCalibrator(cfg, d.lc); err != nil {
		t.Fatal(err)
	}
	cfg.Leader = false
	if d.follower, err = NewCalibrator(cfg, d.fc); err != nil {
		t.Fatal(err)
	}
	return d
}

// exchange sends a ping from `from` to `to` and the pong back, each way
// taking `delay`, and returns the pong's handling error.
func (d *direct) exchange(t testing.TB, from, to *Calibrator, delay time.Duration) error {
	t.Helper()
	ping := from.AppendPing(nil)
	d.truth.Advance(delay)
	pong, err := to.Handle(ping, nil)
	if err != nil {
		t.Fatalf("ping: %v", err)
	}
	d.truth.Advance(delay)
	if reply, err := from.Handle(pong, nil); reply != nil || err != nil {
		return err
	}
	return nil
}

func TestCalibratorDirect(t *testing.T) {
	d := newDirect(t, Config{})
	if !d.leader.Synced() || d.follower.Synced() {
		t.Fatal("synced before any exchange")
	}
	if g, ok := d.follower.GameTime(); g != 0 || ok {
		t.Errorf("follower game time before sync: %v, %v", g, ok)
	}
	for i := range defaultMinSamples {
		if d.follower.Synced() {
			t.Fatalf("synced after %d samples", i)
		}
		if err := d.exchange(t, d.follower, d.leader, 5*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		d.truth.Advance(50 * time.Millisecond)
	}
	if !d.follower.Synced() {
		t.Fatal("not synced")
	}
	// Symmetric fixed delays: the follower's game time is exact.
	lg, lok := d.leader.GameTime()
	fg, fok := d.follower.GameTime()
	if !lok || !fok || lg != fg || lg <= 0 {
		t.Errorf("game times: leader %v %v, follower %v %v", lg, lok, fg, fok)
	}
	// The leader pings too: it measures the follower's clock error as 0.
	if err := d.exchange(t, d.leader, d.follower, 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ls, fs := d.leader.Stats(), d.follower.Stats()
	if ls.PeerClockError != 0 || ls.RTT.Last != 10*time.Millisecond || ls.PongsReceived != 1 || ls.PingsAnswered != defaultMinSamples {
		t.Errorf("leader stats %+v", ls)
	}
	if fs.PingsSent != defaultMinSamples || fs.PongsReceived != defaultMinSamples || fs.PingsAnswered != 1 ||
		fs.Rejected != 0 || fs.ClockError != 0 || fs.Estimate.Offset != 480*time.Second || !fs.Synced || fs.Leader {
		t.Errorf("follower stats %+v", fs)
	}
}

func TestCalibratorRejects(t *testing.T) {
	d := newDirect(t, Config{})
	ping := d.follower.AppendPing(nil)
	pong, _ := d.leader.Handle(ping, nil)
	if _, err := d.follower.Handle(pong, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.follower.Handle(pong, nil); !errors.Is(err, ErrDuplicatePong) {
		t.Errorf("duplicate: %v", err)
	}
	// A pong echoing a wrong t1 or an unknown seq.
	p, _ := clockwire.ParsePong(pong)
	p.T1++
	if _, err := d.follower.HandlePong(clockwire.AppendPong(nil, p)); !errors.Is(err, ErrUnknownPong) {
		t.Errorf("wrong t1: %v", err)
	}
	p.T1--
	p.Seq = 1000
	if _, err := d.follower.HandlePong(clockwire.AppendPong(nil, p)); !errors.Is(err, ErrUnknownPong) {
		t.Errorf("unknown seq: %v", err)
	}
	// A leader's pong without game time.
	p.Seq, p.GameValid = 0, false
	if _, err := d.follower.HandlePong(clockwire.AppendPong(nil, p)); !errors.Is(err, ErrNoGameTime) {
		t.Errorf("no game time: %v", err)
	}
	// Late: the pong comes after PingTimeout.
	ping = d.follower.AppendPing(nil)
	pong, _ = d.leader.Handle(ping, nil)
	d.truth.Advance(defaultPingTimeout + time.Millisecond)
	if _, err := d.follower.Handle(pong, nil); !errors.Is(err, ErrLatePong) {
		t.Errorf("late: %v", err)
	}
	if _, err := d.follower.Handle(pong, nil); !errors.Is(err, ErrLatePong) {
		t.Errorf("late again: %v", err)
	}
	// Garbage.
	if _, err := d.follower.Handle([]byte("garbage"), nil); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "67 61 72") {
		t.Errorf("garbage: %v", err)
	}
	// Two leaders: both directions refuse.
	other, _ := NewCalibrator(Config{Leader: true}, d.lc)
	ping = other.AppendPing(nil)
	if reply, err := d.leader.Handle(ping, nil); reply != nil || !errors.Is(err, ErrRoleConflict) {
		t.Errorf("leader answering a leader: %v, %v", reply, err)
	}
	pong, _ = d.follower.Handle(d.leader.AppendPing(nil), nil)
	p, _ = clockwire.ParsePong(pong)
	p.Leader = true
	if _, err := d.leader.HandlePong(clockwire.AppendPong(nil, p)); !errors.Is(err, ErrRoleConflict) {
		t.Errorf("leader's pong from a leader: %v", err)
	}
	fs, ls := d.follower.Stats(), d.leader.Stats()
	if fs.Rejected != 7 || fs.PongsReceived != 1 || fs.PingsLost != 1 || fs.Estimate.Samples != 1 {
		t.Errorf("follower stats %+v", fs)
	}
	if ls.Rejected != 2 || ls.RoleConflicts != 2 {
		t.Errorf("leader stats %+v", ls)
	}
}

func TestCalibratorPingLoss(t *testing.T) {
	d := newDirect(t, Config{})
	for range 10 { // 10 pings lost in the network
		d.follower.AppendPing(nil)
		d.truth.Advance(100 * time.Millisecond)
	}
	d.truth.Advance(defaultPingTimeout)
	d.follower.AppendPing(nil)
	if s := d.follower.Stats(); s.PingsLost != 10 || s.PingsSent != 11 {
		t.Errorf("stats %+v", s)
	}
	if n := d.follower.Unanswered(); n != 1 {
		t.Errorf("unanswered %d, want the 1 ping in flight", n)
	}
	// More than 64 outstanding: the oldest count as lost when overwritten.
	for range 100 {
		d.follower.AppendPing(nil)
	}
	if s := d.follower.Stats(); s.PingsLost != 11+100-outstanding {
		t.Errorf("PingsLost %d", s.PingsLost)
	}
	if n := d.follower.Unanswered(); n != outstanding {
		t.Errorf("unanswered %d, want %d (the ring)", n, outstanding)
	}
}

func TestCalibratorSchedule(t *testing.T) {
	count := func(c *Calibrator, clock *ManualClock, d time.Duration) int {
		n := 0
		for end := clock.Now() + d; clock.Now() < end; {
			msg, wait := c.Poll(make([]byte, 0, 16))
			if msg != nil {
				n++
				if _, err := clockwire.ParsePing(msg); err != nil {
					t.Fatal(err)
				}
			}
			if wait <= 0 {
				t.Fatalf("Poll returned wait %v", wait)
			}
			clock.Advance(wait)
		}
		return n
	}
	var clock ManualClock
	c, err := NewCalibrator(Config{}, &clock)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(c, &clock, 10*time.Second); n != 160 {
		t.Errorf("calibration: %d pings in 10 s, want 160", n)
	}
	c.StartMatch()
	// No samples, so the drift is unknown: still 16 Hz.
	if n := count(c, &clock, 10*time.Second); n != 160 || !c.Stats().Running {
		t.Errorf("match, drift unknown: %d pings in 10 s, want 160", n)
	}
	c, _ = NewCalibrator(Config{SettledDriftPPM: -1, MatchInterval: 200 * time.Millisecond}, &clock)
	count(c, &clock, time.Second)
	c.StartMatch()
	if n := count(c, &clock, 10*time.Second); n != 50 {
		t.Errorf("match: %d pings in 10 s, want 50", n)
	}
	if c.NextPing() <= clock.Now()-time.Millisecond {
		t.Error("NextPing in the past")
	}
}

func TestCalibratorEpoch(t *testing.T) {
	d := newDirect(t, Config{})
	for range 10 {
		d.exchange(t, d.follower, d.leader, 5*time.Millisecond)
	}
	if err := d.follower.SetEpoch(0); err == nil {
		t.Error("SetEpoch on the follower")
	}
	// The leader restarts game time at 0 now; the calibrating follower
	// steps back with it.
	if err := d.leader.SetEpoch(d.lc.Now()); err != nil {
		t.Fatal(err)
	}
	if g, _ := d.leader.GameTime(); g != 0 {
		t.Errorf("leader game time after SetEpoch: %v", g)
	}
	d.exchange(t, d.follower, d.leader, 5*time.Millisecond)
	lg, _ := d.leader.GameTime()
	fg, _ := d.follower.GameTime()
	if lg != fg || lg != 10_000 {
		t.Errorf("after a new epoch: leader %v follower %v", lg, fg)
	}
}

func TestCalibratorConfig(t *testing.T) {
	var clock ManualClock
	for name, c := range map[string]Config{
		"calibration interval": {Leader: true, CalibrationInterval: time.Microsecond},
		"match interval":       {Leader: true, MatchInterval: time.Minute},
		"ping timeout":         {PingTimeout: time.Millisecond},
		"min samples":          {MinSamples: -1},
		"settled drift":        {SettledDriftPPM: math.NaN()},
		"estimator":            {Leader: true, Estimator: EstimatorConfig{Window: 1}},
		"game clock":           {GameClock: GameClockConfig{MaxSlew: 2}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewCalibrator(c, &clock); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%+v: %v", c, err)
			}
		})
	}
	if _, err := NewCalibrator(Config{Leader: true}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil clock: %v", err)
	}
}

func TestCalibratorAllocs(t *testing.T) {
	d := newDirect(t, Config{})
	buf1 := make([]byte, 0, 64)
	buf2 := make([]byte, 0, 64)
	step := func() {
		ping, _ := d.follower.Poll(buf1[:0])
		if ping == nil {
			ping = d.follower.AppendPing(buf1[:0])
		}
		d.truth.Advance(time.Millisecond)
		pong, err := d.leader.Handle(ping, buf2[:0])
		if err != nil {
			t.Fatal(err)
		}
		d.truth.Advance(time.Millisecond)
		if _, err := d.follower.Handle(pong, nil); err != nil {
			t.Fatal(err)
		}
		d.truth.Advance(60 * time.Millisecond)
		d.follower.GameTime()
	}
	for range 1000 {
		step()
	}
	if a := testing.AllocsPerRun(500, step); a != 0 {
		t.Errorf("ping/pong exchange: %v allocs", a)
	}
}

func BenchmarkCalibratorExchange(b *testing.B) {
	d := newDirect(b, Config{})
	buf1 := make([]byte, 0, 64)
	buf2 := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		ping := d.follower.AppendPing(buf1[:0])
		d.truth.Advance(20 * time.Millisecond)
		pong, _ := d.leader.Handle(ping, buf2[:0])
		d.truth.Advance(20 * time.Millisecond)
		if _, err := d.follower.Handle(pong, nil); err != nil {
			b.Fatal(err)
		}
		d.truth.Advance(210 * time.Millisecond)
	}
}

func BenchmarkCalibratorGameTime(b *testing.B) {
	d := newDirect(b, Config{})
	for range 20 {
		d.exchange(b, d.follower, d.leader, 5*time.Millisecond)
	}
	d.follower.StartMatch()
	b.ReportAllocs()
	for b.Loop() {
		d.follower.GameTime()
	}
}

// A pong whose game time is beyond any real clock is rejected: accepting it
// would move the epoch so far that the running game clock, which never runs
// backwards, steps decades ahead for good.
func TestCalibratorRejectsAbsurdGameTime(t *testing.T) {
	d := newDirect(t, Config{})
	for range defaultMinSamples {
		if err := d.exchange(t, d.follower, d.leader, 5*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		d.truth.Advance(50 * time.Millisecond)
	}
	d.follower.StartMatch()
	for _, game := range []GameTime{1 << 61 / 1000, -(1 << 61 / 1000), math.MaxInt64, math.MinInt64, maxGameTime + 1} {
		t.Run(fmt.Sprint(int64(game)), func(t *testing.T) {
			ping := d.follower.AppendPing(nil)
			d.truth.Advance(5 * time.Millisecond)
			pong, err := d.leader.Handle(ping, nil)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := clockwire.ParsePong(pong)
			p.Game = int64(game)
			d.truth.Advance(5 * time.Millisecond)
			before, _ := d.follower.GameTime()
			rejected := d.follower.Stats().Rejected
			_, err = d.follower.HandlePong(clockwire.AppendPong(nil, p))
			var te *TimestampError
			if !errors.Is(err, ErrBadTimestamps) || !errors.As(err, &te) || !strings.Contains(te.Reason, "game time") {
				t.Errorf("game time %d: %v, want a *TimestampError", int64(game), err)
			}
			if after, _ := d.follower.GameTime(); after != before {
				t.Errorf("game time %d moved the game clock from %v to %v", int64(game), before, after)
			}
			if d.follower.Stats().Rejected != rejected+1 {
				t.Errorf("game time %d not counted as rejected", int64(game))
			}
		})
	}
}

// FuzzHandle: a Calibrator never panics on a peer's bytes, answers only
// well-formed pings from a follower, and reports anything else as an error.
func FuzzHandle(f *testing.F) {
	f.Add(clockwire.AppendPing(nil, clockwire.Ping{Seq: 1, T1: 2}))
	f.Add(clockwire.AppendPing(nil, clockwire.Ping{Seq: 1, T1: 2, Leader: true}))
	f.Add(clockwire.AppendPong(nil, clockwire.Pong{Seq: 0, T1: 0, T2: 3, T3: 4, GameValid: true, Game: 5}))
	f.Add([]byte{Magic, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, _ := NewCalibrator(Config{Leader: true}, new(ManualClock))
		c.AppendPing(nil) // a ping outstanding, so a pong can match it
		ping, perr := clockwire.ParsePing(b)
		reply, err := c.Handle(b, nil)
		if (reply != nil) != (perr == nil && !ping.Leader) {
			t.Fatalf("Handle(% x) = % x, %v", b, reply, err)
		}
		if reply == nil && err == nil {
			if _, qerr := clockwire.ParsePong(b); qerr != nil {
				t.Fatalf("Handle(% x) accepted a non-pong", b)
			}
		}
	})
}
