package correction

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/ByteArena/box2d"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/angle"
	"github.com/ragsync/ragsync/physics"
)

const tickUS = clocksync.GameTime(1_000_000 / physics.TickRate)

// rig is a world without gravity holding one free 1 kg box, so every motion
// comes from the corrector.
type rig struct {
	w    *box2d.B2World
	body *box2d.B2Body
	bs   []*box2d.B2Body
	now  clocksync.GameTime
}

func newRig(t testing.TB, x, y float64) *rig {
	t.Helper()
	w := box2d.MakeB2World(box2d.MakeB2Vec2(0, 0))
	bd := box2d.MakeB2BodyDef()
	bd.Type = box2d.B2BodyType.B2_dynamicBody
	bd.Position.Set(x, y)
	b := w.CreateBody(&bd)
	s := box2d.MakeB2PolygonShape()
	s.SetAsBox(0.5, 0.5) // 1 m² at density 1: 1 kg
	b.CreateFixture(&s, 1)
	return &rig{w: &w, body: b, bs: []*box2d.B2Body{b}}
}

func (r *rig) step() {
	r.w.Step(1.0/physics.TickRate, 8, 3)
	r.now += tickUS
}

func (r *rig) state() physics.BodyState {
	b := r.body
	return physics.BodyState{
		Pos:    physics.V(b.M_xf.P.X, b.M_xf.P.Y),
		Angle:  b.M_sweep.A,
		Vel:    physics.V(b.M_linearVelocity.X, b.M_linearVelocity.Y),
		AngVel: b.M_angularVelocity,
	}
}

func at(x, y float64) []physics.BodyState { return []physics.BodyState{{Pos: physics.V(x, y)}} }

func mustNew(t testing.TB, cfg Config, n int) *Corrector {
	t.Helper()
	c, err := New(cfg, n)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseMethod(t *testing.T) {
	for _, m := range Methods {
		t.Run(m.String(), func(t *testing.T) {
			got, err := ParseMethod(m.String())
			if err != nil || got != m {
				t.Errorf("ParseMethod(%q) = %v, %v", m, got, err)
			}
		})
	}
	for _, c := range []struct {
		name string
		want Method
		err  error
	}{
		{"seed", MethodMidpointSpring, nil}, // its former name
		{"Midpoint-Spring", MethodMidpointSpring, nil},
		{"RAGSYNC", MethodRagsync, nil},
		{"lerp", MethodUnknown, ErrUnknownMethod},
		{"", MethodUnknown, ErrUnknownMethod},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseMethod(c.name)
			if got != c.want || !errors.Is(err, c.err) {
				t.Errorf("ParseMethod(%q) = %v, %v; want %v, %v", c.name, got, err, c.want, c.err)
			}
		})
	}
	if (Config{}).WithDefaults().Method != MethodFollow {
		t.Error("zero Config does not default to follow")
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{Stiffness: -1},
		{Stiffness: math.NaN()},
		{HardBlend: 2},
		{DampingRatio: -0.5},
		{Method: Method(99)},
		{ImpactHold: -1},
	}
	for _, c := range bad {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Validate = %v, want ErrInvalidConfig", err)
			}
			if _, err := New(c, 1); err == nil {
				t.Error("New accepted it")
			}
		})
	}
	if _, err := New(Config{}, 0); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New with 0 bodies: %v", err)
	}
	if _, err := New(Config{}, physics.MaxBodiesPerObject+1); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New with too many bodies: %v", err)
	}
	c := mustNew(t, Config{}, 2)
	if err := c.SetTarget(at(0, 0), 0); !errors.Is(err, physics.ErrBodyCount) {
		t.Errorf("SetTarget with 1 of 2 bodies: %v", err)
	}
}

func TestSnapSetsReceivedStateOncePerPacket(t *testing.T) {
	r := newRig(t, 0, 0)
	c := mustNew(t, Config{Method: MethodSnap}, 1)
	target := []physics.BodyState{{Pos: physics.V(3, 1), Angle: 0.5, Vel: physics.V(1, 0), AngVel: 2}}
	if err := c.SetTarget(target, 0); err != nil {
		t.Fatal(err)
	}
	c.Apply(r.bs, r.now)
	got := r.state()
	if got.Pos != target[0].Pos || got.Angle != 0.5 || got.Vel != target[0].Vel || got.AngVel != 2 {
		t.Fatalf("after snap: %+v, want %+v", got, target[0])
	}
	if e := c.Stats().Error[0]; math.Abs(e-math.Hypot(3, 1)) > 1e-12 {
		t.Errorf("recorded error %v, want %v", e, math.Hypot(3, 1))
	}
	// Without a new packet, the body moves freely.
	r.body.SetTransform(box2d.MakeB2Vec2(-2, 0), 0)
	c.Apply(r.bs, r.now)
	if p := r.state().Pos; p.X != -2 {
		t.Errorf("snap acted again without a new state: x = %v", p.X)
	}
	if s := c.Stats(); s.HardSnaps != 1 || s.HardTicks != 1 || s.Targets != 1 {
		t.Errorf("stats %+v, want 1 target and 1 hard snap", s)
	}
}

