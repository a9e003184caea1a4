package ownership

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/correction"
	"github.com/ragsync/ragsync/physics"
)

const (
	fighterA physics.ObjectID = 1
	fighterB physics.ObjectID = 2
	crate    physics.ObjectID = 3
	debris   physics.ObjectID = 4
)

const tickUS = clocksync.GameTime(1_000_000 / physics.TickRate)

// peer is one side of a match without a network: a world and its replicator.
type peer struct {
	w   *physics.World
	r   *Replicator
	buf []byte
}

// newPeer builds the same world on both sides: two fighters, a shared crate
// (first owned by A) and local-only debris.
func newPeer(t testing.TB, local, remote PeerID, mutate func(*Config)) *peer {
	t.Helper()
	w, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddFighter(fighterA, physics.FighterConfig{X: -1.5}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddFighter(fighterB, physics.FighterConfig{X: 1.5}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddCrate(crate, physics.PropConfig{Pos: physics.V(4, 0.25)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddBall(debris, physics.PropConfig{Pos: physics.V(-5, 0.15)}); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := New(w, local, remote, cfg)
	if err != nil {
		t.Fatal(err)
	}
	must(t, r.Track(fighterA, peerA, false))
	must(t, r.Track(fighterB, peerB, false))
	must(t, r.Track(crate, peerA, true))
	must(t, r.LocalOnly(debris))
	return &peer{w: w, r: r, buf: make([]byte, 0, 2048)}
}

// tick runs one tick of p at game time now, handling the packets in inbox,
// and returns the packet it sends.
func (p *peer) tick(t testing.TB, now clocksync.GameTime, inbox ...[]byte) []byte {
	t.Helper()
	for _, pkt := range inbox {
		if err := p.r.HandlePacket(pkt, now); err != nil {
			t.Fatalf("HandlePacket: %v", err)
		}
	}
	p.r.BeforeStep(now)
	p.w.Step()
	p.r.AfterStep()
	out, err := p.r.AppendPacket(p.buf[:0], now)
	if err != nil {
		t.Fatal(err)
	}
	p.buf = out
	return append([]byte(nil), out...)
}

func torso(w *physics.World, id physics.ObjectID) physics.Vec2 {
	pos, _ := w.Object(id).Transform(0)
	return pos
}

// Each peer owns its fighter; the rival's copy follows the owner's states,
// while the owner's own fighter is never touched by the rival.
func TestReplicatorFollowsOwner(t *testing.T) {
	a := newPeer(t, peerA, peerB, nil)
	b := newPeer(t, peerB, peerA, nil)
	if a.r.Mode(fighterA) != ModeOwned || a.r.Mode(fighterB) != ModeRemote || b.r.Mode(fighterB) != ModeOwned {
		t.Fatal("modes wrong")
	}
	var toA, toB []byte
	maxErr := 0.0
	for i := range 240 {
		now := clocksync.GameTime(i) * tickUS
		// A walks right for 2 s; B stands.
		in := physics.Input(0)
		if i < 120 {
			in = physics.InputRight
		}
		a.w.Fighter(fighterA).SetInput(in)
		// Packets take one tick (a perfect network).
		pa := a.tick(t, now, nilIfEmpty(toA)...)
		pb := b.tick(t, now, nilIfEmpty(toB)...)
		toA, toB = pb, pa
		if i > 30 {
			d := torso(a.w, fighterA).Sub(torso(b.w, fighterA)).Len()
			maxErr = math.Max(maxErr, d)
		}
	}
	moved := torso(a.w, fighterA).X - (-1.5)
	if moved < 1 {
		t.Fatalf("A's fighter moved only %v m", moved)
	}
	if maxErr > 0.15 {
		t.Errorf("B's copy of A's torso was up to %v m off, want < 15 cm on a perfect link", maxErr)
	}
	sa, sb := a.r.Stats(), b.r.Stats()
	if sb.Applied < 2*230 || sb.Unauthorized != 0 || sb.Invalid != 0 || sb.Malformed != 0 {
		t.Errorf("B stats %+v", sb)
	}
	if sa.Correction.Targets == 0 || sa.PacketsOut != 240 {
		t.Errorf("A stats %+v", sa)
	}
	// Only the crate (owned by A) and A's fighter travel A→B; B sends only
	// its fighter.
	if got := b.r.Corrector(crate).Stats().Targets; got == 0 {
		t.Error("B never received the crate from A")
	}
	if got := a.r.Corrector(fighterA).Stats().Targets; got != 0 {
		t.Errorf("A received %d states of its own fighter", got)
	}
}

func nilIfEmpty(p []byte) [][]byte {
	if p == nil {
		return nil
	}
	return [][]byte{p}
}

// A peer that sends states of objects it does not own (a cheat or a bug) is
// refused object by object, and counted; its own objects still apply.
func TestReplicatorRejectsUnownedStates(t *testing.T) {
	a := newPeer(t, peerA, peerB, nil)
	// B's side believes it owns A's fighter and the debris.
	liar := newPeer(t, peerB, peerA, func(c *Config) {})
	liar.r.reg.get(fighterA).owner = peerB
	liar.r.reg.get(fighterA).shared = false
	liar.r.lookup(fighterA).mode = ModeOwned
	pkt := liar.tick(t, 0)

	before := torso(a.w, fighterA)
	err := a.r.HandlePacket(pkt, 0)
	if !errors.Is(err, ErrNotOwner) {
		t.Fatalf("HandlePacket = %v, want ErrNotOwner", err)
	}
	var ae *AuthorityError
	if !errors.As(err, &ae) || ae.Object != fighterA || ae.Sender != peerB {
		t.Errorf("error %v does not name object %v and sender %v", err, fighterA, peerB)
	}
	s := a.r.Stats()
	if s.Unauthorized != 1 || s.Applied != 1 {
		t.Errorf("stats: unauthorized %d applied %d, want 1 and 1 (B's own fighter)", s.Unauthorized, s.Applied)
	}
	a.r.BeforeStep(0)
	if after := torso(a.w, fighterA); after != before {
		t.Errorf("A's own fighter was moved by the rival: %v -> %v", before, after)
	}
	if a.r.Corrector(fighterA).HasTarget() {
		t.Error("a target was set for A's own fighter")
	}
}

// Each object state is judged in the documented order: authorize (a pure
// check), validate, commit. A state that fails a step changes nothing, not
// even ownership when it carries a winning claim; a state both unauthorized
// and invalid counts as unauthorized.
func TestReplicatorReceiveOrder(t *testing.T) {
	nan := math.NaN()
	// states of each object: valid ones read from B's world, which is
	// A's world too at the start.
	b := newPeer(t, peerB, peerA, nil)
	valid := func(id physics.ObjectID) physics.ObjectState {
		s := physics.ObjectState{ID: id, Bodies: b.w.Object(id).ReadState(nil)}
		if f := b.w.Fighter(id); f != nil {
			s.Fighter = f.State()
		}
		return s
	}
	invalid := func(id physics.ObjectID) physics.ObjectState {
		s := valid(id)
		s.Bodies[0].Pos.X = nan
		return s
	}
	hpTooHigh := func(id physics.ObjectID) physics.ObjectState {
		s := valid(id)
		s.Fighter.HP = 500 // on the wire (≤ 1000) but above the fighter's 100
		return s
	}
	for _, c := range []struct {
		name    string
		state   physics.ObjectState
		epoch   uint32 // the claim the state carries
		err     error
		counter func(Stats) uint64 // the one counter that must move
		owner   PeerID             // the crate's owner afterwards
	}{
		{"B's fighter", valid(fighterB), 0, nil, func(s Stats) uint64 { return s.Applied }, peerA},
		{"B's fighter, NaN", invalid(fighterB), 0, physics.ErrNotFinite, func(s Stats) uint64 { return s.Invalid }, peerA},
		{"B's fighter, HP above its max", hpTooHigh(fighterB), 0, physics.ErrOutOfRange, func(s Stats) uint64 { return s.Invalid }, peerA},
		{"A's fighter", valid(fighterA), 0, ErrNotOwner, func(s Stats) uint64 { return s.Unauthorized }, peerA},
		{"A's fighter, NaN: unauthorized, not invalid", invalid(fighterA), 0, ErrNotOwner, func(s Stats) uint64 { return s.Unauthorized }, peerA},
		{"A's fighter, HP above its max", hpTooHigh(fighterA), 0, ErrNotOwner, func(s Stats) uint64 { return s.Unauthorized }, peerA},
		{"debris, NaN", invalid(debris), 0, ErrLocalOnly, func(s Stats) uint64 { return s.Unauthorized }, peerA},
		{"crate, claim skipping epochs, NaN", invalid(crate), 5, ErrBadClaim, func(s Stats) uint64 { return s.Unauthorized }, peerA},
		{"crate, stale claim, NaN", invalid(crate), 0, nil, func(s Stats) uint64 { return s.ClaimsLost }, peerA},
		{"crate, winning claim, NaN: no transfer", invalid(crate), 1, physics.ErrNotFinite, func(s Stats) uint64 { return s.Invalid }, peerA},
		{"crate, winning claim from 2 m away", valid(crate), 1, nil, func(s Stats) uint64 { return s.Refused[RefusedPropReach] }, peerA},
		{"crate, winning claim", valid(crate), 1, nil, func(s Stats) uint64 { return s.Applied }, peerB},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newPeer(t, peerA, peerB, nil)
			if c.name == "crate, winning claim" {
				// B's fighter stands by the crate in A's world.
				cs := a.w.Object(crate).ReadState(nil)
				cs[0].Pos = physics.V(2.3, 0.25)
				if err := a.w.Object(crate).WriteState(cs); err != nil {
					t.Fatal(err)
				}
				c.state.Bodies[0].Pos = cs[0].Pos // the claim places it there too
			}
			before := a.r.Stats()
			o := a.r.lookup(c.state.ID) // nil for the local-only debris
			targets := func() uint64 {
				if o == nil {
					return 0
				}
				return o.corr.Stats().Targets
			}
			targetsBefore := targets()
			err := a.r.apply(o, &c.state, c.epoch, nil, a.w.Tick(), 0)
			var re *RefusedError
			if errors.As(err, &re) && re.Reason == RefusedPropReach && c.name == "crate, winning claim from 2 m away" {
				err = nil
			}
			if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
				t.Fatalf("apply = %v, want %v", err, c.err)
			}
			after := a.r.Stats()
			if c.counter(after) != c.counter(before)+1 {
				t.Errorf("the expected counter did not move: %+v", after)
			}
			if moved := after.Applied + after.Invalid + after.Unauthorized + after.ClaimsLost + after.Refused.Total() -
				(before.Applied + before.Invalid + before.Unauthorized + before.ClaimsLost + before.Refused.Total()); moved != 1 {
				t.Errorf("%d counters moved, want 1: %+v", moved, after)
			}
			if owner, _ := a.r.Owner(crate); owner != c.owner {
				t.Errorf("crate owner %v, want %v", owner, c.owner)
			}
			applied := after.Applied != before.Applied
			if got := targets() - targetsBefore; applied != (got == 1) {
				t.Errorf("%d targets set; applied: %v", got, applied)
			}
		})
	}
	// The same through HandlePacket: B's fighter with HP above its max
	// encodes (the wire allows up to 1000) and is refused as invalid.
	a := newPeer(t, peerA, peerB, nil)
	liar := newPeer(t, peerB, peerA, nil)
	hp := hpTooHigh(fighterB)
	var snap physics.Snapshot
	snap.Reset(0, 0)
	snap.Objects = append(snap.Objects, hp)
	pkt, err := liar.w.AppendSnapshot([]byte{KindState, wireVersion, 0, 0, 0, 0}, &snap) // no claims, inputs or hits
	if err != nil {
		t.Fatal(err)
	}
	if err := a.r.HandlePacket(pkt, 0); !errors.Is(err, physics.ErrOutOfRange) {
		t.Errorf("HandlePacket of a fighter with HP 500 of 100: %v, want ErrOutOfRange", err)
	}
	if s := a.r.Stats(); s.Invalid != 1 || s.Applied != 0 || a.w.Fighter(fighterB).HP() != 100 {
		t.Errorf("invalid %d applied %d HP %d; want 1, 0, 100", s.Invalid, s.Applied, a.w.Fighter(fighterB).HP())
	}
}

func TestReplicatorBadPackets(t *testing.T) {
	a := newPeer(t, peerA, peerB, nil)
	b := newPeer(t, peerB, peerA, nil)
	good := b.tick(t, 0)
	snap := good[4:] // kind, version, round 0, claim count 0, then the inputs, hits and the snapshot
	if good[4] != 1 || good[5] != byte(fighterB) || good[7] != 0 {
		t.Fatalf("B's packet % x does not carry its fighter's input and no hits", good[:8])
	}
	body := good[8:] // the snapshot alone
	inputsPkt := func(entries ...byte) []byte {
		return append(append(append([]byte{KindState, wireVersion, 0, 0}, entries...), 0), body...)
	}
	hitsPkt := func(entries ...byte) []byte {
		return append(append([]byte{KindState, wireVersion, 0, 0, 0}, entries...), body...)
	}
	report := func(mutate func(h *hitReport)) []byte {
		h := hitReport{attacker: fighterB, victim: fighterA, seq: 1, strike: physics.PartLowerArmR, part: physics.PartHead, impulse: 3}
		if mutate != nil {
			mutate(&h)
		}
		return appendReport(nil, &h, 0)
	}

	claimsPkt := func(n int, id, epoch uint64) []byte {
		p := []byte{KindState, wireVersion, 0}
		p = binary.AppendUvarint(p, uint64(n))
		for range n {
			p = binary.AppendUvarint(p, id)
			p = binary.AppendUvarint(p, epoch)
		}
		return append(p, snap...)
	}
	cases := map[string][]byte{
		"empty":           {},
		"wrong kind":      append([]byte{0x00}, good[1:]...),
		"truncated claim": {KindState, wireVersion, 0, 1, 3},
		"version 2":       append([]byte{KindState}, good[2:]...),
		"no version":      {KindState},
		"too many hits":   hitsPkt(maxReports + 1),
		"truncated hit":   hitsPkt(append([]byte{1}, report(nil)[:5]...)...),
		"hit victim 0":    hitsPkt(append([]byte{1}, report(func(h *hitReport) { h.victim = 0 })...)...),
		"hit no strike":   hitsPkt(append([]byte{1}, report(func(h *hitReport) { h.strike = physics.PartHead })...)...),
		"hit part 11":     hitsPkt(append([]byte{1}, report(func(h *hitReport) { h.part = 11 })...)...),
		"hit too old":     hitsPkt(append([]byte{1}, report(func(h *hitReport) { h.g = -us(maxReportAge) - 1 })...)...),
		"too many claims": claimsPkt(maxClaims+1, 3, 1),
		"claim id 0":      claimsPkt(1, 0, 1),
		"claim id > u16":  claimsPkt(1, 70000, 1),
		"overlong varint": append([]byte{KindState, wireVersion, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, snap...),
		"truncated snap":  good[:len(good)/2],
		"garbage snap":    append([]byte{KindState, wireVersion, 0, 0, 0, 0}, []byte("definitely not a snapshot")...),
		"trailing bytes":  append(append([]byte(nil), good...), 1, 2, 3),
		"truncated input": {KindState, wireVersion, 0, 0, 1, byte(fighterB)},
		"input id 0":      inputsPkt(1, 0, byte(physics.InputLeft)),
		"input ids twice": inputsPkt(2, byte(fighterB), 0, byte(fighterB), 0),
		"too many inputs": inputsPkt(maxInputs + 1),
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			before := a.r.Stats()
			err := a.r.HandlePacket(p, 0)
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: %v, want ErrMalformed", name, err)
				return
			}
			var pe *PacketError
			if !errors.As(err, &pe) {
				t.Errorf("%s: %T is not a *PacketError", name, err)
			}
			s := a.r.Stats()
			if s.Malformed != before.Malformed+1 || s.Applied != before.Applied {
				t.Errorf("%s: malformed %d→%d applied %d→%d", name, before.Malformed, s.Malformed, before.Applied, s.Applied)
			}
		})
	}
	// The good packet still works afterwards, once; the duplicate is dropped.
	if err := a.r.HandlePacket(good, 0); err != nil {
		t.Fatalf("good packet after the bad ones: %v", err)
	}
	applied := a.r.Stats().Applied
	if err := a.r.HandlePacket(good, 0); err != nil || a.r.lastDrop != clocksync.Duplicate {
		t.Errorf("duplicate: %v, verdict %v, want no error and Duplicate", err, a.r.lastDrop)
	}
	// Too old: B's state from 0 arrives at A's game time 2 s.
	b2 := b.tick(t, tickUS)
	if err := a.r.HandlePacket(b2, 2_000_000); err != nil || a.r.lastDrop != clocksync.TooOld {
		t.Errorf("old state: %v, verdict %v, want no error and TooOld", err, a.r.lastDrop)
	}
	if got := a.r.Stats().Applied; got != applied {
		t.Errorf("dropped packets were applied: %d -> %d", applied, got)
	}
	if s := a.r.Stats(); s.Filter.Duplicate != 1 || s.Filter.TooOld != 1 {
		t.Errorf("filter counts %+v", s.Filter)
	}
}

