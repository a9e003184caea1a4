package physics

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/ByteArena/box2d"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/angle"
)

func TestIdleFighterStaysStanding(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, -2)
	var worst float64
	for i := 0; i < 600; i++ {
		w.Step()
		a := torsoAngle(f)
		worst = math.Max(worst, math.Abs(a))
		if math.Abs(a) > 20*math.Pi/180 {
			t.Fatalf("step %d: torso at %.1f°, want within ±20°", i, deg(a))
		}
		head, hip := f.Object().readBody(PartHead.Index()).Pos, hipPoint(f)
		if head.Y < hip.Y+0.4 {
			t.Fatalf("step %d: head at y=%.3f not above hips at y=%.3f", i, head.Y, hip.Y)
		}
		if f.Action() != ActionIdle {
			t.Fatalf("step %d: action %v, want idle", i, f.Action())
		}
		if i > 30 && !f.Grounded() {
			t.Fatalf("step %d: an idle fighter should have a foot down", i)
		}
	}
	// It stands where it was put and stays on its feet.
	if x := f.Object().readBody(0).Pos.X; math.Abs(x+2) > 0.3 {
		t.Errorf("idle fighter drifted to x=%.3f from -2", x)
	}
	if y := hipPoint(f).Y; y < 0.75 {
		t.Errorf("hips at %.3f m: crouching, not standing", y)
	}
	t.Logf("worst torso angle %.1f°", deg(worst))
}

func TestWalk(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, 0)
	steps(w, 30)
	x0 := f.Object().readBody(0).Pos.X
	f.SetInput(InputRight)
	for i := 0; i < 120; i++ {
		w.Step()
		if a := torsoAngle(f); math.Abs(a) > 35*math.Pi/180 {
			t.Fatalf("walking right, step %d: torso at %.1f°", i, deg(a))
		}
		if f.Action() != ActionWalk {
			t.Fatalf("walking right, step %d: action %v", i, f.Action())
		}
	}
	x1 := f.Object().readBody(0).Pos.X
	if x1-x0 < 2 {
		t.Errorf("2 s walking right moved %.2f m, want at least 2 m", x1-x0)
	}
	if f.Facing() != FacingRight {
		t.Errorf("alone, a fighter walking right should face right, faces %v", f.Facing())
	}
	f.SetInput(InputLeft)
	for i := 0; i < 120; i++ {
		w.Step()
		if a := torsoAngle(f); math.Abs(a) > 35*math.Pi/180 {
			t.Fatalf("walking left, step %d: torso at %.1f°", i, deg(a))
		}
	}
	x2 := f.Object().readBody(0).Pos.X
	if x1-x2 < 2 {
		t.Errorf("2 s walking left moved %.2f m left, want at least 2 m", x1-x2)
	}
	if f.Facing() != FacingLeft {
		t.Errorf("walking left should face left, faces %v", f.Facing())
	}
	// Letting go stops it.
	f.SetInput(0)
	steps(w, 60)
	if v := f.Object().readBody(0).Vel.X; math.Abs(v) > 0.3 {
		t.Errorf("1 s after letting go, still moving at %.2f m/s", v)
	}
	if f.Action() != ActionIdle {
		t.Errorf("action %v after letting go, want idle", f.Action())
	}
}

func TestJump(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, 0)
	steps(w, 30)
	ground := lowestFoot(f)
	f.SetInput(InputJump)
	highest := ground
	airborne := false
	for i := 0; i < 90; i++ {
		w.Step()
		f.SetInput(InputJump) // holding the key does not jump again
		highest = math.Max(highest, lowestFoot(f))
		airborne = airborne || f.Action() == ActionJump
	}
	if !airborne {
		t.Error("action never was jump")
	}
	if highest < ground+0.5 {
		t.Errorf("feet rose to %.2f m (from %.2f), want clearly above the ground (> 0.5 m)", highest, ground)
	}
	// It lands on its feet and stands.
	f.SetInput(0)
	steps(w, 60)
	if f.Action() != ActionIdle || lowestFoot(f) > 0.05 {
		t.Errorf("after landing: action %v, feet at %.3f m", f.Action(), lowestFoot(f))
	}
	if a := torsoAngle(f); math.Abs(a) > 20*math.Pi/180 {
		t.Errorf("landed with the torso at %.1f°", deg(a))
	}
}

