package ragsync

import (
	"bytes"
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/replay"
	"github.com/ragsync/ragsync/physics"
)

// A match recorded to a replay file (both players' feed frames) and
// replayed through a Spectator ends with the HP, KOs and hits the players
// counted themselves; a minute of match fits in 1 MB.
func TestReplayRoundTrip(t *testing.T) {
	ticks := 60 * physics.TickRate // a 60 s match
	if testing.Short() {
		ticks = 20 * physics.TickRate
	}
	rm := playRecorded(t, ticks, 11)
	var file bytes.Buffer
	w, err := replay.NewWriter(&file, replay.Header{
		Fighters: [2]physics.ObjectID{idA, idB}, Props: []physics.ObjectID{idProp},
		Start: rm.start, Game: []byte("test arena v1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rm.frames {
		if err := w.Append(f.t, f.p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	minutes := float64(ticks) / physics.TickRate / 60
	perMin := float64(file.Len()) / minutes
	t.Logf("%d s match: %d frames, %d bytes (frames %d..%d bytes, mean %.1f): %.0f bytes per minute; players: HP %v, KOs %v, hits taken %v, dealt %v, damage %v",
		ticks/physics.TickRate, len(rm.frames), file.Len(), rm.frameMin, rm.frameMax,
		float64(rm.frameBytes)/float64(len(rm.frames)), perMin, rm.hp, rm.kos, rm.hitsTaken, rm.hitsDealt, rm.damage)
	if perMin > 1<<20 {
		t.Errorf("%.0f bytes per minute, want at most 1 MB", perMin)
	}
	if (!testing.Short() && rm.kos[0]+rm.kos[1] == 0) || rm.hitsTaken[0]+rm.hitsTaken[1] == 0 {
		t.Errorf("no KO (%v) or no hit (%v): a match that shows nothing", rm.kos, rm.hitsTaken)
	}

	// Replay: validate the file, then play it headless through a
	// Spectator on a world built from the header's parameters.
	r, err := replay.NewReader(file.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	if h.Fighters != [2]physics.ObjectID{idA, idB} || len(h.Props) != 1 || string(h.Game) != "test arena v1" || r.Len() != len(rm.frames) || r.Truncated() != 0 {
		t.Fatalf("header %+v, %d frames (truncated %d), want the recorded %d", h, r.Len(), r.Truncated(), len(rm.frames))
	}
	world := newTestWorld(t)
	if err := r.Verify(world); err != nil {
		t.Fatal(err)
	}
	s, err := NewSpectator(world, SpectatorConfig{Fighters: h.Fighters})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Unix(0, 0)
	at := func(g clocksync.GameTime) time.Time { return base.Add(g.Duration()) }
	var rounds uint32
	for {
		stamp, frame, ok := r.Next()
		if !ok {
			break
		}
		if err := s.Push(frame, at(stamp)); err != nil {
			t.Fatal(err)
		}
		rounds = max(rounds, s.View(at(stamp)).Round)
	}
	v := s.View(at(r.End().Add(time.Second)))
	t.Logf("replayed: HP %d/%d, KOs %v, hits taken %v, dealt %v, damage %v, round %d, timer %v, frames %d (dup %d, late %d, rejected %d)",
		v.Fighters[0].HP, v.Fighters[1].HP, v.KOs, v.HitsTaken, v.HitsDealt, v.Damage, v.Round, v.Timer, v.Frames, v.Duplicates, v.Late, v.Rejected)
	if hp := [2]int{v.Fighters[0].HP, v.Fighters[1].HP}; hp != rm.hp {
		t.Errorf("final HP %v, players' %v", hp, rm.hp)
	}
	if v.KOs != rm.kos {
		t.Errorf("KOs %v, players' %v", v.KOs, rm.kos)
	}
	if v.HitsTaken != rm.hitsTaken || v.HitsDealt != rm.hitsDealt || v.Damage != rm.damage {
		t.Errorf("hits taken %v dealt %v damage %v, players' %v %v %v", v.HitsTaken, v.HitsDealt, v.Damage, rm.hitsTaken, rm.hitsDealt, rm.damage)
	}
	if v.Frames != uint64(len(rm.frames)) || v.Rejected != 0 || v.Late != 0 {
		t.Errorf("frames %d of %d, late %d, rejected %d", v.Frames, len(rm.frames), v.Late, v.Rejected)
	}
	if want := max(rm.rounds[0], rm.rounds[1]); v.Round != want || rounds != want {
		t.Errorf("round %d (max seen %d), want %d", v.Round, rounds, want)
	}

	// Seek: to the middle, a fresh Spectator shows the match from there.
	mid := rm.frames[len(rm.frames)/2].t
	r.Seek(mid - clocksync.GameTimeOf(time.Second))
	s2, err := NewSpectator(world, SpectatorConfig{Fighters: h.Fighters})
	if err != nil {
		t.Fatal(err)
	}
	for {
		stamp, frame, ok := r.Next()
		if !ok || stamp > mid {
			break
		}
		if err := s2.Push(frame, at(stamp)); err != nil {
			t.Fatal(err)
		}
		s2.View(at(stamp))
	}
	if v2 := s2.View(at(mid)); v2.Time < mid-clocksync.GameTimeOf(200*time.Millisecond) || v2.Time > mid || !v2.Seen[0] || !v2.Seen[1] {
		t.Errorf("after seeking to %v the view shows %v (seen %v)", mid, v2.Time, v2.Seen)
	}
}