func TestMidpointMovesHalfway(t *testing.T) {
	r := newRig(t, 0, 0)
	c := mustNew(t, Config{Method: MethodMidpoint}, 1)
	c.SetTarget(at(2, -1), 0)
	c.Apply(r.bs, r.now)
	if p := r.state().Pos; math.Abs(p.X-1) > 1e-12 || math.Abs(p.Y+0.5) > 1e-12 {
		t.Errorf("midpoint moved to %v, want (1,-0.5)", p)
	}
}

func TestMidpointSpringSoftPathPushesWithSpringForce(t *testing.T) {
	r := newRig(t, 0, 0)
	cfg := Config{Method: MethodMidpointSpring, Stiffness: 60}
	c := mustNew(t, cfg, 1)
	c.SetTarget(at(0.4, 0), 0) // midpoint error 0.2 < MaxSoftError
	c.Apply(r.bs, r.now)
	if p := r.state().Pos; p.X != 0 {
		t.Fatalf("soft path teleported the body to %v", p)
	}
	r.step()
	// F = m·k·e = 1·60·0.2 = 12 N for one step: Δv = 12/60 = 0.2 m/s.
	if v := r.state().Vel.X; math.Abs(v-0.2) > 1e-9 {
		t.Errorf("velocity after one step %v, want 0.2", v)
	}
	// The force lasts one step: no new packet, no further acceleration.
	c.Apply(r.bs, r.now)
	r.step()
	if v := r.state().Vel.X; math.Abs(v-0.2) > 1e-9 {
		t.Errorf("velocity changed without a new packet: %v", v)
	}
	if s := c.Stats(); s.SoftCorrections != 1 || s.HardSnaps != 0 {
		t.Errorf("stats %+v, want one soft correction", s)
	}
}

func TestMidpointSpringHardPathSnapsToMidpoint(t *testing.T) {
	r := newRig(t, 0, 0)
	c := mustNew(t, Config{Method: MethodMidpointSpring}, 1)
	c.SetTarget(at(3, 0), 0) // midpoint error 1.5 > 0.5
	c.Apply(r.bs, r.now)
	if p := r.state().Pos; math.Abs(p.X-1.5) > 1e-12 {
		t.Errorf("hard path moved to %v, want x=1.5 (midpoint)", p)
	}
	if s := c.Stats(); s.HardSnaps != 1 {
		t.Errorf("stats %+v, want a hard snap", s)
	}
}

func TestMidpointSpringImpactUsesHardPath(t *testing.T) {
	r := newRig(t, 0, 0)
	c := mustNew(t, Config{Method: MethodMidpointSpring}, 1)
	c.SetTarget([]physics.BodyState{{Pos: physics.V(0.1, 0)}}, 0)
	c.Apply(r.bs, r.now)
	r.step()
	// The owner's state shows a violent change of velocity (a kick landed).
	c.SetTarget([]physics.BodyState{{Pos: physics.V(0.2, 0), Vel: physics.V(12, 0)}}, tickUS)
	before := r.state().Pos.X
	c.Apply(r.bs, r.now)
	after := r.state().Pos.X
	if want := before + (0.2-before)/2; math.Abs(after-want) > 1e-9 {
		t.Errorf("after impact x=%v, want the midpoint %v (hard path despite a small error)", after, want)
	}
	if s := c.Stats(); s.Impacts != 1 || s.HardSnaps != 1 {
		t.Errorf("stats %+v, want 1 impact and 1 hard snap", s)
	}
	// The hold expires: a later small correction is soft again.
	for range 10 {
		r.step()
	}
	c.SetTarget([]physics.BodyState{{Pos: physics.V(r.state().Pos.X+0.1, 0), Vel: physics.V(12, 0)}}, r.now)
	c.Apply(r.bs, r.now)
	if s := c.Stats(); s.SoftCorrections != 2 {
		t.Errorf("stats %+v, want the correction after the hold to be soft", s)
	}
}

func TestLocalImpactDetected(t *testing.T) {
	r := newRig(t, 0, 0)
	c := mustNew(t, Config{Method: MethodRagsync}, 1)
	c.SetTarget(at(0, 0), 0)
	c.Apply(r.bs, r.now)
	// Something in the local world hits the body hard during the step.
	r.body.ApplyLinearImpulseToCenter(box2d.MakeB2Vec2(20, 0), true)
	r.step()
	c.Apply(r.bs, r.now)
	if s := c.Stats(); s.Impacts != 1 || s.HardSnaps != 1 {
		t.Errorf("stats %+v, want the local hit to force the hard path", s)
	}
}