// B's fighter walks into the crate A owns: B claims it, and after the
// claim crosses the network both peers agree B owns it.
func TestReplicatorTransfersPropOnTouch(t *testing.T) {
	a := newPeer(t, peerA, peerB, nil)
	b := newPeer(t, peerB, peerA, nil)
	var toA, toB []byte
	for i := range 300 {
		now := clocksync.GameTime(i) * tickUS
		b.w.Fighter(fighterB).SetInput(physics.InputRight) // toward the crate at x=5
		pa := a.tick(t, now, nilIfEmpty(toA)...)
		pb := b.tick(t, now, nilIfEmpty(toB)...)
		toA, toB = pb, pa
	}
	oa, ea := a.r.Owner(crate)
	ob, eb := b.r.Owner(crate)
	if oa != peerB || ob != peerB || ea != eb || ea == 0 {
		t.Fatalf("crate owner A:(%v,%d) B:(%v,%d), want both peer B with the same epoch", oa, ea, ob, eb)
	}
	if a.r.Mode(crate) != ModeRemote || b.r.Mode(crate) != ModeOwned {
		t.Errorf("modes A=%v B=%v", a.r.Mode(crate), b.r.Mode(crate))
	}
	if s := b.r.Stats(); s.Claims != 1 || s.ClaimsLost == 0 || s.Unauthorized != 0 {
		t.Errorf("B claimed %d times (want 1), refused %d stale states of A (want > 0), %d unauthorized (want 0)", s.Claims, s.ClaimsLost, s.Unauthorized)
	}
	// A now corrects the crate toward B's states.
	if a.r.Corrector(crate).Stats().Targets == 0 {
		t.Error("A never received the crate from B")
	}
	d := torso(a.w, crate).Sub(torso(b.w, crate)).Len()
	if d > 0.1 {
		t.Errorf("crate differs by %v m between peers", d)
	}
}

