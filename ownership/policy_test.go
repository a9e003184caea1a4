package ownership

import (
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/physics"
)

func testMoves(t *testing.T) moveTable {
	t.Helper()
	w, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := w.AddFighter(1, physics.FighterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return movesOf(f.Tuning())
}

func ticks(n int) clocksync.GameTime { return us(time.Duration(n) * physics.TickDuration) }

func tk(n int) int64 { return int64(n) }

// The attack rule: a punch (6 + 8 + 10 ticks) seen in any of its phases,
// with packets lost, never refuses the next punch that starts when the
// first could have ended; it refuses one that starts earlier, and one held
// in a phase longer than the move allows.
func TestAttackPolicy(t *testing.T) {
	punch := func(seq uint8, ph physics.AttackPhase) physics.FighterState {
		return physics.FighterState{HP: 100, Action: physics.ActionPunch, Facing: physics.FacingRight, Phase: ph, Strike: physics.PartLowerArmR, AttackSeq: seq}
	}
	phaseAt := func(tick int) physics.AttackPhase { // of a punch started at tick 0
		switch {
		case tick < 6:
			return physics.PhaseWindup
		case tick < 14:
			return physics.PhaseActive
		case tick < 24:
			return physics.PhaseRecovery
		}
		return physics.PhaseNone
	}
	for _, c := range []struct {
		name    string
		seen    []int // ticks of the first punch whose states arrive
		next    int   // tick the second punch starts
		nextAt  int   // tick of its first state that arrives
		refused bool
	}{
		{"every state, next at once", []int{0, 1, 2, 6, 13, 14, 23}, 24, 24, false},
		{"only its wind-up seen", []int{0}, 24, 24, false},
		{"only its recovery seen", []int{23}, 24, 30, false},
		{"next seen in its active phase", []int{0, 6}, 24, 31, false},
		{"next 10 ticks early", []int{0, 6, 13}, 14, 14, true},
		{"next at the next tick", []int{0}, 1, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newAttackPolicy(testMoves(t), attackTolerance)
			for _, k := range c.seen {
				s := punch(1, phaseAt(k))
				if _, ok := p.judgeState(&s, tk(k)); !ok {
					t.Fatalf("the first punch's state at tick %d refused", k)
				}
				p.commitState(&s, tk(k))
			}
			s := punch(2, phaseAt(c.nextAt-c.next))
			if _, ok := p.judgeState(&s, tk(c.nextAt)); ok == c.refused {
				t.Errorf("second punch (start %d, seen %d in %v): accepted %v", c.next, c.nextAt, s.Phase, ok)
			}
		})
	}
	t.Run("held active", func(t *testing.T) {
		p := newAttackPolicy(testMoves(t), attackTolerance)
		s := punch(1, physics.PhaseActive)
		p.commitState(&s, tk(6))
		if _, ok := p.judgeState(&s, tk(12)); !ok {
			t.Error("the same punch 6 ticks into its active phase refused")
		}
		if _, ok := p.judgeState(&s, tk(6+8+3)); ok {
			t.Error("a punch held active 11 ticks accepted")
		}
	})
}

// The damage budget allows two strongest hits at once and one per shortest
// attack after that, and refuses more.
func TestDamageBudget(t *testing.T) {
	m := testMoves(t)
	b := newDamageBudget(m, attackTolerance)
	per := ticks(22) // the punch's 24 ticks less the tolerance
	for i := range 2 {
		if !b.take(m.maxDamage, 0) {
			t.Fatalf("strongest hit %d of two at once refused", i+1)
		}
	}
	if b.take(1, 0) {
		t.Error("a third hit at once accepted")
	}
	if !b.take(m.maxDamage, per) {
		t.Error("a strongest hit one shortest attack later refused")
	}
	if b.take(m.maxDamage, per+ticks(1)) {
		t.Error("another a tick later accepted")
	}
}

// HP may rise only in a new round; a new round pairs with a reset
// declared here, however late it arrives, and an owed reset lapses after
// roundGrace of the rival's stream in the old round.
func TestHealthAndRoundPolicy(t *testing.T) {
	at := func(hp int, a physics.Action) *physics.FighterState {
		return &physics.FighterState{HP: hp, Action: a, Facing: physics.FacingLeft}
	}
	p := healthPolicy{hp: 100}
	p.commit(at(40, physics.ActionIdle))
	if p.judge(at(100, physics.ActionIdle)) {
		t.Error("a rise accepted")
	}
	if !p.judge(at(30, physics.ActionIdle)) {
		t.Error("a fall refused")
	}
	q := healthPolicy{hp: 100}
	q.commit(at(0, physics.ActionKO))
	if q.judge(at(0, physics.ActionIdle)) {
		t.Error("a self-revive at HP 0 accepted")
	}

	var r roundPolicy
	if r.newRound(0) || !r.newRound(1) {
		t.Fatal("newRound")
	}
	// Declared here, the rival's new round arrives after a 3 s outage:
	// still paired.
	r.declare(0)
	r.lapse(us(3*time.Second), us(3*time.Second)) // the first packet after the outage
	if r.owed != 1 {
		t.Fatal("the owed reset lapsed over an outage")
	}
	r.commit(1)
	if r.owed != 0 || r.newRound(1) {
		t.Fatalf("after the pair: owed %d, round %d", r.owed, r.round)
	}
	// Declared here, the rival stays in its round for longer than
	// roundGrace with no gap: the reset lapses, its later round is not
	// paired.
	r.declare(us(10 * time.Second))
	r.lapse(us(10*time.Second+roundGrace), 0)
	if r.owed != 1 {
		t.Error("lapsed within roundGrace")
	}
	r.lapse(us(10*time.Second+roundGrace+time.Millisecond), 0)
	if r.owed != 0 {
		t.Error("did not lapse after roundGrace")
	}
}