// A ragsync spring toward a target that has stopped converges without
// overshooting (critically damped), whatever the starting error.
func TestRagsyncNoOscillationAfterTargetStops(t *testing.T) {
	for _, start := range []float64{0.05, 0.3, 0.49} {
		r := newRig(t, start, 0)
		c := mustNew(t, Config{Method: MethodRagsync}, 1)
		c.SetTarget(at(0, 0), 0)
		minX := start
		for range 180 {
			c.Apply(r.bs, r.now)
			r.step()
			x := r.state().Pos.X
			minX = math.Min(minX, x)
		}
		if minX < -0.001*start {
			t.Errorf("start %v: overshot to x=%v (oscillation)", start, minX)
		}
		if x := r.state().Pos.X; math.Abs(x) > 1e-3 {
			t.Errorf("start %v: still %v m off after 3 s", start, x)
		}
		if v := r.state().Vel.X; math.Abs(v) > 1e-3 {
			t.Errorf("start %v: still moving at %v m/s", start, v)
		}
		if s := c.Stats(); s.HardSnaps != 0 || s.SoftCorrections != 180 {
			t.Errorf("start %v: stats %+v, want only soft corrections", start, s)
		}
	}
}

// An underdamped spring (as a contrast) does oscillate: the test above can
// tell the difference.
func TestRagsyncUnderdampedOscillates(t *testing.T) {
	r := newRig(t, 0.3, 0)
	c := mustNew(t, Config{Method: MethodRagsync, DampingRatio: 0.1}, 1)
	c.SetTarget(at(0, 0), 0)
	minX := 0.3
	for range 120 {
		c.Apply(r.bs, r.now)
		r.step()
		minX = math.Min(minX, r.state().Pos.X)
	}
	if minX > -0.1 {
		t.Errorf("ζ=0.1 never overshot (min x %v): the damping test would not catch oscillation", minX)
	}
}

// A rival moving at constant speed, whose states arrive 100 ms old: with
// latency compensation the local copy sits where the rival is now; without
// it, it trails by speed × age.
func TestRagsyncCompensatesLatency(t *testing.T) {
	const speed, ageUS = 3.0, 100_000
	run := func(cfg Config) (lag float64) {
		r := newRig(t, 0, 0)
		c := mustNew(t, cfg, 1)
		for range 180 {
			// The owner's state, sent ageUS ago.
			sent := r.now - ageUS
			truePos := speed * float64(sent) * 1e-6
			c.SetTarget([]physics.BodyState{{Pos: physics.V(truePos, 0), Vel: physics.V(speed, 0)}}, sent)
			c.Apply(r.bs, r.now)
			r.step()
		}
		// States are labelled with the game time of the tick that
		// produced them (the owner's and ours alike): the body's state now
		// came out of the tick that began at r.now - tickUS.
		return speed*float64(r.now-tickUS)*1e-6 - r.state().Pos.X
	}
	if lag := run(Config{Method: MethodRagsync, MaxExtrapolation: 200 * time.Millisecond}); math.Abs(lag) > 0.01 {
		t.Errorf("with compensation the copy is %v m behind, want < 1 cm", lag)
	}
	// The body's state is one tick younger than the tick's game time, so
	// what is left to compensate is 100 ms - 1 tick. The default cap
	// (60 ms) compensates 60 ms of it.
	ageS := float64(ageUS-tickUS) * 1e-6
	if lag := run(Config{Method: MethodRagsync}); math.Abs(lag-speed*(ageS-0.060)) > 0.01 {
		t.Errorf("with the default cap the copy is %v m behind, want about %v", lag, speed*(ageS-0.060))
	}
	if lag := run(Config{Method: MethodRagsync, MaxExtrapolation: -1}); math.Abs(lag-speed*ageS) > 0.01 {
		t.Errorf("without compensation the copy is %v m behind, want about %v", lag, speed*ageS)
	}
}

// Between packets the ragsync target keeps moving with the received
// velocity, up to MaxExtrapolation.
func TestRagsyncExtrapolationIsCapped(t *testing.T) {
	r := newRig(t, 0, 0)
	c := mustNew(t, Config{Method: MethodRagsync, MaxExtrapolation: 50 * time.Millisecond}, 1)
	c.SetTarget([]physics.BodyState{{Pos: physics.V(0, 0), Vel: physics.V(1, 0)}}, 0)
	r.now = 1_000_000 // a second later, no new packet
	c.Apply(r.bs, r.now)
	if e := c.Stats().Error[0]; math.Abs(e-0.05) > 1e-9 {
		t.Errorf("error against a 1 s old target = %v, want 0.05 (capped at 50 ms)", e)
	}
}

func TestRagsyncHardPathBlendsOverTicks(t *testing.T) {
	r := newRig(t, 0, 0)
	c := mustNew(t, Config{Method: MethodRagsync, HardBlend: 0.5}, 1)
	c.SetTarget(at(2, 0), 0)
	var xs []float64
	for range 3 {
		c.Apply(r.bs, r.now)
		xs = append(xs, r.state().Pos.X)
		r.step()
	}
	// 2 m error: halve it per tick while above MaxSoftError (0.5 m).
	want := []float64{1, 1.5}
	for i, w := range want {
		if math.Abs(xs[i]-w) > 1e-9 {
			t.Errorf("tick %d: x=%v, want %v", i, xs[i], w)
		}
	}
	s := c.Stats()
	if s.HardSnaps != 2 || s.SoftCorrections != 1 {
		t.Errorf("stats %+v: want 2 hard ticks then soft", s)
	}
}