// Hits on a peer's own fighter are applied by that peer only (the victim's
// owner); the attacker's peer sees the hit but not the damage until the
// victim's state arrives.
func TestVictimOwnerAppliesDamage(t *testing.T) {
	a := newPeer(t, peerA, peerB, nil)
	b := newPeer(t, peerB, peerA, nil)
	var toA, toB []byte
	for i := range 600 {
		now := clocksync.GameTime(i) * tickUS
		// A walks to B and punches repeatedly.
		in := physics.InputRight
		if torso(a.w, fighterB).X-torso(a.w, fighterA).X < 1.0 {
			in = physics.InputPunch
			if i%20 >= 10 {
				in = 0
			}
		}
		a.w.Fighter(fighterA).SetInput(in)
		pa := a.tick(t, now, nilIfEmpty(toA)...)
		pb := b.tick(t, now, nilIfEmpty(toB)...)
		toA, toB = pb, pa
	}
	sa, sb := a.r.Stats(), b.r.Stats()
	if sb.HitsTaken == 0 || sb.Damage == 0 {
		t.Fatalf("B took no hits (A dealt %d in A's world); stats B %+v", sa.HitsDealt, sb)
	}
	if sa.HitsTaken != 0 || a.w.Fighter(fighterA).HP() != a.w.Fighter(fighterA).MaxHP() {
		t.Errorf("A's fighter lost HP without being hit")
	}
	// A learns B's HP from B's states.
	hpB := b.w.Fighter(fighterB).HP()
	if hpB == b.w.Fighter(fighterB).MaxHP() {
		t.Fatal("B's HP unchanged")
	}
	if got := a.w.Fighter(fighterB).HP(); got != hpB {
		t.Errorf("A sees B's HP %d, B has %d", got, hpB)
	}
}

