package ownership

import (
	"bytes"
	"encoding/binary"
	"errors"
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
	cfg := Config{Local: local, Remote: remote}
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := New(w, cfg)
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

func TestReplicatorBadPackets(t *testing.T) {
	a := newPeer(t, peerA, peerB, nil)
	b := newPeer(t, peerB, peerA, nil)
	good := b.tick(t, 0)
	snap := good[2:] // kind, claim count 0, then the inputs and the snapshot
	if good[2] != 1 || good[3] != byte(fighterB) {
		t.Fatalf("B's packet % x does not carry its fighter's input", good[:5])
	}
	body := good[5:] // the snapshot alone
	inputsPkt := func(entries ...byte) []byte {
		return append(append([]byte{KindState, 0}, entries...), body...)
	}

	claimsPkt := func(n int, id, epoch uint64) []byte {
		p := []byte{KindState}
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
		"truncated claim": {KindState, 1, 3},
		"too many claims": claimsPkt(MaxClaims+1, 3, 1),
		"claim id 0":      claimsPkt(1, 0, 1),
		"claim id > u16":  claimsPkt(1, 70000, 1),
		"overlong varint": append([]byte{KindState, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, snap...),
		"truncated snap":  good[:len(good)/2],
		"garbage snap":    append([]byte{KindState, 0}, []byte("definitely not a snapshot")...),
		"trailing bytes":  append(append([]byte(nil), good...), 1, 2, 3),
		"undefined input": inputsPkt(1, byte(fighterB), 0x80),
		"truncated input": {KindState, 0, 1, byte(fighterB)},
		"input id 0":      inputsPkt(1, 0, byte(physics.InputLeft)),
		"too many inputs": inputsPkt(MaxInputs + 1),
	}
	for name, p := range cases {
		before := a.r.Stats()
		err := a.r.HandlePacket(p, 0)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
			continue
		}
		var pe *PacketError
		if !errors.As(err, &pe) {
			t.Errorf("%s: %T is not a *PacketError", name, err)
		}
		s := a.r.Stats()
		if s.Malformed != before.Malformed+1 || s.Applied != before.Applied {
			t.Errorf("%s: malformed %d→%d applied %d→%d", name, before.Malformed, s.Malformed, before.Applied, s.Applied)
		}
	}
	// The good packet still works afterwards, once; the duplicate is dropped.
	if err := a.r.HandlePacket(good, 0); err != nil {
		t.Fatalf("good packet after the bad ones: %v", err)
	}
	applied := a.r.Stats().Applied
	if err := a.r.HandlePacket(good, 0); err != nil || a.r.LastVerdict() != clocksync.Duplicate {
		t.Errorf("duplicate: %v, verdict %v, want no error and Duplicate", err, a.r.LastVerdict())
	}
	// Too old: B's state from 0 arrives at A's game time 2 s.
	b2 := b.tick(t, tickUS)
	if err := a.r.HandlePacket(b2, 2_000_000); err != nil || a.r.LastVerdict() != clocksync.TooOld {
		t.Errorf("old state: %v, verdict %v, want no error and TooOld", err, a.r.LastVerdict())
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
	oa, ea := a.r.Registry().Owner(crate)
	ob, eb := b.r.Registry().Owner(crate)
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
	if _, err := New(w, Config{Local: 1, Remote: 1}); !errors.Is(err, ErrInvalidPeer) {
		t.Errorf("same peers: %v", err)
	}
	if _, err := New(nil, Config{Local: 1, Remote: 2}); err == nil {
		t.Error("nil world accepted")
	}
	r, err := New(w, Config{Local: 1, Remote: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Own(42); !errors.Is(err, ErrUnknownObject) {
		t.Errorf("Own of a missing object: %v", err)
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
		if _, err := New(w, Config{Local: 1, Remote: 2, Divergence: m}); !errors.Is(err, correction.ErrInvalidConfig) {
			t.Errorf("Divergence %+v: New = %v, want correction.ErrInvalidConfig", m, err)
		}
	}
}

// Each packet carries the sender's fighter's input (3 bytes), which reaches
// the receiver's copy of that fighter with its state, and only then.
func TestReplicatorCarriesInputs(t *testing.T) {
	a := newPeer(t, peerA, peerB, nil)
	b := newPeer(t, peerB, peerA, nil)
	b.w.Fighter(fighterB).SetInput(physics.InputLeft | physics.InputKick)
	p := b.tick(t, 0)
	if want := []byte{KindState, 0, 1, byte(fighterB), byte(physics.InputLeft | physics.InputKick)}; !bytes.Equal(p[:5], want) {
		t.Fatalf("packet starts % x, want % x", p[:5], want)
	}
	a.tick(t, tickUS, p)
	if in := a.w.Fighter(fighterB).Input(); in != physics.InputLeft|physics.InputKick {
		t.Errorf("A's copy of B has input %v", in)
	}
	// An input for a fighter whose state the packet does not carry (A's
	// own, here) is ignored.
	p2 := b.tick(t, tickUS)
	forged := append([]byte{KindState, 0, 1, byte(fighterA), byte(physics.InputJump)}, p2[5:]...)
	a.w.Fighter(fighterA).SetInput(physics.InputBlock)
	before := a.r.Stats().Applied
	if err := a.r.HandlePacket(forged, 2*tickUS); err != nil {
		t.Fatal(err)
	}
	if in := a.w.Fighter(fighterA).Input(); in != physics.InputBlock {
		t.Errorf("an input for A's own fighter from B was applied: %v", in)
	}
	if a.r.Stats().Applied != before+1 {
		t.Errorf("the forged packet's own state was not applied")
	}
}

func following(c *Config) { c.Correction.Method = correction.MethodFollow }

// With a correction that follows (correction.MethodFollow) a remote fighter
// keeps gravity and follows its owner with its own muscles; with a method
// that does not follow, it is a weightless puppet.
func TestReplicatorSetsUpFollowing(t *testing.T) {
	for _, m := range []correction.Method{correction.MethodFollow, correction.MethodRagsync} {
		a := newPeer(t, peerA, peerB, func(c *Config) { c.Correction.Method = m })
		f := a.w.Fighter(fighterB)
		g := f.Object().Body(0).M_gravityScale
		if m.Follows() != f.Following() || f.Controlled() || (g != 0) != m.Follows() {
			t.Errorf("%v: B's copy following %v, controlled %v, gravity scale %v", m, f.Following(), f.Controlled(), g)
		}
		if own := a.w.Fighter(fighterA); own.Following() || !own.Controlled() {
			t.Errorf("%v: A's own fighter following %v, controlled %v", m, own.Following(), own.Controlled())
		}
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
	hold := clocksync.GameTime(a.r.Corrector(fighterB).Config().InputHold)
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
	// B's fighter jumps far from where A last saw it: A's copy is
	// corrected hard, and its drawn pose lags.
	p := b.tick(t, now)
	a.tick(t, now+tickUS, p)
	st := b.w.Object(fighterB).ReadState(nil)
	for i := range st {
		st[i].Pos.X -= 1
	}
	must(t, b.w.Object(fighterB).WriteState(st))
	now += 2 * tickUS
	a.tick(t, now, b.tick(t, now))
	dp, da := a.r.Corrector(fighterB).Offset(0)
	if dp.Len() < 0.05 {
		t.Fatalf("offset %v after a 1 m correction", dp)
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