func TestAnglesCorrected(t *testing.T) {
	for _, m := range Methods {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t, 0, 0)
			c := mustNew(t, Config{Method: m}, 1)
			// Target angle just across the ±π seam: the short way round is 0.2 rad.
			r.body.SetTransform(box2d.MakeB2Vec2(0, 0), math.Pi-0.1)
			target := []physics.BodyState{{Angle: -math.Pi + 0.1}}
			worstLate := 0.0
			for i := range 120 {
				c.SetTarget(target, r.now)
				c.Apply(r.bs, r.now)
				r.step()
				if i == 0 && m != MethodSnap {
					if d := math.Abs(c.Stats().AngleError[0] - 0.2); d > 1e-9 {
						t.Errorf("%v: angle error %v, want 0.2 (short way round)", m, c.Stats().AngleError[0])
					}
				}
				if i >= 60 {
					worstLate = math.Max(worstLate, math.Abs(angle.Diff(r.state().Angle, target[0].Angle)))
				}
			}
			want := 0.01
			if m == MethodMidpointSpring {
				// The midpoint spring has no damping: it rings around
				// the target at about the initial error (its
				// "springiness") but must not drift away from it or go
				// the long way round (which would be 2π - 0.2 off).
				want = 0.25
			}
			if worstLate > want {
				t.Errorf("%v: angle up to %v rad off in the second second, want <= %v", m, worstLate, want)
			}
		})
	}
}

// SetTarget and Apply allocate nothing of their own. Methods that set
// positions call box2d's SetTransform, which allocates inside box2d (its
// dynamic tree); those may allocate exactly as much as a bare SetTransform.
func TestApplyAllocatesNothing(t *testing.T) {
	drain := func(r *rig) {
		// What the next world step does (UpdatePairs ends with it): empty
		// the broad-phase move buffer SetTransform fills, which would
		// otherwise keep growing without steps.
		r.w.M_contactManager.M_broadPhase.M_moveCount = 0
	}
	r := newRig(t, 0, 0)
	x := 0.1
	box2dOwn := testing.AllocsPerRun(200, func() {
		x = -x
		r.body.SetTransform(box2d.MakeB2Vec2(x, 0), 0)
		drain(r)
	})
	for _, m := range Methods {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t, 0, 0)
			c := mustNew(t, Config{Method: m}, 1)
			target := at(0.1, 0) // small: the soft path for midpoint-spring and ragsync
			allocs := testing.AllocsPerRun(200, func() {
				target[0].Pos.X = -target[0].Pos.X
				c.SetTarget(target, r.now)
				c.Apply(r.bs, r.now)
				r.now += tickUS
				drain(r)
			})
			want := 0.0
			if m == MethodSnap || m == MethodMidpoint {
				want = box2dOwn // one SetTransform per tick
			}
			if allocs > want {
				t.Errorf("%v: SetTarget+Apply allocates %v times, box2d's own share is %v", m, allocs, want)
			}
		})
	}
}

func TestMonitorCountsRuns(t *testing.T) {
	m := Monitor{CriticalGap: 1, MaxRun: 3}
	// Single critical gaps and short runs are tolerated.
	for _, g := range []float64{2, 0.1, 2, 2, 2, 0.5} {
		if m.Observe(g) {
			t.Fatalf("disconnect on a run of at most 3")
		}
	}
	// A run of 4 trips exactly once.
	trips := 0
	for i, g := range []float64{5, 5, 5, 5, 5, 5} {
		if m.Observe(g) {
			trips++
			if i != 3 {
				t.Errorf("tripped at gap %d, want at the 4th", i)
			}
		}
	}
	if trips != 1 || !m.Disconnected() {
		t.Errorf("trips=%d disconnected=%v, want 1 and true", trips, m.Disconnected())
	}
	m.Observe(0)
	if m.Disconnected() || m.run != 0 {
		t.Error("a good gap did not end the run")
	}
	if m.Observe(math.NaN()); m.run != 1 {
		t.Error("NaN gap not counted as critical")
	}
	s := m.Stats()
	if s.Disconnects != 1 || s.LongestRun != 6 || s.Critical != 11 {
		t.Errorf("stats %+v, want 1 disconnect, longest run 6, 11 critical", s)
	}
	var zero Monitor // defaults: 1.5 m, 30
	for i := range 31 {
		if zero.Observe(1.6) != (i == 30) {
			t.Fatalf("default monitor: observation %d", i)
		}
	}
}