// The per-tick calls allocate nothing of their own.
func TestReplicatorTickAllocatesNothing(t *testing.T) {
	a := newPeer(t, peerA, peerB, nil)
	b := newPeer(t, peerB, peerA, nil)
	now := clocksync.GameTime(0)
	var pkt []byte
	// Warm up buffers.
	for range 10 {
		now += tickUS
		pkt = b.tick(t, now)
		a.r.HandlePacket(pkt, now)
	}
	buf := make([]byte, 0, 2048)
	applied := a.r.Stats().Applied
	var errs int
	allocs := testing.AllocsPerRun(100, func() {
		now += tickUS
		buf, _ = b.r.AppendPacket(buf[:0], now)
		if a.r.HandlePacket(buf, now) != nil {
			errs++
		}
		_ = a.r.Stats()
	})
	if allocs != 0 {
		t.Errorf("AppendPacket+HandlePacket allocate %v times per tick", allocs)
	}
	// What was measured is the full path: every packet applied (B's
	// fighter and the crate A owns: one object per packet).
	if got := a.r.Stats().Applied - applied; errs != 0 || got != 101 {
		t.Errorf("%d errors, %d object states applied over 101 packets: not the path under test", errs, got)
	}
}

func TestReplicatorConfigErrors(t *testing.T) {
	w, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(w, 1, 1, Config{}); !errors.Is(err, ErrInvalidPeer) {
		t.Errorf("same peers: %v", err)
	}
	if _, err := New(w, 0, 2, Config{}); !errors.Is(err, ErrInvalidPeer) {
		t.Errorf("zero peer: %v", err)
	}
	if _, err := New(nil, 1, 2, Config{}); err == nil {
		t.Error("nil world accepted")
	}
	r, err := New(w, 1, 2, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Track(42, 1, false); !errors.Is(err, physics.ErrUnknownObject) {
		t.Errorf("Track of a missing object: %v", err)
	}
	if err := r.LocalOnly(42); !errors.Is(err, physics.ErrUnknownObject) {
		t.Errorf("LocalOnly of a missing object: %v", err)
	}
}

// An unusable divergence monitor (a negative or NaN critical gap counts
// every tick as critical) is refused by New, like a bad correction config.
func TestReplicatorRefusesBadDivergenceMonitor(t *testing.T) {
	w, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []correction.Monitor{{CriticalGap: -1}, {CriticalGap: math.NaN()}, {MaxRun: -1}} {
		t.Run(fmt.Sprintf("%+v", m), func(t *testing.T) {
			if _, err := New(w, 1, 2, Config{Divergence: m}); !errors.Is(err, correction.ErrInvalidConfig) {
				t.Errorf("New = %v, want correction.ErrInvalidConfig", err)
			}
		})
	}
}

// Each packet carries the sender's fighter's input (3 bytes), which reaches
// the receiver's copy of that fighter with its state, and only then.
func TestReplicatorCarriesInputs(t *testing.T) {
	a := newPeer(t, peerA, peerB, nil)
	b := newPeer(t, peerB, peerA, nil)
	b.w.Fighter(fighterB).SetInput(physics.InputLeft | physics.InputKick)
	p := b.tick(t, 0)
	if want := []byte{KindState, wireVersion, 0, 0, 1, byte(fighterB), byte(physics.InputLeft | physics.InputKick)}; !bytes.Equal(p[:7], want) {
		t.Fatalf("packet starts % x, want % x", p[:6], want)
	}
	a.tick(t, tickUS, p)
	if in := a.w.Fighter(fighterB).Input(); in != physics.InputLeft|physics.InputKick {
		t.Errorf("A's copy of B has input %v", in)
	}
}

// An input is judged with its fighter's state: an undefined bit, an input
// for an object that is no fighter, or one without its fighter's state in the
// packet is invalid, counted, and changes nothing; the packet's other states
// are still applied.
func TestReplicatorValidatesInputs(t *testing.T) {
	b := newPeer(t, peerB, peerA, nil)
	b.w.Fighter(fighterB).SetInput(physics.InputLeft)
	p := b.tick(t, 0)
	snap := p[7:] // after the kind, the version, round 0, no claims, one input
	forge := func(entries ...byte) []byte {
		return append(append([]byte{KindState, wireVersion, 0, 0}, entries...), snap...)
	}
	for _, c := range []struct {
		name    string
		pkt     []byte
		err     error
		applied uint64 // states applied
	}{
		{"undefined bit", forge(1, byte(fighterB), byte(physics.InputLeft)|0x80), physics.ErrOutOfRange, 0},
		{"no state for it", forge(1, byte(fighterA), byte(physics.InputJump)), errStrayInput, 1},
		{"after the states", forge(2, byte(fighterB), byte(physics.InputRight), 9, byte(physics.InputJump)), errStrayInput, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newPeer(t, peerA, peerB, nil)
			a.w.Fighter(fighterA).SetInput(physics.InputBlock)
			before := a.r.Stats()
			err := a.r.HandlePacket(c.pkt, tickUS)
			var se *physics.StateError
			if !errors.Is(err, c.err) || !errors.As(err, &se) || se.Field != "input" {
				t.Fatalf("HandlePacket = %v, want a *physics.StateError of the input wrapping %v", err, c.err)
			}
			s := a.r.Stats()
			if s.Invalid != before.Invalid+1 || s.Applied != before.Applied+c.applied {
				t.Errorf("invalid %d→%d, applied %d→%d, want one invalid and %d applied", before.Invalid, s.Invalid, before.Applied, s.Applied, c.applied)
			}
			if in := a.w.Fighter(fighterA).Input(); in != physics.InputBlock {
				t.Errorf("A's own fighter's input became %v", in)
			}
			if in := a.w.Fighter(fighterB).Input(); c.applied == 0 && in != 0 {
				t.Errorf("B's copy took the input %v of a refused state", in)
			}
		})
	}
	// An input for a prop: the prop's state is refused with it.
	a := newPeer(t, peerA, peerB, nil)
	crateState := physics.ObjectState{ID: crate, Bodies: a.w.Object(crate).ReadState(nil)}
	err := a.r.apply(a.r.lookup(crate), &crateState, 1, &input{id: crate, in: physics.InputLeft}, a.w.Tick(), 0)
	if !errors.Is(err, errStrayInput) || a.r.Mode(crate) != ModeOwned || a.r.Stats().Invalid != 1 {
		t.Errorf("a crate's state with an input: %v, mode %v, %d invalid; want refused, still A's", err, a.r.Mode(crate), a.r.Stats().Invalid)
	}
}