// strike makes a attack once and returns the hits it produced within 60
// steps.
func strike(w *World, a *Fighter, in Input) []HitEvent {
	var hits []HitEvent
	a.SetInput(in)
	for i := 0; i < 60; i++ {
		w.Step()
		a.SetInput(0)
		hits = append(hits, w.Hits()...)
	}
	return hits
}

// A fighter whose hits are off (SetHitsEnabled(false)) neither lands nor
// takes a hit, though the punch still touches it; with hits on again, the
// same attack may still hit.
func TestHitsDisabled(t *testing.T) {
	for _, off := range []string{"attacker", "victim"} {
		t.Run(off, func(t *testing.T) {
			w := newWorld(t)
			a := addFighter(t, w, 1, -0.35)
			b := addFighter(t, w, 2, 0.35)
			steps(w, 30)
			f := a
			if off == "victim" {
				f = b
			}
			f.SetHitsEnabled(false)
			if f.HitsEnabled() {
				t.Fatal("HitsEnabled after SetHitsEnabled(false)")
			}
			a.SetInput(InputPunch)
			touched := false
			for range 60 {
				w.Step()
				a.SetInput(0)
				if len(w.Hits()) != 0 {
					t.Fatalf("hit with the %s's hits off: %+v", off, w.Hits())
				}
				if a.State().Phase == PhaseActive {
					for _, c := range w.Contacts() {
						touched = touched || (c.A == 1 && c.B == 2)
					}
				}
			}
			if !touched {
				t.Fatal("the punch never touched the rival: the test shows nothing")
			}
			f.SetHitsEnabled(true)
			a.SetInput(InputPunch)
			hits := 0
			for range 60 {
				w.Step()
				a.SetInput(0)
				hits += len(w.Hits())
			}
			if hits != 1 {
				t.Errorf("with hits on again: %d hits, want 1", hits)
			}
		})
	}
}

func TestPunchAndKickHitOnlyInReach(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      Input
		attack  Action
		limb    []BodyPart
		near    float64 // torso distance in reach
		far     float64 // out of reach
		phaseOK bool
	}{
		{"punch", InputPunch, ActionPunch, []BodyPart{PartLowerArmL, PartLowerArmR}, 0.7, 1.6, true},
		{"kick", InputKick, ActionKick, []BodyPart{PartLowerLegR}, 0.9, 2.0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, d := range []float64{tc.near, tc.far} {
				w := newWorld(t)
				a := addFighter(t, w, 1, -d/2)
				b := addFighter(t, w, 2, d/2)
				steps(w, 30)
				if a.Facing() != FacingRight || b.Facing() != FacingLeft {
					t.Fatalf("fighters face %v and %v, want each other", a.Facing(), b.Facing())
				}
				sawActive := false
				a.SetInput(tc.in)
				var hits []HitEvent
				for i := 0; i < 60; i++ {
					w.Step()
					a.SetInput(0)
					if a.State().Phase == PhaseActive {
						sawActive = true
						if p := a.strikingPart(); p != tc.limb[0] && (len(tc.limb) < 2 || p != tc.limb[1]) {
							t.Fatalf("striking part %v", p)
						}
					}
					hits = append(hits, w.Hits()...)
				}
				if !sawActive {
					t.Fatal("attack never reached its active phase")
				}
				if d == tc.far {
					if len(hits) != 0 {
						t.Errorf("at %.1f m (out of reach) got hits %+v", d, hits)
					}
					continue
				}
				if len(hits) != 1 {
					t.Fatalf("at %.1f m got %d hits, want exactly 1: %+v", d, len(hits), hits)
				}
				h := hits[0]
				if h.Attacker != 1 || h.Victim != 2 || h.Attack != tc.attack || h.Part == PartUnknown ||
					!(h.Impulse >= a.tuningOf().MinHitImpulse) || h.Tick == 0 || h.Tick > w.Tick() || h.Blocked {
					t.Errorf("bad hit event %+v", h)
				}
				if dmg := b.Damage(h); dmg < 1 {
					t.Errorf("hit %+v does %d damage", h, dmg)
				}
				t.Logf("%s at %.1f m: %+v, damage %d", tc.name, d, h, b.Damage(h))
			}
		})
	}
}