// A state with a NaN or infinite value is refused with a typed error that
// names the body and field, keeps the previous target, and never reaches
// box2d, whatever the method.
func TestSetTargetRefusesNonFinite(t *testing.T) {
	bad := []struct {
		field string
		set   func(s *physics.BodyState)
	}{
		{"pos.x", func(s *physics.BodyState) { s.Pos.X = math.NaN() }},
		{"pos.y", func(s *physics.BodyState) { s.Pos.Y = math.Inf(1) }},
		{"angle", func(s *physics.BodyState) { s.Angle = math.NaN() }},
		{"vel.x", func(s *physics.BodyState) { s.Vel.X = math.Inf(-1) }},
		{"vel.y", func(s *physics.BodyState) { s.Vel.Y = math.NaN() }},
		{"angvel", func(s *physics.BodyState) { s.AngVel = math.Inf(1) }},
	}
	for _, m := range Methods {
		t.Run(m.String(), func(t *testing.T) {
			for _, b := range bad {
				r := newRig(t, 0, 0)
				c := mustNew(t, Config{Method: m}, 2)
				r.bs = append(r.bs, r.body)
				good := []physics.BodyState{{Pos: physics.V(0.1, 0)}, {Pos: physics.V(0.1, 0)}}
				if err := c.SetTarget(good, 0); err != nil {
					t.Fatal(err)
				}
				st := append([]physics.BodyState(nil), good...)
				b.set(&st[1])
				err := c.SetTarget(st, r.now)
				var te *TargetError
				if !errors.Is(err, physics.ErrNotFinite) || !errors.As(err, &te) || te.Body != 1 || te.Field != b.field {
					t.Errorf("%v: SetTarget with %s non-finite: %v, want a *TargetError for body 1, %s, wrapping physics.ErrNotFinite", m, b.field, err, b.field)
				}
				if got, _ := c.Target(1); got != good[1] {
					t.Errorf("%v: the refused state replaced the target: %+v", m, got)
				}
				if c.Stats().Targets != 1 {
					t.Errorf("%v: refused state counted as a target", m)
				}
				for range 3 {
					c.Apply(r.bs, r.now)
					r.step()
				}
				s := r.state()
				for _, v := range []float64{s.Pos.X, s.Pos.Y, s.Angle, s.Vel.X, s.Vel.Y, s.AngVel} {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("%v: %s reached box2d: body state %+v", m, b.field, s)
					}
				}
			}
		})
	}
}

// A Monitor whose limits are unusable (negative, NaN or infinite) is
// reported by Validate; its zero value and sane limits are fine.
func TestMonitorValidate(t *testing.T) {
	for _, m := range []Monitor{{}, {CriticalGap: 0.5, MaxRun: 1}, {CriticalGap: 100, MaxRun: 600}} {
		t.Run(fmt.Sprintf("%+v", m), func(t *testing.T) {
			if err := m.Validate(); err != nil {
				t.Errorf("%+v: %v", m, err)
			}
		})
	}
	for _, m := range []Monitor{{CriticalGap: -1}, {CriticalGap: math.NaN()}, {CriticalGap: math.Inf(1)}, {MaxRun: -3}} {
		t.Run(fmt.Sprintf("%+v", m), func(t *testing.T) {
			if err := m.Validate(); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%+v: Validate = %v, want ErrInvalidConfig", m, err)
			}
		})
	}
}

// A fast state next to a wall is not extrapolated through it.
func TestRagsyncTargetClampedToBounds(t *testing.T) {
	r := newRig(t, 0, 0)
	c := mustNew(t, Config{Method: MethodRagsync, Bounds: physics.Rect{Min: physics.V(-1, -1), Max: physics.V(1, 1)}, MaxExtrapolation: 200 * time.Millisecond}, 1)
	c.SetTarget([]physics.BodyState{{Pos: physics.V(0.9, 0), Vel: physics.V(40, 0)}}, 0)
	r.now = 200_000
	c.Apply(r.bs, r.now)
	// Unclamped, the target would be at x = 0.9 + 40·(0.2 - 1 tick) = 7.9.
	if e := c.Stats().Error[0]; math.Abs(e-1) > 1e-9 {
		t.Errorf("error %v, want 1 (the target clamped to x = 1)", e)
	}
	for _, bad := range []Config{{MaxCorrectionSpeed: math.NaN()}, {MaxExtrapolation: 10 * time.Second}, {Bounds: physics.Rect{Max: physics.V(math.Inf(1), 0)}}} {
		t.Run(fmt.Sprintf("%+v", bad), func(t *testing.T) {
			if err := bad.Validate(); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%+v: %v", bad, err)
			}
		})
	}
}

