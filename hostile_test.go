package ragsync

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
)

// A modified client: it takes its own packets apart as package ownership
// documents them (format version 4), edits them, and sends well-formed
// packets that cheat.

// wirePacket is a state packet taken apart.
type wirePacket struct {
	round  uint64
	claims [][2]uint64 // object id, epoch
	inputs [][2]uint64 // fighter id, input
	hits   []wireHit
	snap   physics.Snapshot
}

// wireHit is a hit report as the wire carries it.
type wireHit struct {
	attacker, victim physics.ObjectID
	seq              uint8
	strike, part     physics.BodyPart
	age, view        time.Duration
	copyErr          float64
	impulse          float64
	limb             physics.Pose
}

var strikeCode = map[physics.BodyPart]byte{physics.PartLowerArmL: 1, physics.PartLowerArmR: 2, physics.PartLowerLegL: 3, physics.PartLowerLegR: 4}

func parseWire(t testing.TB, w *physics.World, p []byte) *wirePacket {
	t.Helper()
	if len(p) < 2 || p[0] != ownership.KindState || p[1] != 0xC4 {
		t.Fatalf("not a version-4 state packet: % x", p[:min(len(p), 4)])
	}
	off := 2
	uv := func() uint64 {
		v, n := binary.Uvarint(p[off:])
		if n <= 0 {
			t.Fatalf("bad varint at %d", off)
		}
		off += n
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(p[off:])
		if n <= 0 {
			t.Fatalf("bad varint at %d", off)
		}
		off += n
		return v
	}
	wp := &wirePacket{round: uv()}
	for range uv() {
		wp.claims = append(wp.claims, [2]uint64{uv(), uv()})
	}
	for range uv() {
		id := uv()
		wp.inputs = append(wp.inputs, [2]uint64{id, uint64(p[off])})
		off++
	}
	for range uv() {
		var h wireHit
		h.attacker, h.victim = physics.ObjectID(uv()), physics.ObjectID(uv())
		b, part := p[off], p[off+1]
		off += 2
		h.seq, h.part = b&3, physics.BodyPart(part)
		for limb, c := range strikeCode {
			if c == b>>2 {
				h.strike = limb
			}
		}
		h.age = time.Duration(uv()) * time.Microsecond
		h.view = time.Duration(uv()) * time.Microsecond
		h.copyErr = float64(uv()) / 1000
		h.impulse = float64(uv()) / 1000
		x, y := sv(), sv()
		h.limb = physics.Pose{Pos: physics.V(float64(x)/1000, float64(y)/1000), Angle: float64(uv()) / 65536 * 2 * math.Pi}
		wp.hits = append(wp.hits, h)
	}
	if err := w.DecodeSnapshot(p[off:], &wp.snap); err != nil {
		t.Fatal(err)
	}
	return wp
}