func TestAttackPhasesAndCooldown(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, 0)
	steps(w, 10)
	tu := f.tuningOf()
	f.SetInput(InputPunch)
	var phases []AttackPhase
	for i := 0; i < tu.PunchWindup+tu.PunchActive+tu.PunchRecovery+2; i++ {
		w.Step()
		f.SetInput(InputPunch) // held: no second punch
		if n := len(phases); n == 0 || phases[n-1] != f.State().Phase {
			phases = append(phases, f.State().Phase)
		}
	}
	want := []AttackPhase{PhaseWindup, PhaseActive, PhaseRecovery, PhaseNone}
	if len(phases) != len(want) {
		t.Fatalf("phases %v, want %v", phases, want)
	}
	for i := range want {
		if phases[i] != want[i] {
			t.Fatalf("phases %v, want %v", phases, want)
		}
	}
	if f.cooldownLeft() == 0 {
		t.Error("no cooldown after a punch")
	}
	// A press during the cooldown is buffered and fires when it ends.
	f.SetInput(0)
	w.Step()
	f.SetInput(InputKick)
	w.Step()
	f.SetInput(0)
	if f.Action() == ActionKick {
		t.Fatal("kick started during the cooldown")
	}
	for i := 0; i < tu.PunchCooldown+2 && f.Action() != ActionKick; i++ {
		w.Step()
	}
	if f.Action() != ActionKick {
		t.Errorf("buffered kick did not start after the cooldown, action %v", f.Action())
	}
}

func TestKnockdownAndGetUp(t *testing.T) {
	w := newWorld(t)
	a := addFighter(t, w, 1, -0.45)
	b := addFighter(t, w, 2, 0.45)
	steps(w, 30)
	// A strong kick: the victim's owner applies it, and it knocks down.
	hits := strike(w, a, InputKick)
	if len(hits) != 1 {
		t.Fatalf("kick produced %d hits", len(hits))
	}
	h := hits[0]
	h.Impulse = math.Max(h.Impulse, b.tuningOf().KnockdownImpulse)
	dmg := b.ApplyHit(h)
	if dmg < 1 || b.HP() != b.MaxHP()-dmg {
		t.Fatalf("damage %d, HP %d", dmg, b.HP())
	}
	if b.Action() != ActionDown {
		t.Fatalf("after a knockdown hit the victim is %v", b.Action())
	}
	fell := false
	for i := 0; i < 180; i++ {
		w.Step()
		fell = fell || math.Abs(torsoAngle(b)) > 45*math.Pi/180
		if b.Action() == ActionIdle && i > 10 {
			if !fell {
				t.Error("knocked-down fighter never actually fell")
			}
			if math.Abs(torsoAngle(b)) > 25*math.Pi/180 || hipPoint(b).Y < 0.75 {
				t.Errorf("idle but not standing: torso %.1f°, hips %.2f m", deg(torsoAngle(b)), hipPoint(b).Y)
			}
			return
		}
	}
	t.Errorf("not back up within 3 s: %v, torso %.1f°", b.Action(), deg(torsoAngle(b)))
}

func TestLyingFighterGetsUp(t *testing.T) {
	for _, faceUp := range []bool{true, false} {
		t.Run(fmt.Sprintf("faceUp=%v", faceUp), func(t *testing.T) {
			w := newWorld(t)
			f := addFighter(t, w, 1, 0)
			steps(w, 10)
			layDown(t, f, 0, faceUp)
			sawDown, up := false, -1
			for i := 0; i < 180; i++ {
				w.Step()
				sawDown = sawDown || f.Action() == ActionDown
				if sawDown && f.Action() == ActionIdle {
					up = i
					break
				}
			}
			if !sawDown || up < 0 {
				t.Fatalf("faceUp=%v: down=%v, got up at step %d; action %v", faceUp, sawDown, up, f.Action())
			}
			// And it stays up.
			for i := 0; i < 120; i++ {
				w.Step()
				if math.Abs(torsoAngle(f)) > 25*math.Pi/180 {
					t.Fatalf("faceUp=%v: fell again %d steps after getting up (torso %.1f°)", faceUp, i, deg(torsoAngle(f)))
				}
			}
			t.Logf("faceUp=%v: standing after %d steps", faceUp, up+1)
		})
	}
}