// Stats.Pop is the displacement the correction itself gives a body over the
// coming step: a teleport, plus a velocity change (or force) carried over one
// tick; and zero in a tick in which the corrector does not act.
func TestPopMeasuresTheCorrectionsOwnDisplacement(t *testing.T) {
	const h = 1.0 / physics.TickRate
	// Snap: teleport by (0.3, 0.4) and change the velocity by (6, 0).
	r := newRig(t, 0, 0)
	c := mustNew(t, Config{Method: MethodSnap}, 1)
	c.SetTarget([]physics.BodyState{{Pos: physics.V(0.3, 0.4), Vel: physics.V(6, 0)}}, 0)
	c.Apply(r.bs, r.now)
	if got, want := c.Stats().Pop[0], math.Hypot(0.3+6*h, 0.4); math.Abs(got-want) > 1e-12 {
		t.Errorf("snap pop %v, want %v", got, want)
	}
	if c.Stats().MaxPop != c.Stats().Pop[0] {
		t.Errorf("MaxPop %v, Pop %v", c.Stats().MaxPop, c.Stats().Pop[0])
	}
	r.step()
	c.Apply(r.bs, r.now) // no new state: snap does nothing
	if p := c.Stats().MaxPop; p != 0 {
		t.Errorf("pop %v in a tick without correction", p)
	}

	// Ragsync's soft path moves the body only through its velocity: the
	// pop is the velocity change times a tick, and the body's own motion
	// does not count.
	r = newRig(t, 0, 0)
	r.body.SetLinearVelocity(box2d.MakeB2Vec2(2, 0))
	c = mustNew(t, Config{Method: MethodRagsync, MaxExtrapolation: -1}, 1)
	c.SetTarget([]physics.BodyState{{Pos: physics.V(0.1, 0), Vel: physics.V(2, 0)}}, r.now)
	c.Apply(r.bs, r.now)
	dv := r.state().Vel.X - 2
	if dv <= 0 {
		t.Fatalf("the spring did not pull (Δv %v)", dv)
	}
	if got := c.Stats().Pop[0]; math.Abs(got-dv*h) > 1e-12 {
		t.Errorf("soft pop %v, want Δv·h = %v", got, dv*h)
	}

	// midpoint-spring's force F acts over the step: F/m·h².
	r = newRig(t, 0, 0)
	c = mustNew(t, Config{Method: MethodMidpointSpring, Stiffness: 1000}, 1)
	c.SetTarget(at(0.2, 0), 0)
	c.Apply(r.bs, r.now)
	if got, want := c.Stats().Pop[0], 1000*0.1*h*h; math.Abs(got-want) > 1e-12 {
		t.Errorf("midpoint-spring pop %v, want k·e·h² = %v", got, want)
	}
}

// follow states arrive ageUS old from an owner moving at a constant speed.
// Against its own past the copy needs no extrapolation: a body already
// moving at the owner's speed sits where the owner is now; one at rest is
// brought there by the velocity difference it saw, carried over the age.
func TestFollowCompensatesLatencyAgainstItsPast(t *testing.T) {
	const speed, ageUS = 3.0, 100_000
	for _, start := range []float64{speed, 0} {
		t.Run(fmt.Sprintf("from %v m/s", start), func(t *testing.T) {
			r := newRig(t, 0, 0)
			r.body.SetLinearVelocity(box2d.MakeB2Vec2(start, 0))
			c := mustNew(t, Config{Method: MethodFollow, SmoothingMaxStep: -1}, 1)
			for range 180 {
				sent := r.now - ageUS
				c.SetTarget([]physics.BodyState{{Pos: physics.V(speed*float64(sent)*1e-6, 0), Vel: physics.V(speed, 0)}}, sent)
				c.Apply(r.bs, r.now)
				r.step()
			}
			// The body's state now came out of the tick that began at
			// r.now - tickUS, which the owner labels so.
			lag := speed*float64(r.now-tickUS)*1e-6 - r.state().Pos.X
			if math.Abs(lag) > 0.005 {
				t.Errorf("the copy is %.4f m behind its owner, want < 5 mm", lag)
			}
			if v := r.state().Vel.X; math.Abs(v-speed) > 0.01 {
				t.Errorf("moves at %v m/s", v)
			}
		})
	}
}

// A corrector that knows the layout moves a jointed pair toward a pose the
// joint can hold: the child ends up on its parent's joint, at its target
// angle.
func TestFollowTargetsHoldTheJoints(t *testing.T) {
	w := box2d.MakeB2World(box2d.MakeB2Vec2(0, 0))
	mk := func(x float64) *box2d.B2Body {
		bd := box2d.MakeB2BodyDef()
		bd.Type = box2d.B2BodyType.B2_dynamicBody
		bd.Position.Set(x, 0)
		b := w.CreateBody(&bd)
		s := box2d.MakeB2PolygonShape()
		s.SetAsBox(0.5, 0.1)
		b.CreateFixture(&s, 1)
		return b
	}
	parent, child := mk(0), mk(1)
	jd := box2d.MakeB2RevoluteJointDef()
	jd.Initialize(parent, child, box2d.MakeB2Vec2(0.5, 0))
	w.CreateJoint(&jd)
	bodies := []*box2d.B2Body{parent, child}
	// The child hangs on the parent at the joint point (0.5, 0): (0.5, 0)
	// in the parent's frame, (-0.5, 0) in its own.
	layout := physics.Layout{Bodies: []physics.LayoutBody{
		{Parent: -1},
		{Parent: 0, AnchorParent: physics.V(0.5, 0), AnchorSelf: physics.V(-0.5, 0)},
	}}
	c := mustNew(t, Config{Method: MethodFollow, SmoothingMaxStep: -1}, 2)
	if err := c.SetLayout(&layout); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name   string
		layout physics.Layout
		err    error
	}{
		{"1 body for 2", physics.Layout{Bodies: layout.Bodies[:1]}, physics.ErrBodyCount},
		{"child before parent", physics.Layout{Bodies: []physics.LayoutBody{{Parent: 1}, {Parent: -1}}}, ErrInvalidConfig},
		{"NaN anchor", physics.Layout{Bodies: []physics.LayoutBody{{Parent: -1}, {Parent: 0, AnchorSelf: physics.V(math.NaN(), 0)}}}, ErrInvalidConfig},
	} {
		t.Run(bad.name, func(t *testing.T) {
			if err := c.SetLayout(&bad.layout); !errors.Is(err, bad.err) {
				t.Errorf("SetLayout = %v, want %v", err, bad.err)
			}
		})
	}
	// The owner: the parent 0.2 m up, the child folded up by 90° at the
	// joint, given inconsistently (the child's position 5 cm off its
	// joint, as quantization and old states can).
	target := []physics.BodyState{
		{Pos: physics.V(0, 0.2)},
		{Pos: physics.V(0.55, 0.7), Angle: math.Pi / 2},
	}
	var now clocksync.GameTime
	for range 60 {
		c.SetTarget(target, now-tickUS)
		c.Apply(bodies, now)
		w.Step(1.0/physics.TickRate, 8, 3)
		now += tickUS
	}
	ps, cs := readBody(parent), readBody(child)
	if d := ps.Pos.Sub(physics.V(0, 0.2)).Len(); d > 0.01 {
		t.Errorf("parent %.3f m from its target", d)
	}
	if d := math.Abs(angle.Diff(cs.Angle, math.Pi/2)); d > 0.02 {
		t.Errorf("child angle %.3f rad off", d)
	}
	// On its joint: the joint point (0.5, 0.2) minus its own anchor
	// (-0.5, 0) turned by 90°: (0.5, 0.7).
	if d := cs.Pos.Sub(physics.V(0.5, 0.7)).Len(); d > 0.01 {
		t.Errorf("child at %v, %.3f m off its joint", cs.Pos, d)
	}
}

