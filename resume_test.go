package ragsync

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
)

// resumedLink is a link whose session took back a seat (p2p.Config.Resume).
type resumedLink struct{ *memLink }

func (resumedLink) Resumed() bool { return true }

const tickUs = clocksync.GameTime(1_000_000 / physics.TickRate)

// TestMatchResumesAfterCrash: side 2 crashes mid-match and comes back as a
// brand new Match on a new world; side 1 pauses meanwhile, then sends its
// snapshot, which side 2 adopts: the same HP, owners, positions, match
// time and game state.
func TestMatchResumesAfterCrash(t *testing.T) {
	cfg := testConfig()
	cfg.ResumeState = func(dst []byte) []byte { return append(dst, "round 3"...) }
	p := newMatchPair(t, &cfg)
	for i := range 240 {
		p.a.Fighter().SetInput([]physics.Input{physics.InputPunch, physics.InputRight, 0}[i/20%3])
		p.b.Fighter().SetInput([]physics.Input{physics.InputKick, physics.InputLeft, physics.InputPunch}[i/15%3])
		p.tick(t)
	}
	// Side 2's process dies: side 1 pauses for a long while (2 s).
	p.a.RivalAway()
	if st := p.a.Rival().State(); st.Phase != physics.PhaseNone {
		t.Errorf("the rival's fighter is frozen mid-attack (phase %v) while away", st.Phase)
	}
	paused := p.a.Stats().GameTime
	for range 120 {
		if err := p.a.Tick(); err != nil {
			t.Fatal(err)
		}
		p.now += tickUs
	}
	if got := p.a.Stats().GameTime; got != paused {
		t.Fatalf("match time ran while the rival was away: %v, paused at %v", got, paused)
	}
	if !p.a.res.pending() {
		t.Fatal("Resuming false while the rival is away")
	}
	rivalOnA := p.a.World().Object(idB)
	// The new sessions: another game clock (the returning process's).
	var now2 clocksync.GameTime = 7_000_000
	la, lb := newMemPair(&now2)
	if err := p.a.Rejoined(la); err != nil {
		t.Fatal(err)
	}
	var gotState []byte
	cfg2 := testConfig()
	cfg2.OnResume = func(s []byte) error { gotState = bytes.Clone(s); return nil }
	wb := newTestWorld(t)
	b, err := NewMatch(wb, resumedLink{lb}, cfg2)
	if err != nil {
		t.Fatal(err)
	}
	if !b.res.pending() {
		t.Fatal("a Match on a resumed session does not wait for the snapshot")
	}
	adopted := false
	for range 30 {
		if err := p.a.Tick(); err != nil && !errors.Is(err, ErrNotSynced) {
			t.Fatal(err)
		}
		err := b.Tick()
		switch {
		case errors.Is(err, ErrNotSynced):
		case err != nil:
			t.Fatal(err)
		case !adopted:
			adopted = true
			// Adopted this tick: compare with side 1's world, which
			// stepped once more since its snapshot.
			posB, _ := wb.Object(idB).Transform(0)
			posA, _ := rivalOnA.Transform(0)
			if d := posB.Sub(posA).Len(); d > 0.05 {
				t.Errorf("side 2's fighter is %.3f m from where side 1 last saw it", d)
			}
			for _, id := range []physics.ObjectID{idA, idB} {
				if hb, ha := wb.Fighter(id).HP(), p.a.World().Fighter(id).HP(); hb != ha {
					t.Errorf("fighter %v: HP %d after resume, %d on side 1", id, hb, ha)
				}
			}
			oa, ea := p.a.Replicator().Owner(idProp)
			ob, eb := b.Replicator().Owner(idProp)
			if oa != ob || ea != eb {
				t.Errorf("prop owner %v/%d after resume, %v/%d on side 1", ob, eb, oa, ea)
			}
			ta, tb := p.a.Stats().GameTime, b.Stats().GameTime
			if d := tb.Sub(ta); d < -2*physics.TickDuration || d > 2*physics.TickDuration {
				t.Errorf("match time %v after resume, side 1's %v", tb, ta)
			}
			if d := ta.Sub(paused); d < 0 || d > 3*physics.TickDuration {
				t.Errorf("side 1's match time went from %v to %v over the pause", paused, ta)
			}
		}
		now2 += tickUs
	}
	if !adopted {
		t.Fatal("side 2 never adopted the snapshot")
	}
	if string(gotState) != "round 3" {
		t.Errorf("game state %q, want %q", gotState, "round 3")
	}
	if p.a.res.sending {
		t.Error("side 1 still sends its snapshot after side 2 runs again")
	}
	if st := b.Stats(); st.Rejected != 0 {
		t.Errorf("side 2 rejected %d packets: %v", st.Rejected, st.LastError)
	}
	// Both run on: states flow both ways.
	before := p.a.Stats().Replicator.Applied
	for range 30 {
		for _, m := range []*Match{p.a, b} {
			if err := m.Tick(); err != nil {
				t.Fatal(err)
			}
		}
		now2 += tickUs
	}
	if p.a.Stats().Replicator.Applied == before {
		t.Error("side 1 applies no state of the returning side 2")
	}
}