func TestKnockedOutFighterStaysDown(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, 0)
	steps(w, 10)
	f.setHP(0)
	if f.Action() != ActionKO {
		t.Fatalf("HP 0: action %v", f.Action())
	}
	steps(w, 240)
	if f.Action() != ActionKO || math.Abs(torsoAngle(f)) < 45*math.Pi/180 {
		t.Errorf("KO fighter: action %v, torso %.1f° (should lie)", f.Action(), deg(torsoAngle(f)))
	}
	f.Revive(50)
	for i := 0; i < 240 && f.Action() != ActionIdle; i++ {
		w.Step()
	}
	if f.Action() != ActionIdle || f.HP() != 50 {
		t.Errorf("revived: action %v HP %d", f.Action(), f.HP())
	}
}

func TestBlockReducesDamage(t *testing.T) {
	w := newWorld(t)
	a := addFighter(t, w, 1, -0.35)
	b := addFighter(t, w, 2, 0.35)
	steps(w, 20)
	b.SetInput(InputBlock)
	steps(w, 20)
	if b.Action() != ActionBlock {
		t.Fatalf("holding block: action %v", b.Action())
	}
	hits := strike(w, a, InputPunch)
	if len(hits) == 0 {
		t.Fatal("punch on a blocking fighter at close range did not land")
	}
	h := hits[0]
	if !h.Blocked {
		t.Errorf("hit on a blocking fighter not marked blocked: %+v", h)
	}
	open := h
	open.Blocked = false
	if b.Damage(h) >= b.Damage(open) && b.Damage(open) > 1 {
		t.Errorf("blocked damage %d not below unblocked %d", b.Damage(h), b.Damage(open))
	}
	if b.ApplyHit(h); b.Action() == ActionDown {
		t.Error("a blocked hit knocked the fighter down")
	}
}

func TestDamageRules(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 2, 0)
	tu := f.tuningOf()
	base := HitEvent{Attacker: 1, Victim: 2, Part: PartTorso, Impulse: 20, Attack: ActionPunch}
	torso := f.Damage(base)
	if want := int(math.Round(20 * tu.DamagePerImpulse * tu.TorsoMultiplier)); torso != want {
		t.Errorf("torso damage %d, want %d", torso, want)
	}
	head := base
	head.Part = PartHead
	if f.Damage(head) <= torso {
		t.Errorf("head hit %d not worth more than torso %d", f.Damage(head), torso)
	}
	arm := base
	arm.Part = PartLowerArmL
	if f.Damage(arm) >= torso {
		t.Errorf("arm hit %d not worth less than torso %d", f.Damage(arm), torso)
	}
	other := base
	other.Victim = 3
	if f.Damage(other) != 0 || f.ApplyHit(other) != 0 || f.HP() != f.MaxHP() {
		t.Error("a hit on another fighter changed this one")
	}
	huge := base
	huge.Impulse = 1e6
	if d := f.Damage(huge); d != tu.MaxHitDamage {
		t.Errorf("huge hit does %d, want the cap %d", d, tu.MaxHitDamage)
	}
	for _, imp := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		t.Run(fmt.Sprint(imp), func(t *testing.T) {
			bad := base
			bad.Impulse = imp
			if d := f.Damage(bad); d != 0 {
				t.Errorf("impulse %v does %d damage", imp, d)
			}
		})
	}
	for f.HP() > 0 {
		f.ApplyHit(huge)
	}
	if f.Action() != ActionKO {
		t.Errorf("HP 0 but action %v", f.Action())
	}
	if f.ApplyHit(base) != 0 || f.HP() != 0 {
		t.Error("a KO fighter took more damage")
	}
}