func (wp *wirePacket) encode(t testing.TB, w *physics.World) []byte {
	t.Helper()
	p := binary.AppendUvarint([]byte{ownership.KindState, 0xC4}, wp.round)
	p = binary.AppendUvarint(p, uint64(len(wp.claims)))
	for _, c := range wp.claims {
		p = binary.AppendUvarint(binary.AppendUvarint(p, c[0]), c[1])
	}
	p = binary.AppendUvarint(p, uint64(len(wp.inputs)))
	for _, in := range wp.inputs {
		p = append(binary.AppendUvarint(p, in[0]), byte(in[1]))
	}
	p = binary.AppendUvarint(p, uint64(len(wp.hits)))
	for _, h := range wp.hits {
		p = binary.AppendUvarint(p, uint64(h.attacker))
		p = binary.AppendUvarint(p, uint64(h.victim))
		p = append(p, h.seq&3|strikeCode[h.strike]<<2, byte(h.part))
		p = binary.AppendUvarint(p, uint64(h.age/time.Microsecond))
		p = binary.AppendUvarint(p, uint64(h.view/time.Microsecond))
		p = binary.AppendUvarint(p, uint64(h.copyErr*1000))
		p = binary.AppendUvarint(p, uint64(h.impulse*1000))
		p = binary.AppendVarint(p, int64(math.Round(h.limb.Pos.X*1000)))
		p = binary.AppendVarint(p, int64(math.Round(h.limb.Pos.Y*1000)))
		p = binary.AppendUvarint(p, uint64(math.Round(h.limb.Angle/(2*math.Pi)*65536))%65536)
	}
	p, err := w.AppendSnapshot(p, &wp.snap)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fighterState returns the state of fighter id in wp (nil if absent).
func (wp *wirePacket) fighterState(id physics.ObjectID) *physics.ObjectState {
	for i := range wp.snap.Objects {
		if wp.snap.Objects[i].ID == id {
			return &wp.snap.Objects[i]
		}
	}
	return nil
}

// hostilePair is a match whose side 2 is a modified client: every packet
// it sends passes through cheat (if set) before side 1 gets it.
type hostilePair struct {
	*matchPair
	cheat func(tick int, wp *wirePacket)
	ticks int
}

func newHostilePair(t *testing.T, build func(testing.TB) *physics.World) *hostilePair {
	t.Helper()
	h := &hostilePair{matchPair: &matchPair{}}
	p := h.matchPair
	p.la, p.lb = newMemPair(&p.now)
	cfg := testConfig()
	p.a = newTestMatch(t, build(t), p.la, cfg)
	p.b = newTestMatch(t, build(t), p.lb, cfg)
	p.lb.tamper = func(pkt []byte) []byte {
		if h.cheat == nil || len(pkt) == 0 || pkt[0] != ownership.KindState {
			return pkt
		}
		wp := parseWire(t, p.b.World(), pkt)
		h.cheat(h.ticks, wp)
		return wp.encode(t, p.b.World())
	}
	return h
}

// run plays n ticks with cheat (nil: honest), both fighters standing.
func (h *hostilePair) run(t *testing.T, n int, cheat func(tick int, wp *wirePacket)) {
	t.Helper()
	h.cheat = cheat
	for range n {
		h.tick(t)
		h.ticks++
	}
	h.cheat = nil
}

// honestAfter plays a second of honest play and checks that side 1 still
// applies side 2's states.
func (h *hostilePair) honestAfter(t *testing.T) {
	t.Helper()
	before := h.a.Stats().Replicator.Applied
	h.run(t, 60, nil)
	if got := h.a.Stats().Replicator.Applied - before; got < 55 {
		t.Errorf("after the cheat, %d of 60 honest states applied", got)
	}
}

// worldWith builds newTestWorld's world with side 2's fighter at bx and
// the crate at cx.
func worldWith(bx, cx float64) func(testing.TB) *physics.World {
	return func(t testing.TB) *physics.World {
		t.Helper()
		w, err := physics.NewWorld(physics.WorldConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.AddFighter(idA, physics.FighterConfig{X: -0.5}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.AddFighter(idB, physics.FighterConfig{X: bx}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.AddCrate(idProp, physics.PropConfig{Pos: physics.V(cx, 0.25)}); err != nil {
			t.Fatal(err)
		}
		return w
	}
}

// A hostile peer's cheats, each sent as well-formed packets through a real
// Match: each is refused and counted with its reason, the victim's HP does
// not move (beyond what one honest attack could do), and the cheater's
// honest states are applied again afterwards.
func TestHostilePeer(t *testing.T) {
	refused := func(m *Match, why ownership.Refusal) uint64 { return m.Stats().Replicator.Refused[why] }

	t.Run("attack spam", func(t *testing.T) {
		// A new punch every tick, its fist on A's head, each with a report
		// of a hit on the head: honest punching lands one hit per 0.4 s,
		// this would land one per tick (a KO in 250 ms).
		h := newHostilePair(t, newTestWorld)
		h.run(t, 30, nil)
		hp, applied := h.a.Fighter().HP(), h.a.Stats().Replicator.Applied
		const spam = 120 // 2 s: the move table allows 5 punches
		h.run(t, spam, func(tick int, wp *wirePacket) {
			s := wp.fighterState(idB)
			head := h.b.World().Object(idA).Pose(physics.PartHead.Index()) // A's head, as B sees it
			s.Fighter.Action, s.Fighter.Phase, s.Fighter.Strike = physics.ActionPunch, physics.PhaseActive, physics.PartLowerArmR
			s.Fighter.AttackSeq = uint8(tick) & 3
			s.Bodies[physics.PartLowerArmR.Index()].Pos = head.Pos
			wp.hits = append(wp.hits, wireHit{attacker: idB, victim: idA, seq: uint8(tick) & 3, strike: physics.PartLowerArmR,
				part: physics.PartHead, view: 16 * time.Millisecond, impulse: 24, limb: head})
		})
		st := h.a.Stats().Replicator
		// A punch lasts 24 ticks: of 120 attacks, the 6 that begin once the
		// previous could have ended (less two ticks of slack) are what honest
		// punching at its fastest does; every other is refused, with its
		// states and hit reports.
		tu := h.a.Fighter().Tuning()
		allowed := uint64(spam/(tu.PunchWindup+tu.PunchActive+tu.PunchRecovery) + 1)
		// (The attack seq wraps every 4 ticks: the spam's states 4 and 8
		// ticks into an accepted punch's active phase show the same attack,
		// and are applied, their reports duplicates.)
		// The link delivers a packet on the next tick: during the spam A
		// gets the honest state of the tick before it and all but the
		// last of the spam's packets.
		const delivered = spam - 1
		if got := refused(h.a, ownership.RefusedAttackRate); got < 2*(delivered-3*allowed) {
			t.Errorf("%d refused (attack rate): want the states and reports of at least %d attacks", got, delivered-3*allowed)
		}
		if got := st.Applied - applied - 1; got > 3*allowed {
			t.Errorf("%d of the spam's states applied, want at most %d", got, 3*allowed)
		}
		landed := st.Hits.Confirmed + st.Hits.Detected
		if lost := hp - h.a.Fighter().HP(); landed > allowed || uint64(lost) > landed*uint64(tu.MaxHitDamage) {
			t.Errorf("A lost %d HP to %d confirmed and %d detected hits; at most %d attacks may land, one hit each",
				lost, st.Hits.Confirmed, st.Hits.Detected, allowed)
		}
		hp = h.a.Fighter().HP()
		h.honestAfter(t)
		if h.a.Fighter().HP() != hp {
			t.Errorf("A's HP moved during honest play: %d → %d", hp, h.a.Fighter().HP())
		}
	})

	t.Run("prop theft from 6 m", func(t *testing.T) {
		// B claims the crate 6 m from its fighter and throws it at A.
		h := newHostilePair(t, worldWith(0.5, 6.5))
		h.run(t, 30, nil)
		hp := h.a.Fighter().HP()
		h.run(t, 30, func(tick int, wp *wirePacket) {
			crate := physics.ObjectState{ID: idProp, Bodies: h.b.World().Object(idProp).ReadState(nil)}
			crate.Bodies[0].Vel = physics.V(-12, 2) // thrown at A
			wp.claims = append(wp.claims, [2]uint64{uint64(idProp), 1})
			wp.snap.Objects = append(wp.snap.Objects, crate)
		})
		if got := refused(h.a, ownership.RefusedPropReach); got == 0 {
			t.Error("the claim from 6 m was not refused (prop reach)")
		}
		if owner, _ := h.a.Replicator().Owner(idProp); owner != 1 {
			t.Errorf("the crate went to side %d", owner)
		}
		if st := h.a.Stats().Replicator; st.Transfers != 0 {
			t.Errorf("%d transfers", st.Transfers)
		}
		h.honestAfter(t)
		if h.a.Fighter().HP() != hp {
			t.Errorf("A's HP %d → %d", hp, h.a.Fighter().HP())
		}
	})

	t.Run("healing and self-revive", func(t *testing.T) {
		h := newHostilePair(t, newTestWorld)
		h.run(t, 30, nil)
		hpA := h.a.Fighter().HP()
		setHP := func(hp int, a physics.Action) func(int, *wirePacket) {
			return func(_ int, wp *wirePacket) {
				s := wp.fighterState(idB)
				s.Fighter.HP, s.Fighter.Action = hp, a
				s.Fighter.Phase, s.Fighter.Strike = physics.PhaseNone, physics.PartUnknown
			}
		}
		h.run(t, 10, setHP(40, physics.ActionIdle)) // B took damage (A's hits, say)
		if got := h.a.Rival().HP(); got != 40 {
			t.Fatalf("A's copy of B has HP %d, want 40", got)
		}
		// Healing: HP back to 100, for longer than a round reset may lag.
		h.run(t, 150, setHP(100, physics.ActionIdle))
		if got := refused(h.a, ownership.RefusedHealing); got < 100 {
			t.Errorf("%d healed states refused (healing)", got)
		}
		if got := h.a.Rival().HP(); got != 40 {
			t.Errorf("A's copy of B healed to %d", got)
		}
		// Self-revive: knocked out, then up again, and with HP.
		h.run(t, 10, setHP(0, physics.ActionKO))
		before := refused(h.a, ownership.RefusedHealing)
		h.run(t, 150, setHP(0, physics.ActionIdle))
		h.run(t, 150, setHP(30, physics.ActionGettingUp))
		if got := refused(h.a, ownership.RefusedHealing) - before; got < 250 {
			t.Errorf("%d revived states refused (healing)", got)
		}
		if got := h.a.Rival().HP(); got != 0 || h.a.Rival().Action() != physics.ActionKO {
			t.Errorf("A's copy of B revived: HP %d, %v", got, h.a.Rival().Action())
		}
		if h.a.Fighter().HP() != hpA {
			t.Errorf("A's HP %d → %d", hpA, h.a.Fighter().HP())
		}
		// Honest play again (KO'd, as A saw it), then a round reset both
		// declare: B may come back to full HP, nothing is refused.
		h.run(t, 60, setHP(0, physics.ActionKO))
		if got := h.a.Stats().Replicator.Applied; got == 0 {
			t.Error("no state applied")
		}
		before = refused(h.a, ownership.RefusedHealing)
		h.a.ResetRound()
		h.b.ResetRound()
		h.honestAfter(t)
		if got := refused(h.a, ownership.RefusedHealing); got != before {
			t.Errorf("the declared round reset was refused %d times", got-before)
		}
		if got := h.a.Rival().HP(); got != h.a.Rival().MaxHP() {
			t.Errorf("after the round reset A's copy of B has HP %d", got)
		}
	})

	t.Run("hit reports out of tolerance", func(t *testing.T) {
		// B punches the air 3 m from A and reports hits on A's head: with
		// its fist where its states put it, and with its fist on A's head
		// although its states put it 3 m away.
		h := newHostilePair(t, worldWith(2.5, 6))
		h.run(t, 30, nil)
		hp := h.a.Fighter().HP()
		for i, lie := range []bool{false, true} {
			tol, att := refused(h.a, ownership.RefusedHitTolerance), refused(h.a, ownership.RefusedHitAttack)
			h.run(t, 8, func(tick int, wp *wirePacket) {
				s := wp.fighterState(idB)
				s.Fighter.Action, s.Fighter.Phase, s.Fighter.Strike = physics.ActionPunch, physics.PhaseActive, physics.PartLowerArmR
				s.Fighter.AttackSeq = uint8(i + 1)
				limb := physics.Pose{Pos: s.Bodies[physics.PartLowerArmR.Index()].Pos, Angle: s.Bodies[physics.PartLowerArmR.Index()].Angle}
				if lie {
					limb = h.b.World().Object(idA).Pose(physics.PartHead.Index())
				}
				wp.hits = append(wp.hits, wireHit{attacker: idB, victim: idA, seq: uint8(i + 1), strike: physics.PartLowerArmR,
					part: physics.PartHead, view: 16 * time.Millisecond, impulse: 24, limb: limb})
			})
			h.run(t, 40, nil) // the attack's recovery
			switch {
			case !lie && refused(h.a, ownership.RefusedHitTolerance)-tol != 8:
				t.Errorf("%d of 8 reports from 3 m refused (hit tolerance)", refused(h.a, ownership.RefusedHitTolerance)-tol)
			case lie && refused(h.a, ownership.RefusedHitAttack)-att != 8:
				t.Errorf("%d of 8 reports contradicting their states refused (hit attack)", refused(h.a, ownership.RefusedHitAttack)-att)
			}
		}
		if st := h.a.Stats().Replicator; h.a.Fighter().HP() != hp || st.Hits.Confirmed != 0 {
			t.Errorf("A's HP %d → %d, %d reports confirmed", hp, h.a.Fighter().HP(), st.Hits.Confirmed)
		}
		h.honestAfter(t)
	})
}

// Honest fighting at close range: every hit either side's world sees is
// applied once per attack by the victim's owner, whether its own world saw
// it or the attacker reported it, and nothing is refused.
func TestHitsConfirmedOnce(t *testing.T) {
	p := newMatchPair(t, nil)
	for i := range 600 {
		in := physics.InputPunch
		if i%20 >= 10 {
			in = 0
		}
		p.a.Fighter().SetInput(in)
		p.b.Fighter().SetInput(physics.InputKick &^ physics.Input(i%2))
		p.tick(t)
	}
	for _, m := range []*Match{p.a, p.b} {
		st := m.Stats().Replicator
		if n := st.Refused.Total(); n != 0 || m.Stats().Rejected != 0 {
			t.Errorf("side %d: %d refused (%v), %d rejected", m.Side(), n, st.Refused, m.Stats().Rejected)
		}
		if st.HitsTaken != st.Hits.Confirmed+st.Hits.Detected {
			t.Errorf("side %d: %d hits taken, %d confirmed + %d detected", m.Side(), st.HitsTaken, st.Hits.Confirmed, st.Hits.Detected)
		}
		if lost := m.Fighter().MaxHP() - m.Fighter().HP(); uint64(lost) > st.Damage || (m.Fighter().HP() > 0 && uint64(lost) != st.Damage) {
			t.Errorf("side %d: lost %d HP, %d damage applied", m.Side(), lost, st.Damage)
		}
	}
	// Each hit A's world saw A land was reported, and B judged each once.
	sa, sb := p.a.Stats().Replicator, p.b.Stats().Replicator
	if sa.HitsTaken+sb.HitsTaken == 0 || sa.HitsDealt == 0 {
		t.Errorf("hits taken %d/%d, A dealt %d: no fight", sa.HitsTaken, sb.HitsTaken, sa.HitsDealt)
	}
	if sa.Hits.Reported != sa.HitsDealt || sb.Hits.Confirmed+sb.Hits.Duplicate+sb.Hits.Stale < sa.Hits.Reported {
		t.Errorf("A reported %d of %d hits dealt; B confirmed %d, duplicates %d, stale %d",
			sa.Hits.Reported, sa.HitsDealt, sb.Hits.Confirmed, sb.Hits.Duplicate, sb.Hits.Stale)
	}
}

// A hostile peer's movement, hits and rounds beyond what its body and the
// rules allow: each is refused and counted, A's fighter keeps its HP and
// place, and A's copy of the cheater is not dragged along.
func TestHostilePeerPhysics(t *testing.T) {
	refused := func(m *Match, why ownership.Refusal) uint64 { return m.Stats().Replicator.Refused[why] }
	shift := func(id physics.ObjectID, d physics.Vec2) func(int, *wirePacket) {
		return func(_ int, wp *wirePacket) {
			if s := wp.fighterState(id); s != nil {
				for i := range s.Bodies {
					s.Bodies[i].Pos = s.Bodies[i].Pos.Add(d)
				}
			}
		}
	}
	speed := func(v physics.Vec2) func(int, *wirePacket) {
		return func(tick int, wp *wirePacket) {
			s := wp.fighterState(idB)
			for i := range s.Bodies {
				s.Bodies[i].Vel = v
			}
		}
	}
	torso := func(m *Match, id physics.ObjectID) physics.Vec2 { return m.World().Object(id).Pose(0).Pos }
	for _, c := range []struct {
		name  string
		bx    float64 // B's fighter's x
		ticks int
		cheat func(int, *wirePacket)
		why   ownership.Refusal
	}{
		{"teleport 14 m", 7, 30, shift(idB, physics.V(-14, 0)), ownership.RefusedMotion},
		{"hover 4 m up", 3, 120, shift(idB, physics.V(0, 4)), ownership.RefusedAir},
		{"run at 30 m/s", 3, 60, speed(physics.V(-30, 0)), ownership.RefusedMotion},
		{"ram at 119 m/s", 3, 30, speed(physics.V(-119, 0)), ownership.RefusedMotion},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHostilePair(t, worldWith(c.bx, -6))
			h.run(t, 30, nil)
			hp, posA, posB := h.a.Fighter().HP(), torso(h.a, idA), torso(h.a, idB)
			h.run(t, c.ticks, c.cheat)
			st := h.a.Stats().Replicator
			// The link delivers a packet a tick later: all but the last.
			if got := st.Refused[ownership.RefusedMotion] + st.Refused[ownership.RefusedAir]; got < uint64(c.ticks-1) || st.Refused[c.why] == 0 {
				t.Errorf("%d of %d states refused (motion, air: %v)", got, c.ticks-1, st.Refused)
			}
			if d := torso(h.a, idB).Sub(posB).Len(); d > 0.3 {
				t.Errorf("A's copy of B was dragged %.2f m", d)
			}
			if h.a.Fighter().HP() != hp || torso(h.a, idA).Sub(posA).Len() > 0.1 {
				t.Errorf("A: HP %d → %d, moved %.2f m", hp, h.a.Fighter().HP(), torso(h.a, idA).Sub(posA).Len())
			}
			h.honestAfter(t)
		})
	}

	t.Run("teleport then claim a prop", func(t *testing.T) {
		// B moves the crate from 6 m away to its fighter in the claim,
		// then hurls it at A.
		h := newHostilePair(t, worldWith(0.5, 6.5))
		h.run(t, 30, nil)
		hp, posA := h.a.Fighter().HP(), torso(h.a, idA)
		h.run(t, 30, func(tick int, wp *wirePacket) {
			crate := physics.ObjectState{ID: idProp, Bodies: h.b.World().Object(idProp).ReadState(nil)}
			crate.Bodies[0].Pos = physics.V(1.1, 0.25) // beside B's fighter
			crate.Bodies[0].Vel = physics.V(-19, 1)
			wp.claims = append(wp.claims, [2]uint64{uint64(idProp), 1})
			wp.snap.Objects = append(wp.snap.Objects, crate)
		})
		if got := refused(h.a, ownership.RefusedMotion); got < 29 {
			t.Errorf("%d of 29 claims of a moved crate refused (motion)", got)
		}
		if owner, _ := h.a.Replicator().Owner(idProp); owner != 1 {
			t.Errorf("the crate went to side %d", owner)
		}
		if h.a.Fighter().HP() != hp || torso(h.a, idA).Sub(posA).Len() > 0.1 {
			t.Errorf("A: HP %d → %d, moved %.2f m", hp, h.a.Fighter().HP(), torso(h.a, idA).Sub(posA).Len())
		}
		h.honestAfter(t)
	})

	t.Run("one-sided round reset", func(t *testing.T) {
		// Mid-fight (B at 60 HP), B declares a new round, and B's healed
		// states (as a modified client would send them
		// anyway) are refused by A, whose match refuses the reset too.
		h := newHostilePair(t, newTestWorld)
		h.run(t, 30, nil)
		h.run(t, 10, func(_ int, wp *wirePacket) { wp.fighterState(idB).Fighter.HP = 60 })
		hpA := h.a.Fighter().HP()
		_ = h.b.ResetRound() // B's own world has nothing to heal: a no-op there
		if err := h.a.ResetRound(); err == nil {
			t.Error("A adopted a reset mid-fight")
		}
		if got := refused(h.a, ownership.RefusedRound); got != 1 {
			t.Errorf("A counted %d refused resets", got)
		}
		before := refused(h.a, ownership.RefusedHealing)
		h.run(t, 180, func(_ int, wp *wirePacket) { wp.fighterState(idB).Fighter.HP = 100 })
		if got := refused(h.a, ownership.RefusedHealing) - before; got < 100 {
			t.Errorf("%d healed states refused", got)
		}
		if got := h.a.Rival().HP(); got != 60 {
			t.Errorf("A's copy of B has HP %d, want 60", got)
		}
		if h.a.Fighter().HP() != hpA {
			t.Errorf("A's HP %d → %d", hpA, h.a.Fighter().HP())
		}
	})

	t.Run("max impulse on every allowed attack", func(t *testing.T) {
		// B punches at A at the fastest pace the move table allows, from
		// where its fist ends just short of A in A's world (A's world
		// detects no hit: only B's reports can deal damage), and reports a
		// hit on A's torso with the wire's largest impulse in every packet
		// of every attack's active phase, its fist where its states put
		// it. The victim derives each hit's impulse from B's arm's speed
		// and mass in B's states: a report's 1000 N·s is a hint capped at
		// 5 times the arm's momentum.
		h := newHostilePair(t, worldWith(0.6, -6))
		h.run(t, 30, nil)
		hp := h.a.Fighter().HP()
		var seq uint8
		h.cheat = func(_ int, wp *wirePacket) {
			s := wp.fighterState(idB)
			if s.Fighter.Phase != physics.PhaseActive {
				return
			}
			limb := s.Bodies[s.Fighter.Strike.Index()]
			seq = s.Fighter.AttackSeq
			wp.hits = append(wp.hits, wireHit{attacker: idB, victim: idA, seq: seq, strike: s.Fighter.Strike,
				part: physics.PartTorso, view: 16 * time.Millisecond, impulse: 1000, limb: physics.Pose{Pos: limb.Pos, Angle: limb.Angle}})
		}
		const seconds = 10
		for i := range seconds * physics.TickRate {
			in := physics.InputPunch
			if i%24 >= 12 {
				in = 0
			}
			h.b.Fighter().SetInput(in)
			h.tick(t)
		}
		h.cheat = nil
		st := h.a.Stats().Replicator
		lost := hp - h.a.Fighter().HP()
		t.Logf("%d s of max-impulse punches: A lost %d HP (%d confirmed, %d detected; refused %v)", seconds, lost, st.Hits.Confirmed, st.Hits.Detected, st.Refused)
		// Unchecked, every allowed punch's report would take MaxHitDamage
		// (a KO in 3 punches, 0.8 s, as issue 23 measured). Now A
		// survives the 10 s: longer than an honest kicker needs to knock
		// A out (7.7 s in the same set-up). Each confirmed report takes
		// at most what a punch at the move's cap (Tuning.MaxPunchImpulse,
		// 1.4 times the strongest honest punch) takes from the torso.
		if h.a.Fighter().HP() == 0 {
			t.Errorf("A knocked out by max-impulse reports in %d s", seconds)
		}
		tun := physics.DefaultTuning()
		perHit := int(math.Round(tun.MaxPunchImpulse * tun.DamagePerImpulse * tun.TorsoMultiplier))
		if n := st.Hits.Confirmed + st.Hits.Detected; lost > int(n)*perHit {
			t.Errorf("A lost %d HP to %d hits: more than %d per hit", lost, n, perHit)
		}
	})
}

// Honest bot fights at close range, with jumps, falls, knock-downs and the
// crate, are clear of every motion rule and of the hit impulse's cap: 0
// refusals on both sides, and every hit's impulse within 5 times its
// striking limb's momentum over the swing (ownership's impulseFactor), so
// its damage is the honest one.
func TestHonestMotion(t *testing.T) {
	seeds := uint64(3)
	if testing.Short() {
		seeds = 1
	}
	var worst float64
	var peak [2]float64 // the largest impulse of a punch, of a kick
	for seed := uint64(1); seed <= seeds; seed++ {
		p := newMatchPair(t, nil)
		bots := [2]*physics.Bot{physics.NewBot(seed), physics.NewBot(seed + 100)}
		var speeds [2][8][physics.FighterBodies]float64 // the last 8 ticks' body speeds
		for i := range 30 * physics.TickRate {
			for k, m := range []*Match{p.a, p.b} {
				m.Fighter().SetInput(bots[k].Input(m.World(), m.Fighter().Object().ID(), m.Rival().Object().ID()))
			}
			p.tick(t)
			for k, m := range []*Match{p.a, p.b} {
				o := m.Fighter().Object()
				for j, b := range o.ReadState(nil) {
					speeds[k][i%8][j] = b.Vel.Len()
				}
				for _, h := range m.World().Hits() {
					if h.Attacker != o.ID() {
						continue
					}
					j := h.Strike.Index()
					var v float64
					for r := range 8 {
						v = max(v, speeds[k][r][j])
					}
					worst = max(worst, h.Impulse/(o.Bodies()[j].M_mass*v))
					k := 0
					if h.Attack == physics.ActionKick {
						k = 1
					}
					peak[k] = max(peak[k], h.Impulse)
				}
			}
		}
		for _, m := range []*Match{p.a, p.b} {
			if st := m.Stats().Replicator; st.Refused.Total() != 0 {
				t.Errorf("seed %d, side %d: refused %v", seed, m.Side(), st.Refused)
			}
		}
	}
	t.Logf("largest impulse / striking limb momentum: %.2f; largest punch %.1f N·s, kick %.1f N·s", worst, peak[0], peak[1])
	tun := physics.DefaultTuning()
	if peak[0] > tun.MaxPunchImpulse || peak[1] > tun.MaxKickImpulse {
		t.Errorf("an honest hit is above its move's cap (punch %.1f > %g or kick %.1f > %g): its damage would be cut",
			peak[0], tun.MaxPunchImpulse, peak[1], tun.MaxKickImpulse)
	}
	if worst > 5 {
		t.Errorf("an honest hit's impulse is %.2f times its limb's momentum: the cap (5) would cut its damage", worst)
	}
}

// An honest round reset the rival makes first: the round is up on both
// sides (time), B puts its fighter back at its start and declares the new
// round half a second before A does. A takes B's jump back to the start as
// the new round's placement, refuses nothing, and its copy of B follows B
// there.
func TestRoundResetRivalFirst(t *testing.T) {
	cfg := testConfig()
	cfg.Replicator.RoundLength = 5 * time.Second
	p := newMatchPair(t, &cfg)
	torso := func(m *Match, id physics.ObjectID) physics.Vec2 { return m.World().Object(id).Pose(0).Pos }
	start := p.b.Fighter().Object().ReadState(nil)
	// B walks away from its start for the whole round, and stands.
	for i := range 5*physics.TickRate + 30 {
		in := physics.InputRight
		if i > 3*physics.TickRate {
			in = 0
		}
		p.b.Fighter().SetInput(in)
		p.tick(t)
	}
	away := torso(p.b, idB).Sub(start[0].Pos).Len()
	if away < 1 {
		t.Fatalf("B walked only %.2f m from its start", away)
	}
	if err := p.b.Fighter().Object().WriteState(start); err != nil {
		t.Fatal(err)
	}
	if err := p.b.ResetRound(); err != nil {
		t.Fatalf("B's reset: %v", err)
	}
	for range 30 {
		p.tick(t)
	}
	if err := p.a.ResetRound(); err != nil {
		t.Fatalf("A's reset: %v", err)
	}
	for range 60 {
		p.tick(t)
	}
	for _, m := range []*Match{p.a, p.b} {
		if st := m.Stats(); st.Replicator.Refused.Total() != 0 || st.Rejected != 0 {
			t.Errorf("side %d: refused %v, rejected %d", m.Side(), st.Replicator.Refused, st.Rejected)
		}
	}
	if d := torso(p.a, idB).Sub(torso(p.b, idB)).Len(); d > 0.3 {
		t.Errorf("A's copy of B is %.2f m from B after the reset (B walked %.2f m away first)", d, away)
	}
}
