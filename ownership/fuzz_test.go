package ownership

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/physics"
)

// FuzzHandlePacket feeds arbitrary packets from the rival to a replicator
// with a real world. It must never panic; a packet is either refused whole
// (a *PacketError wrapping ErrMalformed, nothing applied), dropped by the
// timestamp filter (no error, nothing applied), or judged object by object
// (an *AuthorityError or a *physics.StateError for the refused ones, a
// fighter's input judged with its state). The rival can never take or move
// this peer's own fighter, the claim and input lists round-trip, and after the tick's correction and step every body is
// still finite: nothing bad reached box2d.
func FuzzHandlePacket(f *testing.F) {
	a := newPeer(f, peerA, peerB, nil)
	b := newPeer(f, peerB, peerA, nil)
	// Seeds: B's real packets, one while B holds a claim on the crate.
	var now clocksync.GameTime
	for i := range 20 {
		now = clocksync.GameTime(i) * tickUS
		b.w.Fighter(fighterB).SetInput(physics.InputRight | physics.InputPunch)
		f.Add(b.tick(f, now))
	}
	if !b.r.reg.claim(crate, b.w.Tick()) {
		f.Fatal("B could not claim the crate")
	}
	b.r.setMode(b.r.lookup(crate), ModeOwned)
	now += tickUS
	claimed := b.tick(f, now)
	f.Add(claimed)
	v := wireVersion
	f.Add(append([]byte{KindState, v, 0, 2, 3, 1, 3, 2}, claimed[6:]...))             // the crate claimed twice
	f.Add(append([]byte{KindState, v, 0, 1, 1, 1}, claimed[6:]...))                   // a claim on a fighter
	f.Add(append([]byte{KindState, v, 0, 0, 1, 2, 0x40}, claimed[6+3:]...))           // an undefined input bit
	f.Add(append(append([]byte(nil), claimed[:len(claimed)-1]...), 0xFF))             // a damaged last byte
	f.Add(binary.AppendUvarint([]byte{KindState, v, 0}, maxClaims+1))                 // too many claims
	f.Add([]byte{KindState, v, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}) // overlong id
	f.Add(append([]byte{KindState, v, 7}, claimed[3:]...))                            // a round this peer has not declared
	// Hit reports: one that B's fighter could have landed, one far from
	// A's fighter, and one of an attack B never started.
	plain := b.tick(f, now+tickUS) // no claims, B's input, no hits
	for _, h := range []hitReport{
		{attacker: fighterB, victim: fighterA, seq: 1, strike: physics.PartLowerArmR, part: physics.PartTorso, impulse: 4, limb: physics.Pose{Pos: physics.V(-1.2, 1.1)}},
		{attacker: fighterB, victim: fighterA, seq: 2, strike: physics.PartLowerLegR, part: physics.PartHead, impulse: 30, limb: physics.Pose{Pos: physics.V(5, 1)}},
		{attacker: fighterA, victim: fighterB, seq: 3, strike: physics.PartLowerArmL, part: physics.PartHead, impulse: 1},
	} {
		p := append([]byte(nil), plain[:7]...)
		p = append(p, 1)
		p = appendReport(p, &h, 0)
		f.Add(append(p, plain[8:]...))
	}

	buf := make([]byte, 0, 2048)
	f.Fuzz(func(t *testing.T, p []byte) {
		// Every input is judged against the same clock and a fresh filter,
		// so the fuzzer reaches the per-object checks.
		a.r.filter = clocksync.Filter{MaxDelay: a.r.cfg.MaxDelay}
		before := a.r.Stats()
		mineBefore := a.w.Object(fighterA).Bodies()[0].M_xf.P
		err := a.r.HandlePacket(p, now)
		after := a.r.Stats()

		var pe *PacketError
		var ae *AuthorityError
		var se *physics.StateError
		switch {
		case err == nil:
		case errors.Is(err, ErrMalformed):
			if !errors.As(err, &pe) {
				t.Fatalf("malformed packet error %T is not a *PacketError: %v", err, err)
			}
			if after.Malformed != before.Malformed+1 || after.Applied != before.Applied {
				t.Fatalf("malformed packet: malformed %d→%d, applied %d→%d", before.Malformed, after.Malformed, before.Applied, after.Applied)
			}
		case errors.As(err, &ae):
			if ae.Sender != peerB {
				t.Fatalf("authority error names sender %v", ae.Sender)
			}
		case errors.As(err, &se):
		case errors.As(err, new(*RefusedError)):
		default:
			t.Fatalf("untyped error %T: %v", err, err)
		}
		if err == nil && a.r.lastDrop != clocksync.Accepted && after.Applied != before.Applied {
			t.Fatalf("a packet dropped by the filter (%v) was applied", a.r.lastDrop)
		}
		if err != nil && pe == nil && after.Malformed != before.Malformed {
			t.Fatalf("a parsed packet counted as malformed")
		}
		if pe == nil {
			// The claim and input lists round-trip.
			h, body, perr := a.r.parseHeader(p)
			if perr != nil {
				t.Fatalf("parseHeader refuses a packet HandlePacket parsed: %v", perr)
			}
			q := binary.AppendUvarint(binary.AppendUvarint([]byte{KindState, wireVersion}, uint64(h.round)), uint64(len(h.claims)))
			for _, c := range h.claims {
				q = binary.AppendUvarint(q, uint64(c.id))
				q = binary.AppendUvarint(q, uint64(c.epoch))
			}
			q = binary.AppendUvarint(q, uint64(len(h.inputs)))
			for _, in := range h.inputs {
				if err == nil && a.r.lastDrop == clocksync.Accepted && in.in&^physics.InputMask != 0 && a.w.Fighter(in.id) != nil {
					t.Fatalf("a fighter's input %#x with undefined bits passed", in.in)
				}
				q = binary.AppendUvarint(q, uint64(in.id))
				q = append(q, byte(in.in))
			}
			q = binary.AppendUvarint(q, uint64(len(h.reports)))
			wantC, wantI, wantH := slices.Clone(h.claims), slices.Clone(h.inputs), slices.Clone(h.reports)
			for i := range wantH {
				q = appendReport(q, &wantH[i], 0) // parsed times are minus the age
			}
			q = append(q, body...)
			got, body2, perr := a.r.parseHeader(q)
			if perr != nil || !slices.Equal(got.claims, wantC) || !slices.Equal(got.inputs, wantI) || !slices.Equal(got.reports, wantH) || !bytes.Equal(body, body2) {
				t.Fatalf("claims, inputs and hits do not round-trip: %v %v %v %v / %v (%v)", wantC, wantI, wantH, body, got, perr)
			}
		}

		// The rival never owns or moves this peer's fighter.
		if a.r.Mode(fighterA) != ModeOwned || a.r.Corrector(fighterA).HasTarget() {
			t.Fatalf("the rival's packet took over A's own fighter")
		}
		if a.w.Object(fighterA).Bodies()[0].M_xf.P != mineBefore {
			t.Fatalf("HandlePacket moved A's own fighter")
		}

		a.r.BeforeStep(now)
		a.w.Step()
		a.r.AfterStep()
		for _, o := range a.w.Objects() {
			for i, bd := range o.Bodies() {
				v := []float64{bd.M_xf.P.X, bd.M_xf.P.Y, bd.M_sweep.A, bd.M_linearVelocity.X, bd.M_linearVelocity.Y, bd.M_angularVelocity}
				for _, x := range v {
					if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1e6 {
						t.Fatalf("%v body %d has state %v after the packet % x", o.ID(), i, v, p)
					}
				}
			}
		}
		var aerr error
		if buf, aerr = a.r.AppendPacket(buf[:0], now); aerr != nil {
			t.Fatalf("A cannot encode its own states any more: %v", aerr)
		}
	})
}