func following(c *Config) { c.Correction.Method = correction.MethodFollow }

// With a correction that follows (correction.MethodFollow) a remote fighter
// keeps gravity and follows its owner with its own muscles; with a method
// that does not follow, it is a weightless puppet.
func TestReplicatorSetsUpFollowing(t *testing.T) {
	for _, m := range []correction.Method{correction.MethodFollow, correction.MethodRagsync} {
		t.Run(m.String(), func(t *testing.T) {
			a := newPeer(t, peerA, peerB, func(c *Config) { c.Correction.Method = m })
			g := a.w.Object(fighterB).Body(0).M_gravityScale
			follows := m == correction.MethodFollow
			if o := a.r.lookup(fighterB); o.follow != follows || (g != 0) != follows {
				t.Errorf("B's copy following %v, gravity scale %v", o.follow, g)
			}
			if own := a.r.lookup(fighterA); own.follow || own.obj.Body(0).M_gravityScale == 0 {
				t.Errorf("A's own fighter following %v", own.follow)
			}
		})
	}
}

// A following copy whose owner goes quiet for longer than InputHold lets
// go of its controls and stands idle; the next state takes it up again.
// Until the owner goes quiet, the copy keeps the owner's input and action.
func TestReplicatorLetsGoWhenTheOwnerIsQuiet(t *testing.T) {
	a := newPeer(t, peerA, peerB, following)
	b := newPeer(t, peerB, peerA, following)
	b.w.Fighter(fighterB).SetInput(physics.InputLeft)
	var now clocksync.GameTime
	for range 30 {
		p := b.tick(t, now)
		now += tickUS
		a.tick(t, now, p)
	}
	copyB := a.w.Fighter(fighterB)
	if copyB.Input() != physics.InputLeft || copyB.Action() != physics.ActionWalk {
		t.Fatalf("B's copy: input %v, action %v, want walking left", copyB.Input(), copyB.Action())
	}
	hold := clocksync.GameTimeOf(correction.Config{Method: correction.MethodFollow}.WithDefaults().InputHold)
	quiet := now
	for now-quiet <= hold+tickUS {
		now += tickUS
		a.tick(t, now)
	}
	if copyB.Input() != 0 || copyB.Action() != physics.ActionIdle {
		t.Errorf("after %v µs of silence: input %v, action %v, want idle", now-quiet, copyB.Input(), copyB.Action())
	}
	p := b.tick(t, now)
	now += tickUS
	a.tick(t, now, p)
	if copyB.Input() != physics.InputLeft || copyB.Action() != physics.ActionWalk {
		t.Errorf("a new state did not take it up again: input %v, action %v", copyB.Input(), copyB.Action())
	}
}