// The drawn pose takes a hard correction in gradually: the physics body
// jumps, the drawn pose moves at most SmoothingMaxStep a tick (Stats.Pop),
// and catches up with the body.
func TestFollowDrawnPoseSmoothsAJump(t *testing.T) {
	r := newRig(t, 0, 0)
	c := mustNew(t, Config{Method: MethodFollow, SmoothingMaxOffset: 1}, 1)
	c.SetTarget(at(0.9, 0), r.now) // above MaxSoftError: one hard move
	c.Apply(r.bs, r.now)
	if x := r.state().Pos.X; math.Abs(x-0.9) > 1e-9 {
		t.Fatalf("physics body at %v, want moved to 0.9 at once", x)
	}
	drawn := func() float64 { d, _ := c.Offset(0); return r.state().Pos.X + d.X }
	if p := c.Stats().Pop[0]; math.Abs(p-defaultSmoothingMaxStep) > 1e-9 {
		t.Errorf("pop %v, want the drawn pose to move %v", p, defaultSmoothingMaxStep)
	}
	if x := drawn(); math.Abs(x-defaultSmoothingMaxStep) > 1e-9 {
		t.Errorf("drawn at %v, want %v", x, defaultSmoothingMaxStep)
	}
	ticks := 0
	for ; drawn() < 0.9-1e-9 && ticks < 100; ticks++ {
		r.step()
		c.SetTarget(at(0.9, 0), r.now)
		c.Apply(r.bs, r.now)
		if p := c.Stats().MaxPop; p > defaultSmoothingMaxStep+1e-9 {
			t.Fatalf("tick %d: the drawn pose popped %v", ticks, p)
		}
	}
	if want := int(math.Ceil(0.9/defaultSmoothingMaxStep)) - 1; ticks != want {
		t.Errorf("the drawn pose caught up in %d ticks, want %d", ticks, want)
	}
	// Methods without a drawn pose have none.
	if d, a := mustNew(t, Config{Method: MethodRagsync}, 1).Offset(0); d != (physics.Vec2{}) || a != 0 {
		t.Errorf("ragsync offset %v %v", d, a)
	}
}

// After an outage, or a local stall of up to a second, the first state
// can be a metre and more away. The physics body takes it at once; the
// drawn pose eases in: beyond the offset limit it gives back a share of the
// excess per tick, at most recoveryMaxStep, instead of jumping to the
// limit, and it has caught up within a quarter of a second.
func TestFollowDrawnPoseEasesAfterAnOutage(t *testing.T) {
	for _, jump := range []float64{0.6, 1.5, 3} {
		t.Run(fmt.Sprint(jump, " m"), func(t *testing.T) {
			r := newRig(t, 0, 0)
			c := mustNew(t, Config{Method: MethodFollow}, 1)
			for range 30 {
				c.SetTarget(at(0, 0), r.now-tickUS)
				c.Apply(r.bs, r.now)
				r.step()
			}
			// A second without ticks (a stall) or without states (an
			// outage), then the owner's state far away.
			r.now += 60 * tickUS
			drawn := func() float64 { d, _ := c.Offset(0); return r.state().Pos.X + d.X }
			prev, worst, ticks := drawn(), 0.0, 0
			for ; ticks < 60; ticks++ {
				c.SetTarget(at(jump, 0), r.now-tickUS)
				c.Apply(r.bs, r.now)
				x := drawn()
				worst = max(worst, math.Abs(x-prev))
				prev = x
				if math.Abs(x-jump) < 0.01 {
					break
				}
				r.step()
			}
			t.Logf("%v m: the drawn pose moved at most %.3f m a tick, caught up in %d ticks", jump, worst, ticks)
			if worst > recoveryMaxStep+1e-9 {
				t.Errorf("the drawn pose moved %.3f m in a tick, want ≤ %v", worst, recoveryMaxStep)
			}
			if ticks > 20 {
				t.Errorf("the drawn pose took %d ticks to catch up", ticks)
			}
		})
	}
}