func TestFightersFaceEachOtherAndTurn(t *testing.T) {
	w := newWorld(t)
	a := addFighter(t, w, 1, -1)
	b := addFighter(t, w, 2, 1)
	steps(w, 20)
	if a.Facing() != FacingRight || b.Facing() != FacingLeft {
		t.Fatalf("facing %v / %v", a.Facing(), b.Facing())
	}
	// Move b behind a: both turn around and stay standing (the joint
	// limits are mirrored without snapping).
	st := b.Object().ReadState(nil)
	for i := range st {
		st[i].Pos.X -= 3
	}
	if err := b.Object().WriteState(st); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 120; i++ {
		w.Step()
		for _, f := range []*Fighter{a, b} {
			if math.Abs(torsoAngle(f)) > 30*math.Pi/180 {
				t.Fatalf("step %d: %v fell while turning (%.1f°)", i, f.ID(), deg(torsoAngle(f)))
			}
		}
	}
	if a.Facing() != FacingLeft || b.Facing() != FacingRight {
		t.Errorf("after swapping sides facing %v / %v", a.Facing(), b.Facing())
	}
	// The mirrored limits are in force, and every joint is within them.
	for _, f := range []*Fighter{a, b} {
		for j, rj := range f.joints {
			lo, hi := mirrorLimits(jointLimits[j], f.Facing())
			if rj.M_lowerAngle != lo || rj.M_upperAngle != hi {
				t.Errorf("%v joint %d limits [%.2f %.2f], want [%.2f %.2f]", f.ID(), j, rj.M_lowerAngle, rj.M_upperAngle, lo, hi)
			}
			if a := jointAngle(rj); a < lo-0.05 || a > hi+0.05 {
				t.Errorf("%v joint %d at %.2f outside [%.2f %.2f]", f.ID(), j, a, lo, hi)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	run := func() []BodyState {
		w := newWorld(t)
		a := addFighter(t, w, 1, -0.6)
		b := addFighter(t, w, 2, 0.6)
		if _, err := w.AddBall(3, PropConfig{Pos: V(0, 3)}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 300; i++ {
			in := Input(0)
			switch i % 50 {
			case 5:
				in = InputPunch
			case 25:
				in = InputKick
			}
			if i > 200 {
				in |= InputRight
			}
			a.SetInput(in)
			b.SetInput(InputBlock * Input(i/100%2))
			w.Step()
			for _, h := range w.Hits() {
				w.Fighter(h.Victim).ApplyHit(h)
			}
		}
		var out []BodyState
		for _, o := range w.Objects() {
			out = o.ReadState(out)
		}
		return out
	}
	x, y := run(), run()
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("body %d differs between identical runs: %+v vs %+v", i, x[i], y[i])
		}
	}
}

func TestRemoteFighter(t *testing.T) {
	w := newWorld(t)
	a := addFighter(t, w, 1, -1)
	b := addFighter(t, w, 2, 1)
	steps(w, 10)
	b.SetControlled(false)
	if b.isControlled() {
		t.Fatal("still controlled")
	}
	// Uncontrolled, it is a limp ragdoll: no balance, it slumps.
	b.SetInput(InputRight)
	steps(w, 120)
	if head := b.Object().readBody(PartHead.Index()).Pos.Y; head > 0.8 {
		t.Errorf("an uncontrolled fighter kept standing (head at %.2f m)", head)
	}
	// Its HP, action and facing come from the owner's snapshots.
	if err := b.SetRemoteState(FighterState{HP: 40, Action: ActionKick, Facing: FacingRight}); err != nil {
		t.Fatal(err)
	}
	if b.HP() != 40 || b.Action() != ActionKick || b.Facing() != FacingRight {
		t.Errorf("remote state not applied: %d %v %v", b.HP(), b.Action(), b.Facing())
	}
	for _, bad := range []FighterState{
		{HP: -1, Action: ActionIdle, Facing: FacingLeft},
		{HP: b.MaxHP() + 1, Action: ActionIdle, Facing: FacingLeft},
		{HP: 5, Action: ActionUnknown, Facing: FacingLeft},
		{HP: 5, Action: numActions, Facing: FacingLeft},
		{HP: 5, Action: ActionIdle, Facing: FacingUnknown},
		{HP: 5, Action: ActionIdle, Facing: FacingLeft, Phase: PhaseActive, Strike: PartLowerArmL},
		{HP: 5, Action: ActionPunch, Facing: FacingLeft, Phase: PhaseActive, Strike: PartHead},
		{HP: 5, Action: ActionPunch, Facing: FacingLeft, AttackSeq: 9},
	} {
		t.Run(fmt.Sprintf("%+v", bad), func(t *testing.T) {
			if err := b.SetRemoteState(bad); !errors.Is(err, ErrOutOfRange) {
				t.Errorf("SetRemoteState(%+v) = %v", bad, err)
			}
		})
	}
	if b.HP() != 40 {
		t.Error("a rejected remote state changed HP")
	}
	// A remote fighter's attack, as its owner reports it, hits here too:
	// put b in reach of a and let it punch.
	st := b.Object().ReadState(nil)
	ast := a.Object().ReadState(nil)
	for i := range st {
		st[i] = ast[i]
		st[i].Pos.X += 0.7
	}
	if err := b.Object().WriteState(st); err != nil {
		t.Fatal(err)
	}
	var hits []HitEvent
	for i := 0; i < 20; i++ {
		ph := PhaseActive
		if i < 5 {
			ph = PhaseWindup
		}
		if err := b.SetRemoteState(FighterState{HP: 40, Action: ActionPunch, Facing: FacingLeft, Phase: ph, Strike: PartLowerArmR, AttackSeq: 1}); err != nil {
			t.Fatal(err)
		}
		// Drive the remote punch as correction would: swing the arm at a.
		arm := b.Object().Body(PartLowerArmR.Index())
		arm.SetLinearVelocity(box2d.B2Vec2{X: -6, Y: 0})
		w.Step()
		hits = append(hits, w.Hits()...)
	}
	if len(hits) != 1 || hits[0].Attacker != 2 || hits[0].Victim != 1 || hits[0].Attack != ActionPunch {
		t.Errorf("remote punch: hits %+v, want exactly one on obj#1", hits)
	}
	if err := b.SetRemoteState(FighterState{HP: 40, Action: ActionIdle, Facing: FacingLeft}); err != nil {
		t.Fatal(err)
	}
	// Back under control it gets up.
	b.SetControlled(true)
	for i := 0; i < 180 && b.Action() != ActionIdle; i++ {
		w.Step()
	}
	if b.Action() != ActionIdle {
		t.Errorf("back under control: %v", b.Action())
	}
	_ = a
}

func TestFighterConfigValidation(t *testing.T) {
	w := newWorld(t)
	for i, cfg := range []FighterConfig{
		{MaxHP: -1},
		{MaxHP: maxWireHP + 1},
		{Facing: 3},
		{X: math.NaN()},
		{Tuning: &Tuning{UprightKp: -5}},
		{Tuning: &Tuning{WalkSpeed: math.Inf(1)}},
		{Tuning: &Tuning{DownTicks: -1}},
	} {
		t.Run(fmt.Sprint("config ", i), func(t *testing.T) {
			if _, err := w.AddFighter(1, cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("AddFighter(%+v) = %v", cfg, err)
			}
		})
	}
	// Zero fields of a custom tuning take the defaults.
	f, err := w.AddFighter(1, FighterConfig{Tuning: &Tuning{WalkSpeed: 3}, MaxHP: 250, Facing: FacingLeft})
	if err != nil {
		t.Fatal(err)
	}
	tu := f.tuningOf()
	if tu.WalkSpeed != 3 || tu.UprightKp != defaultTuning().UprightKp || f.MaxHP() != 250 || f.Facing() != FacingLeft {
		t.Errorf("tuning %+v", tu)
	}
}

func TestNoWritesDuringStep(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, 0)
	st := f.Object().ReadState(nil)
	w.b2.M_flags |= box2d.B2World_Flags.E_locked // as inside a box2d callback
	defer func() { w.b2.M_flags &^= box2d.B2World_Flags.E_locked }()
	if err := f.Object().WriteState(st); !errors.Is(err, ErrWorldLocked) {
		t.Errorf("WriteState while locked: %v", err)
	}
	if _, err := w.AddCrate(2, PropConfig{Pos: V(1, 1)}); !errors.Is(err, ErrWorldLocked) {
		t.Errorf("AddCrate while locked: %v", err)
	}
	if err := w.RemoveObject(1); !errors.Is(err, ErrWorldLocked) {
		t.Errorf("RemoveObject while locked: %v", err)
	}
}

func TestEnumStrings(t *testing.T) {
	for a := Action(0); a <= numActions; a++ {
		if a.String() == "" {
			t.Errorf("action %d has no name", a)
		}
	}
	if ActionGettingUp.String() != "getting-up" || Action(99).String() != "action(99)" {
		t.Error("action names")
	}
	if (InputLeft|InputKick|0x80).String() != "left|kick|0x80" || Input(0).String() != "none" {
		t.Errorf("input string %q", (InputLeft | InputKick | 0x80).String())
	}
	if PartLowerLegR.String() != "lower-leg-r" || PartOf(10) != PartUnknown || BodyPart(20).Index() != -1 {
		t.Error("body parts")
	}
	if ObjectID(0).String() != "obj#invalid" || ObjectID(7).String() != "obj#7" {
		t.Error("object ids")
	}
	for _, s := range []string{kindFighter.String(), FacingLeft.String(), PhaseActive.String(), ShapeBox.String()} {
		if s == "" {
			t.Error("empty name")
		}
	}
}

// TestRandomBrawlStaysSane mashes random inputs on two fighters with props
// around and checks that the simulation stays valid: every state passes the
// limits and round-trips through the codec, hits apply, and nobody stays
// down.
func TestRandomBrawlStaysSane(t *testing.T) {
	w := newWorld(t)
	a := addFighter(t, w, 1, -0.5)
	b := addFighter(t, w, 2, 0.5)
	w.AddBall(3, PropConfig{Pos: V(0, 4)})
	w.AddCrate(4, PropConfig{Pos: V(2, 1)})
	c := w.codec
	rng := rand.New(rand.NewSource(9))
	var s, d Snapshot
	var buf []byte
	var err error
	ins := [2]Input{}
	downFor := [2]int{}
	hits := 0
	for i := 0; i < 3000; i++ {
		for k, f := range []*Fighter{a, b} {
			if rng.Intn(15) == 0 {
				ins[k] = Input(rng.Intn(64))
			}
			f.SetInput(ins[k])
		}
		w.Step()
		for _, h := range w.Hits() {
			hits++
			w.Fighter(h.Victim).ApplyHit(h)
		}
		s.Reset(clocksync.GameTime(i), uint32(i))
		for _, o := range w.Objects() {
			s.Add(o)
			if err := o.Validate(&s.Objects[len(s.Objects)-1]); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if buf, err = c.appendSnapshot(buf[:0], &s); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if err = c.decodeSnapshot(buf, &d); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for k, f := range []*Fighter{a, b} {
			if f.HP() < 25 {
				f.Revive(f.MaxHP())
			}
			switch f.Action() {
			case ActionDown, ActionGettingUp:
				downFor[k]++
				if downFor[k] > 400 {
					t.Fatalf("step %d: %v down for %d steps (torso %.0f°)", i, f.ID(), downFor[k], deg(torsoAngle(f)))
				}
			default:
				downFor[k] = 0
			}
		}
	}
	if hits < 10 {
		t.Errorf("only %d hits in a 50 s brawl", hits)
	}
	t.Logf("%d hits", hits)
}

// A following fighter holds its owner's reported action with its own muscles
// and walks as its owner's input says, but decides nothing itself.
func TestFollowingFighter(t *testing.T) {
	w := newWorld(t)
	addFighter(t, w, 1, -3)
	b := addFighter(t, w, 2, 1)
	steps(w, 30)
	b.SetControlled(false)
	b.SetFollowing(true)
	if !b.isFollowing() {
		t.Fatal("not following")
	}
	if err := b.SetRemoteState(FighterState{HP: 50, Action: ActionWalk, Facing: FacingLeft}); err != nil {
		t.Fatal(err)
	}
	b.SetInput(InputLeft | InputPunch | InputJump)
	x0 := b.Object().readBody(0).Pos.X
	steps(w, 60)
	if head := b.Object().readBody(PartHead.Index()).Pos.Y; head < 1.2 {
		t.Errorf("a following fighter slumped (head at %.2f m)", head)
	}
	if dx := b.Object().readBody(0).Pos.X - x0; dx > -0.5 {
		t.Errorf("walked %.2f m in a second, want to the left", dx)
	}
	if b.Action() != ActionWalk || b.State().Phase != PhaseNone || b.Facing() != FacingLeft {
		t.Errorf("decided on its own: %v %v %v", b.Action(), b.State().Phase, b.Facing())
	}
	// Not following, the same fighter is a limp ragdoll again.
	b.SetFollowing(false)
	steps(w, 120)
	if head := b.Object().readBody(PartHead.Index()).Pos.Y; head > 0.8 {
		t.Errorf("a limp fighter kept standing (head at %.2f m)", head)
	}
}

// Worlds that follow the same clock walk in step, however many steps each
// has taken.
func TestGaitFollowsTheClock(t *testing.T) {
	walkers := [2]*Fighter{}
	worlds := [2]*World{}
	for k := range worlds {
		worlds[k] = newWorld(t)
		walkers[k] = addFighter(t, worlds[k], 1, 0)
		steps(worlds[k], 30+17*k) // different step counts
		walkers[k].SetInput(InputRight)
	}
	for i := range 40 {
		for _, w := range worlds {
			w.SetClock(clocksync.GameTime(5_000_000 + i*1_000_000/TickRate))
			w.Step()
		}
		if g0, g1 := walkers[0].gait, walkers[1].gait; g0 != g1 {
			t.Fatalf("step %d: gaits %v and %v", i, g0, g1)
		}
	}
	// Between two settings the clock runs on by a step per step.
	before := walkers[0].gait
	worlds[0].Step()
	want := math.Mod(before+2*math.Pi*walkers[0].tuning.StepRate*dt, 2*math.Pi)
	if d := math.Abs(angle.Diff(walkers[0].gait, want)); d > 1e-9 {
		t.Errorf("gait %v after a step without SetClock, want %v", walkers[0].gait, want)
	}
}

// A following fighter plays its owner's attack on the owner's timers, from
// the reported phase plus the report's age; stale reports do not set it
// back.
func TestFollowRemoteStateRunsAttacksOn(t *testing.T) {
	w := newWorld(t)
	addFighter(t, w, 1, -3)
	b := addFighter(t, w, 2, 1)
	b.SetControlled(false)
	b.SetFollowing(true)
	tu := b.tuningOf()
	punch := func(ph AttackPhase, seq uint8) FighterState {
		return FighterState{HP: 50, Action: ActionPunch, Facing: FacingLeft, Phase: ph, Strike: PartLowerArmR, AttackSeq: seq}
	}
	// The owner started a punch (its tick s) and the report is 4 ticks
	// old: the coming step is the owner's tick s+4.
	if err := b.FollowRemoteState(punch(PhaseWindup, 1), 4*TickDuration); err != nil {
		t.Fatal(err)
	}
	// Its windup lasts PunchWindup ticks (s … s+PunchWindup-1); the steps
	// here are the owner's ticks s+4 … s+PunchWindup, the last of them the
	// first of the active phase.
	for i := range tu.PunchWindup - 3 {
		if b.State().Phase != PhaseWindup {
			t.Fatalf("step %d: phase %v, want windup", i, b.State().Phase)
		}
		w.Step()
	}
	// The last step was the owner's tick s+PunchWindup: active.
	if b.State().Phase != PhaseActive {
		t.Fatalf("phase %v after the owner's windup, want active", b.State().Phase)
	}
	// A late report of the windup does not set it back.
	if err := b.FollowRemoteState(punch(PhaseWindup, 1), 6*TickDuration); err != nil {
		t.Fatal(err)
	}
	if b.State().Phase != PhaseActive || b.State().AttackSeq != 1 {
		t.Fatalf("a stale report set the attack back to %v", b.State().Phase)
	}
	// It ends on its own, and the fighter does what the input says.
	b.SetInput(InputBlock)
	for range tu.PunchActive + tu.PunchRecovery {
		w.Step()
	}
	if b.State().Phase != PhaseNone || b.Action() != ActionBlock {
		t.Fatalf("after the punch: %v %v, want blocking", b.Action(), b.State().Phase)
	}
	// Reports of the finished punch change nothing.
	if err := b.FollowRemoteState(punch(PhaseRecovery, 1), 5*TickDuration); err != nil {
		t.Fatal(err)
	}
	if b.State().Phase != PhaseNone || b.Action() != ActionBlock {
		t.Fatalf("a report of the finished punch restarted it: %v %v", b.Action(), b.State().Phase)
	}
	// A report of a next attack long over by now plays out at once.
	if err := b.FollowRemoteState(punch(PhaseWindup, 2), 100*TickDuration); err != nil {
		t.Fatal(err)
	}
	if b.State().Phase != PhaseNone || b.State().AttackSeq != 2 {
		t.Fatalf("an attack 100 ticks old is still on: %v", b.State().Phase)
	}
	// A knock-down cuts an attack short.
	if err := b.FollowRemoteState(punch(PhaseActive, 3), 1*TickDuration); err != nil {
		t.Fatal(err)
	}
	if err := b.FollowRemoteState(FighterState{HP: 40, Action: ActionDown, Facing: FacingLeft, AttackSeq: 3}, 1*TickDuration); err != nil {
		t.Fatal(err)
	}
	if b.State().Phase != PhaseNone || b.Action() != ActionDown {
		t.Fatalf("knocked down mid-punch: %v %v", b.Action(), b.State().Phase)
	}
	if err := b.FollowRemoteState(FighterState{HP: 40, Action: ActionUnknown, Facing: FacingLeft}, 1*TickDuration); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("invalid state: %v", err)
	}
}