// Shown is where a game draws a body: a remote body plus its correction's
// offset, an owned body as it is.
func TestReplicatorShown(t *testing.T) {
	a := newPeer(t, peerA, peerB, following)
	b := newPeer(t, peerB, peerA, following)
	var now clocksync.GameTime
	// B's fighter jumps half a metre from where A last saw it (as far as
	// the motion rules let it in a tick): A's copy is corrected hard, and
	// its drawn pose lags.
	p := b.tick(t, now)
	a.tick(t, now+tickUS, p)
	st := b.w.Object(fighterB).ReadState(nil)
	for i := range st {
		st[i].Pos.X -= 0.5
	}
	must(t, b.w.Object(fighterB).WriteState(st))
	now += 2 * tickUS
	a.tick(t, now, b.tick(t, now))
	dp, da := a.r.Corrector(fighterB).Offset(0)
	if dp.Len() < 0.05 {
		t.Fatalf("offset %v after a 0.5 m correction", dp)
	}
	pos, angle := a.w.Object(fighterB).Transform(0)
	if sp, sa := a.r.Shown(fighterB, 0); sp != pos.Add(dp) || sa != angle+da {
		t.Errorf("Shown = %v %v, want %v %v", sp, sa, pos.Add(dp), angle+da)
	}
	if sp, _ := a.r.Shown(fighterA, 3); sp != torsoOf(a.w, fighterA, 3) {
		t.Errorf("an owned body is not shown where it is")
	}
	if sp, sa := a.r.Shown(99, 0); sp != (physics.Vec2{}) || sa != 0 {
		t.Errorf("Shown of an unknown object: %v %v", sp, sa)
	}
}