// resumePacket returns a valid resume packet of a fresh match (side 1).
func resumePacket(t testing.TB) []byte {
	var now clocksync.GameTime = 1_000_000
	la, _ := newMemPair(&now)
	m := newTestMatch(t, newTestWorld(t), la, testConfig())
	pkt, err := m.appendResume(nil, now)
	if err != nil {
		t.Fatal(err)
	}
	return pkt
}

// TestResumeSnapshotRefused: damaged snapshots are refused with a typed
// error and change nothing; the match waits for a good one.
func TestResumeSnapshotRefused(t *testing.T) {
	good := resumePacket(t)
	if len(good) > 1200 {
		t.Fatalf("resume packet of %d bytes exceeds a session message", len(good))
	}
	t.Logf("resume packet: %d bytes", len(good))
	var now clocksync.GameTime = 2_000_000
	_, lb := newMemPair(&now)
	w := newTestWorld(t)
	m := newTestMatch(t, w, resumedLink{lb}, testConfig())
	before := w.Object(idA).ReadState(nil)
	bad := [][]byte{
		{kindResume},
		{kindResume, 9},
		good[:len(good)/2],
		append(bytes.Clone(good[:3]), 0xff, 0xff, 0xff),
	}
	owner := bytes.Clone(good)
	// The first object's owner byte: after kind, version, offset, app
	// length (0), the count and the id.
	_, n := binaryVarintLen(owner[2:])
	i := 2 + n + 1 + 1 + 1
	owner[i] = 7
	bad = append(bad, owner)
	for _, p := range bad {
		lb.inject(p)
	}
	if err := m.Tick(); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("Tick = %v, want ErrNotSynced while waiting", err)
	}
	st := m.Stats()
	if st.Rejected != uint64(len(bad)) {
		t.Errorf("rejected %d of %d bad snapshots", st.Rejected, len(bad))
	}
	var pe *ownership.PacketError
	if !errors.As(st.LastError, &pe) || !errors.Is(st.LastError, ownership.ErrBadResume) {
		t.Errorf("last error %v: want a *ownership.PacketError wrapping ErrBadResume", st.LastError)
	}
	if after := w.Object(idA).ReadState(nil); !equalStates(before, after) {
		t.Error("a refused snapshot moved a fighter")
	}
	lb.inject(good)
	if err := m.Tick(); err != nil {
		t.Fatalf("Tick after a good snapshot: %v", err)
	}
}

func binaryVarintLen(p []byte) (int64, int) {
	var v int64
	for i, b := range p {
		if b < 0x80 {
			return v, i + 1
		}
	}
	return v, 0
}

func equalStates(a, b []physics.BodyState) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzResumeSnapshot: no resume packet crashes a waiting match, and one
// that is refused changes nothing.
func FuzzResumeSnapshot(f *testing.F) {
	good := resumePacket(f)
	f.Add(good[1:])
	f.Add(good[1 : len(good)-3])
	f.Add([]byte{kindResume, resumeVersion, 0, 0, 3})
	w := newTestWorld(f)
	var now clocksync.GameTime = 2_000_000
	_, lb := newMemPair(&now)
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := NewMatch(w, resumedLink{lb}, testConfig())
		if err != nil {
			t.Fatal(err)
		}
		before := w.Object(idA).ReadState(nil)
		p = append([]byte{kindResume}, p...)
		if err := m.adoptResume(p); err != nil {
			if after := w.Object(idA).ReadState(nil); !equalStates(before, after) {
				t.Fatalf("refused (%v) but changed the world", err)
			}
		}
	})
}