// On a slow link the drawn pose takes a correction in faster: its step
// grows with the usual age of the states beyond 90 ms (up to 2.5 times),
// while one late state (a loss burst) leaves it as it is.
func TestFollowDrawnPoseStepGrowsWithLatency(t *testing.T) {
	for _, tc := range []struct {
		name      string
		age, last time.Duration // of the states, and of the one before the jump
		scale     float64
	}{
		{"broadband", 30 * time.Millisecond, 30 * time.Millisecond, 1},
		{"mobile", 90 * time.Millisecond, 90 * time.Millisecond, 1},
		{"awful", 180 * time.Millisecond, 180 * time.Millisecond, 2},
		{"slower still", 400 * time.Millisecond, 400 * time.Millisecond, smoothStepMaxScale},
		{"one late state", 30 * time.Millisecond, 300 * time.Millisecond, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 0, 0)
			c := mustNew(t, Config{Method: MethodFollow, SmoothingMaxOffset: 1}, 1)
			for range 60 {
				if err := c.SetTarget(at(0, 0), r.now-clocksync.GameTimeOf(tc.age)); err != nil {
					t.Fatal(err)
				}
				c.Apply(r.bs, r.now)
				r.step()
			}
			// Far enough for the hard path, within the offset limit (0.75
			// m for 30 ms old states): the body jumps at once, the drawn
			// pose one step.
			c.SetTarget(at(0.6, 0), r.now-clocksync.GameTimeOf(tc.last))
			c.Apply(r.bs, r.now)
			if x := r.state().Pos.X; math.Abs(x-0.6) > 1e-6 {
				t.Fatalf("physics body at %v, want 0.6", x)
			}
			if p, want := c.Stats().Pop[0], defaultSmoothingMaxStep*tc.scale; math.Abs(p-want) > 1e-9 {
				t.Errorf("the drawn pose moved %v, want %v (%v × the step)", p, want, tc.scale)
			}
		})
	}
}

// When no state comes for InputHold, the copy stops predicting and is held
// where it was predicted to be then, whatever pushes it; until then, what
// pushes it is part of the prediction.
func TestFollowHoldsThroughAnOutage(t *testing.T) {
	r := newRig(t, 0, 0)
	c := mustNew(t, Config{Method: MethodFollow, SmoothingMaxStep: -1}, 1)
	c.SetTarget(at(0, 0), r.now)
	holdTicks := int(defaultInputHold / physics.TickDuration)
	var held float64
	for i := range 60 { // the owner goes quiet at once
		c.Apply(r.bs, r.now)
		if i == holdTicks+1 {
			held = r.state().Pos.X
		}
		r.body.ApplyLinearImpulseToCenter(box2d.MakeB2Vec2(0.2, 0), true) // the local fight pushes it
		r.step()
	}
	if held < 0.01 {
		t.Errorf("the pushes before the outage set in did not count (held at %v)", held)
	}
	if x := r.state().Pos.X; math.Abs(x-held) > 0.01 {
		t.Errorf("pushed through the outage, the copy moved from %.3f to %.3f m", held, x)
	}
}

func TestFollowConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{PositionGain: 1.5}, {VelocityGain: -0.1}, {PositionGain: math.NaN()},
		{SmoothingMaxStep: math.NaN()}, {SmoothingMaxOffset: -1},
		{InputHold: -1}, {InputHold: 2 * time.Minute}, {VelocityFade: 11 * time.Second}, {GainAge: 11 * time.Second},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Validate = %v, want ErrInvalidConfig", err)
			}
		})
	}
	d := Config{}.WithDefaults()
	if d.Method != MethodFollow || d.PositionGain != defaultPositionGain || d.SmoothingMaxStep != defaultSmoothingMaxStep || d.InputHold != defaultInputHold {
		t.Errorf("defaults %+v", d)
	}
	if r := (Config{Method: MethodRagsync}).WithDefaults(); r.SmoothingMaxStep >= 0 {
		t.Errorf("ragsync draws a smoothed pose by default: %v", r.SmoothingMaxStep)
	}
}

// readBody returns b's state, read from its fields.
func readBody(b *box2d.B2Body) physics.BodyState {
	return physics.BodyState{
		Pos:    physics.V(b.M_xf.P.X, b.M_xf.P.Y),
		Angle:  b.M_sweep.A,
		Vel:    physics.V(b.M_linearVelocity.X, b.M_linearVelocity.Y),
		AngVel: b.M_angularVelocity,
	}
}