func torsoOf(w *physics.World, id physics.ObjectID, i int) physics.Vec2 {
	pos, _ := w.Object(id).Transform(i)
	return pos
}

// Through an outage, both screens agree on the hits: a hit on a copy whose
// newest state is still young enough to be judged (an outage shorter than
// MaxDelay) is reported and, once the link is back, confirmed by the
// victim's owner; on a copy older than that (a guess, whose hits the victim
// would judge stale) no hit lands on the attacker's screen at all, and the
// copy's hits are back on with the first state after the outage.
func TestHitsThroughAnOutage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		outage int // ticks without packets either way
		punch  int // tick of the outage A punches at
		hit    bool
	}{
		{"short", 20, 2, true},   // 333 ms: A's newest state of B is at most 367 ms old
		{"long", 180, 40, false}, // 3 s: A punches a copy 700 ms stale
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newPeer(t, peerA, peerB, following)
			b := newPeer(t, peerB, peerA, following)
			var now clocksync.GameTime
			var toA, toB []byte
			tick := func(link bool, in physics.Input) (hitsA int) {
				a.w.Fighter(fighterA).SetInput(in)
				pa := a.tick(t, now, nilIfEmpty(toA)...)
				hitsA = len(a.w.Hits())
				pb := b.tick(t, now, nilIfEmpty(toB)...)
				toA, toB = nil, nil
				if link {
					toA, toB = pb, pa
				}
				now += tickUS
				return hitsA
			}
			// A walks up to B (B stands still), on a good link.
			for i := 0; torso(a.w, fighterB).X-torso(a.w, fighterA).X > 0.8; i++ {
				if i > 600 {
					t.Fatal("A never reached B")
				}
				tick(true, physics.InputRight)
			}
			for range 30 {
				tick(true, 0)
			}
			copyB := a.w.Fighter(fighterB)
			dealt := a.r.Stats().HitsDealt
			seen := 0
			for i := range tc.outage {
				in := physics.Input(0)
				if i == tc.punch {
					in = physics.InputPunch
				}
				seen += tick(false, in)
				// A's newest state of B is i+1 ticks old; MaxDelay is 500 ms.
				if guess := clocksync.GameTime(i+1)*tickUS > 500_000; copyB.HitsEnabled() == guess {
					t.Fatalf("outage tick %d: B's copy's hits on = %v", i, copyB.HitsEnabled())
				}
			}
			for range 60 {
				tick(true, 0)
			}
			if !copyB.HitsEnabled() {
				t.Error("B's copy's hits still off after the outage")
			}
			st, sb := a.r.Stats(), b.r.Stats()
			applied := sb.Hits.Confirmed + sb.Hits.Detected
			if tc.hit {
				if seen != 1 || st.HitsDealt != dealt+1 || sb.Hits.Confirmed != 1 || applied != 1 {
					t.Errorf("A's screen saw %d hits (dealt %d→%d); B confirmed %d, applied %d; want 1 each",
						seen, dealt, st.HitsDealt, sb.Hits.Confirmed, applied)
				}
			} else if seen != 0 || st.HitsDealt != dealt || applied != 0 || sb.Hits.Stale != 0 {
				t.Errorf("A's screen saw %d hits on a guess (dealt %d→%d); B applied %d, stale %d; want none",
					seen, dealt, st.HitsDealt, applied, sb.Hits.Stale)
			}
			if n := sb.Refused.Total(); n != 0 {
				t.Errorf("B refused %d", n)
			}
		})
	}
}
