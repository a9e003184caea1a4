package ragsync

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/feed"
	"github.com/ragsync/ragsync/physics"
)

// fedFrame is one feed frame of a recorded match.
type fedFrame struct {
	side int
	t    clocksync.GameTime
	p    []byte
}

// recordedMatch is a two-Match match played by bots, with both players'
// feed frames of every tick and what each player counted itself.
type recordedMatch struct {
	frames []fedFrame
	// truth[side-1] is the torso of that side's fighter in its owner's
	// world at each tick's game time (truthT).
	truthT []clocksync.GameTime
	truth  [2][]physics.Vec2
	// What each player counted of its own fighter, by side.
	hp                           [2]int
	kos                          [2]int
	hitsTaken, hitsDealt, damage [2]uint64
	start                        clocksync.GameTime
	// Frame sizes, bytes.
	frameBytes, frameMin, frameMax int
	// Each side's round rule.
	rounds        [2]uint32
	roundStart    [2]clocksync.GameTime
	roundLength   time.Duration
	koAt, resetAt [2]clocksync.GameTime
	koNow         [2]bool
}

// playRecorded plays a bot match of n ticks between two Matches over a
// perfect in-memory link (newMatchPair), with a round rule like
// cmd/ragsim's (2 s after a knock-out both sides declare a new round), and
// records both players' feed frames.
func playRecorded(t testing.TB, n int, seed uint64) *recordedMatch {
	t.Helper()
	p := newMatchPair(t, nil)
	p.now = clocksync.GameTime(1_000_000) // a match some time into its clock
	bots := [2]*physics.Bot{physics.NewBot(seed), physics.NewBot(seed + 1)}
	rm := &recordedMatch{start: p.now, roundLength: 99 * time.Second, frameMin: math.MaxInt}
	ms := [2]*Match{p.a, p.b}
	for k := range ms {
		rm.rounds[k] = 1
		rm.roundStart[k] = p.now
	}
	wasKO := [2]bool{}
	for range n {
		for k, m := range ms {
			m.Fighter().SetInput(bots[k].Input(m.World(), m.Fighter().ID(), m.Rival().ID()))
		}
		now := p.now
		p.tick(t)
		for k, m := range ms {
			f := m.Fighter()
			ko := f.Action() == physics.ActionKO
			if ko && !wasKO[k] {
				rm.kos[k]++
			}
			wasKO[k] = ko
			// The round rule (cmd/ragsim's): a new round 2 s after a KO.
			const after = 2 * time.Second
			down := ko || m.Rival().HP() == 0
			if down && !rm.koNow[k] && now.Sub(rm.resetAt[k]) > after {
				rm.koNow[k], rm.koAt[k] = true, now
			}
			if rm.koNow[k] && now.Sub(rm.koAt[k]) >= after {
				m.ResetRound()
				rm.koNow[k], rm.resetAt[k] = false, now
				rm.rounds[k]++
				rm.roundStart[k] = now
			}
			fr, err := m.AppendFeedFrame(nil, FeedRound{Round: rm.rounds[k], Start: rm.roundStart[k], Length: rm.roundLength})
			if err != nil {
				t.Fatalf("side %d: AppendFeedFrame: %v", k+1, err)
			}
			rm.frames = append(rm.frames, fedFrame{side: k + 1, t: now, p: fr})
			rm.frameBytes += len(fr)
			rm.frameMin, rm.frameMax = min(rm.frameMin, len(fr)), max(rm.frameMax, len(fr))
			torso, _ := f.Object().Transform(0)
			rm.truth[k] = append(rm.truth[k], torso)
		}
		rm.truthT = append(rm.truthT, now)
	}
	for k, m := range ms {
		st := m.Stats().Replicator
		rm.hp[k] = m.Fighter().HP()
		rm.hitsTaken[k], rm.hitsDealt[k], rm.damage[k] = st.HitsTaken, st.HitsDealt, st.Damage
	}
	return rm
}

// truthAt is side k's torso position at game time g, interpolated between
// ticks.
func (rm *recordedMatch) truthAt(k int, g clocksync.GameTime) (physics.Vec2, bool) {
	i, _ := slices.BinarySearch(rm.truthT, g)
	if i == 0 || i >= len(rm.truthT) {
		return physics.Vec2{}, false
	}
	t0, t1 := rm.truthT[i-1], rm.truthT[i]
	a := float64(g-t0) / float64(t1-t0)
	p, q := rm.truth[k][i-1], rm.truth[k][i]
	return physics.Vec2{X: p.X + (q.X-p.X)*a, Y: p.Y + (q.Y-p.Y)*a}, true
}

func newTestSpectator(t testing.TB) *Spectator {
	t.Helper()
	s, err := NewSpectator(newTestWorld(t), SpectatorConfig{Fighters: [2]physics.ObjectID{idA, idB}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A spectator fed through a jittery, lossy, duplicating, reordering feed
// shows both fighters where their owners had them, moving smoothly, on its
// own clock (unrelated to the game clock).
func TestSpectatorInterpolatesThroughJitterAndLoss(t *testing.T) {
	rm := playRecorded(t, 600, 7)
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // the spectator's clock at game time 0
	type arrival struct {
		at time.Time
		p  []byte
	}
	var feedIn []arrival
	lost, dup := 0, 0
	for _, f := range rm.frames {
		if rng.Float64() < 0.05 {
			lost++
			continue
		}
		// 40 ms of latency plus up to 60 ms of jitter: frames overtake each other.
		at := base.Add(f.t.Duration() + 40*time.Millisecond + time.Duration(rng.Int64N(int64(60*time.Millisecond))))
		feedIn = append(feedIn, arrival{at, f.p})
		if rng.Float64() < 0.03 {
			dup++
			feedIn = append(feedIn, arrival{at.Add(time.Duration(rng.Int64N(int64(30 * time.Millisecond)))), f.p})
		}
	}
	slices.SortStableFunc(feedIn, func(a, b arrival) int { return a.at.Compare(b.at) })
	s := newTestSpectator(t)
	var (
		prevT       clocksync.GameTime
		views       int
		sumErr      float64
		maxErr      float64
		minStep     = time.Hour
		maxStep     time.Duration
		heldAtStart uint64
	)
	next := 0
	now := base.Add(rm.start.Duration())
	end := base.Add(rm.truthT[len(rm.truthT)-1].Duration() + 100*time.Millisecond)
	for ; now.Before(end); now = now.Add(time.Second / 60) {
		for next < len(feedIn) && !feedIn[next].at.After(now) {
			if err := s.Push(feedIn[next].p, feedIn[next].at); err != nil {
				t.Fatalf("frame %d: %v", next, err)
			}
			next++
		}
		v := s.View(now)
		if !v.Seen[0] || !v.Seen[1] {
			continue
		}
		views++
		if views == 30 { // half a second to fill the buffer and settle the clock
			heldAtStart = v.Held
		}
		if views > 30 {
			step := v.Time.Sub(prevT)
			minStep, maxStep = min(minStep, step), max(maxStep, step)
			for k, id := range []physics.ObjectID{idA, idB} {
				want, ok := rm.truthAt(k, v.Time)
				pose := s.Pose(id)
				if !ok || pose == nil {
					t.Fatalf("view %d at %v: no truth (%v) or no pose of %v", views, v.Time, ok, id)
				}
				e := math.Hypot(pose[0].Pos.X-want.X, pose[0].Pos.Y-want.Y)
				sumErr += e
				maxErr = max(maxErr, e)
			}
		}
		prevT = v.Time
	}
	v := s.View(now)
	mean := sumErr / float64(2*(views-30))
	t.Logf("%d frames (%d lost, %d duplicated), %d views: torso error mean %.2f mm, max %.1f mm; view steps %v..%v; held %d; counters %+v",
		len(rm.frames), lost, dup, views, 1000*mean, 1000*maxErr, minStep, maxStep, v.Held, struct{ Frames, Duplicates, Late, Rejected uint64 }{v.Frames, v.Duplicates, v.Late, v.Rejected})
	if views < 500 {
		t.Fatalf("only %d views with both fighters", views)
	}
	if mean > 0.005 || maxErr > 0.05 {
		t.Errorf("torso error mean %.1f mm, max %.1f mm: want ≤ 5 and ≤ 50", 1000*mean, 1000*maxErr)
	}
	// Smooth: the shown time advances every view by one frame's time,
	// within the clock's 5 % slew.
	tick := time.Second / 60
	if minStep < tick*94/100 || maxStep > tick*106/100 {
		t.Errorf("view time steps %v..%v, want within 5%% of %v", minStep, maxStep, tick)
	}
	if v.Held != heldAtStart {
		t.Errorf("the view ran dry %d times after it settled (jitter 60 ms < delay 120 ms)", v.Held-heldAtStart)
	}
	if v.Duplicates == 0 || v.Rejected != 0 {
		t.Errorf("duplicates %d (want > 0), rejected %d", v.Duplicates, v.Rejected)
	}
	if v.Frames+v.Duplicates+v.Late != uint64(len(feedIn)) {
		t.Errorf("frames %d + duplicates %d + late %d != %d pushed", v.Frames, v.Duplicates, v.Late, len(feedIn))
	}
	// The prop's pose is shown too (side 1 starts with it).
	if s.Pose(idProp) == nil {
		t.Error("no pose of the prop")
	}
}

// Bad frames are refused with an error wrapping ErrBadFeedFrame that names
// the field and value, change nothing, and good frames still go through.
func TestSpectatorRejectsBadFrames(t *testing.T) {
	rm := playRecorded(t, 30, 1)
	good1, good2 := rm.frames[0].p, rm.frames[1].p
	w := newTestWorld(t)
	// A side-1 frame carrying side 2's fighter, and one lacking its own.
	var f feed.Frame
	if err := feed.Decode(good2, w, &f); err != nil {
		t.Fatal(err)
	}
	f.Side = 1
	wrongFighter, err := feed.Append(nil, w, &f)
	if err != nil {
		t.Fatal(err)
	}
	if err := feed.Decode(good1, w, &f); err != nil {
		t.Fatal(err)
	}
	f.Snapshot.Objects = slices.DeleteFunc(f.Snapshot.Objects, func(o physics.ObjectState) bool { return o.ID == idA })
	noFighter, err := feed.Append(nil, w, &f)
	if err != nil {
		t.Fatal(err)
	}
	// A frame from another arena.
	other, err := physics.NewWorld(physics.WorldConfig{Arena: physics.ArenaConfig{Width: 20}})
	if err != nil {
		t.Fatal(err)
	}
	other.AddFighter(idA, physics.FighterConfig{X: -0.5})
	other.AddFighter(idB, physics.FighterConfig{X: 0.5})
	other.AddCrate(idProp, physics.PropConfig{Pos: physics.V(3, 0.25)})
	if err := feed.Decode(good1, w, &f); err != nil {
		t.Fatal(err)
	}
	f.Claims = f.Claims[:0]
	f.Snapshot.Objects = f.Snapshot.Objects[:1]
	otherArena, err := feed.Append(nil, other, &f)
	if err != nil {
		t.Fatal(err)
	}
	// A frame 10 s ahead of the feed.
	if err := feed.Decode(good1, w, &f); err != nil {
		t.Fatal(err)
	}
	f.Snapshot.Time += clocksync.GameTimeOf(10 * time.Second)
	f.RoundStart = f.Snapshot.Time
	future, err := feed.Append(nil, w, &f)
	if err != nil {
		t.Fatal(err)
	}
	withByte := func(i int, b byte) []byte { p := bytes.Clone(good1); p[i] = b; return p }

	now := time.Unix(100, 0)
	s := newTestSpectator(t)
	if err := s.Push(good1, now); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		p     []byte
		field string
		cause error
	}{
		{"empty", nil, "header", nil},
		{"garbage", []byte("hello, spectators"), "kind", nil},
		{"truncated", good1[:len(good1)-3], "snapshot", nil},
		{"trailing", append(bytes.Clone(good1), 0), "snapshot", nil},
		{"version 2", withByte(1, 2), "version", nil},
		{"side 3", withByte(2, 3), "side", nil},
		{"other side's fighter", wrongFighter, "object", nil},
		{"no own fighter", noFighter, "side", nil},
		{"other arena", otherArena, "snapshot", physics.ErrConfigMismatch},
		{"10 s ahead", future, "time", nil},
		{"too long", make([]byte, feed.MaxSize+1), "size", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.View(now)
			err := s.Push(c.p, now)
			var fe *feed.Error
			if !errors.Is(err, ErrBadFeedFrame) || !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("got %v, want a feed error on field %q wrapping ErrBadFeedFrame", err, c.field)
			}
			if c.cause != nil && !errors.Is(err, c.cause) {
				t.Errorf("got %v, want it to wrap %v", err, c.cause)
			}
			after := s.View(now)
			if after.Rejected != before.Rejected+1 || after.Frames != before.Frames {
				t.Errorf("rejected %d → %d, frames %d → %d", before.Rejected, after.Rejected, before.Frames, after.Frames)
			}
		})
	}
	if err := s.Push(good2, now); err != nil {
		t.Fatalf("a good frame after bad ones: %v", err)
	}
}

// A feed whose clock jumps (a new match clock) is followed after a second
// of refused frames; frames older than what was shown are dropped as late.
func TestSpectatorResyncsAfterAJump(t *testing.T) {
	rm := playRecorded(t, 240, 3)
	w := newTestWorld(t)
	s := newTestSpectator(t)
	base := time.Unix(500, 0)
	// The first two seconds, on time.
	half := len(rm.frames) / 2
	var last SpectatorView
	for _, fr := range rm.frames[:half] {
		at := base.Add(fr.t.Duration())
		if err := s.Push(fr.p, at); err != nil {
			t.Fatal(err)
		}
		last = s.View(at)
	}
	// A late frame is dropped and counted.
	if err := s.Push(rm.frames[0].p, base.Add(rm.frames[half].t.Duration())); err != nil {
		t.Fatal(err)
	}
	if v := s.View(base.Add(rm.frames[half].t.Duration())); v.Late != last.Late+1 {
		t.Errorf("late %d, want %d", v.Late, last.Late+1)
	}
	// Then the same match, its clock an hour ahead.
	jump := clocksync.GameTimeOf(time.Hour)
	var f feed.Frame
	refused, accepted := 0, 0
	for _, fr := range rm.frames[half:] {
		if err := feed.Decode(fr.p, w, &f); err != nil {
			t.Fatal(err)
		}
		f.Snapshot.Time += jump
		f.RoundStart += jump
		p, err := feed.Append(nil, w, &f)
		if err != nil {
			t.Fatal(err)
		}
		at := base.Add(fr.t.Duration())
		if err := s.Push(p, at); err != nil {
			if accepted > 0 || !errors.Is(err, ErrBadFeedFrame) {
				t.Fatalf("after following the jump: %v", err)
			}
			refused++
		} else {
			accepted++
		}
		last = s.View(at)
	}
	if refused == 0 || accepted == 0 || refused > 2*61+2 {
		t.Fatalf("%d refused, %d accepted: want about a second of frames refused, then the rest followed", refused, accepted)
	}
	if last.Time < jump {
		t.Errorf("view at %v after the jump to %v", last.Time, jump)
	}
}

func TestNewSpectatorSetupErrors(t *testing.T) {
	w := newTestWorld(t)
	for _, c := range []struct {
		name  string
		world *physics.World
		cfg   SpectatorConfig
		field string
	}{
		{"nil world", nil, SpectatorConfig{Fighters: [2]physics.ObjectID{idA, idB}}, "world"},
		{"negative delay", w, SpectatorConfig{Fighters: [2]physics.ObjectID{idA, idB}, Delay: -1}, "Delay"},
		{"prop as fighter", w, SpectatorConfig{Fighters: [2]physics.ObjectID{idA, idProp}}, "Fighters[1]"},
		{"same fighter twice", w, SpectatorConfig{Fighters: [2]physics.ObjectID{idA, idA}}, "Fighters[1]"},
		{"no fighters", w, SpectatorConfig{}, "Fighters[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewSpectator(c.world, c.cfg)
			var se *SetupError
			if !errors.As(err, &se) || se.Field != c.field {
				t.Fatalf("got %v, want a *SetupError on %s", err, c.field)
			}
		})
	}
}

// AppendFeedFrame before the match started says so; after, building a
// frame, and a spectator's Push and View, allocate nothing once warm.
func TestFeedAllocatesNothing(t *testing.T) {
	p := newMatchPair(t, nil)
	if _, err := p.a.AppendFeedFrame(nil, FeedRound{}); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("before the first tick: %v, want ErrNotSynced", err)
	}
	for range 10 {
		p.tick(t)
	}
	buf := make([]byte, 0, 512)
	round := FeedRound{Round: 1, Start: p.now, Length: time.Minute}
	if n := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = p.a.AppendFeedFrame(buf[:0], round); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("AppendFeedFrame: %v allocations", n)
	}
	s := newTestSpectator(t)
	base := time.Unix(0, 0)
	fa, fb := make([]byte, 0, 512), make([]byte, 0, 512)
	step := func() {
		p.tick(t)
		var err error
		if fa, err = p.a.AppendFeedFrame(fa[:0], round); err != nil {
			t.Fatal(err)
		}
		if fb, err = p.b.AppendFeedFrame(fb[:0], round); err != nil {
			t.Fatal(err)
		}
		now := base.Add(p.now.Duration())
		if err := s.Push(fa, now); err != nil {
			t.Fatal(err)
		}
		if err := s.Push(fb, now); err != nil {
			t.Fatal(err)
		}
		s.View(now)
	}
	for range 200 { // fill the buffers
		step()
	}
	// Only the two peers' box2d steps allocate in step; measure around them.
	var frames [][2][]byte
	var times []time.Time
	for range 100 {
		p.tick(t)
		a, _ := p.a.AppendFeedFrame(nil, round)
		b, _ := p.b.AppendFeedFrame(nil, round)
		frames = append(frames, [2][]byte{a, b})
		times = append(times, base.Add(p.now.Duration()))
	}
	i := 0
	if n := testing.AllocsPerRun(99, func() {
		if err := s.Push(frames[i][0], times[i]); err != nil {
			t.Fatal(err)
		}
		if err := s.Push(frames[i][1], times[i]); err != nil {
			t.Fatal(err)
		}
		s.View(times[i])
		i++
	}); n != 0 {
		t.Errorf("Spectator Push+View: %v allocations", n)
	}
}

// A prop both sides send (around a transfer) is shown from the side whose
// state claims the newer epoch; on equal epochs, by package ownership's
// tie-break.
func TestSpectatorPropOwnership(t *testing.T) {
	rm := playRecorded(t, 90, 5)
	w := newTestWorld(t)
	const from = 40 // side 2 claims the crate from this tick on
	build := func(tieEpoch bool) *Spectator {
		s := newTestSpectator(t)
		var f1, f2 feed.Frame
		base := time.Unix(0, 0)
		for i := 0; i+1 < len(rm.frames); i += 2 {
			if err := feed.Decode(rm.frames[i].p, w, &f1); err != nil {
				t.Fatal(err)
			}
			if err := feed.Decode(rm.frames[i+1].p, w, &f2); err != nil {
				t.Fatal(err)
			}
			if i/2 >= from {
				crate := findObject(&f1, idProp)
				if crate == nil {
					t.Fatal("side 1's frame lacks the crate")
				}
				moved := physics.ObjectState{ID: idProp, Bodies: slices.Clone(crate.Bodies)}
				moved.Bodies[0].Pos.X += 1
				f2.Snapshot.Objects = append(f2.Snapshot.Objects, moved)
				f2.Claims = append(f2.Claims, feed.Claim{ID: idProp, Epoch: 1})
				if tieEpoch {
					f1.Claims[0].Epoch = 1
				}
			}
			now := base.Add(rm.frames[i].t.Duration())
			for _, f := range []*feed.Frame{&f1, &f2} {
				p, err := feed.Append(nil, w, f)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Push(p, now); err != nil {
					t.Fatal(err)
				}
			}
			s.View(now)
		}
		return s
	}
	crateX := func(s *Spectator, g clocksync.GameTime) float64 {
		// The truth of side 1's crate at g is in its frame of that tick.
		var f feed.Frame
		for _, fr := range rm.frames {
			if fr.side == 1 && fr.t == g {
				if err := feed.Decode(fr.p, w, &f); err != nil {
					t.Fatal(err)
				}
				return findObject(&f, idProp).Bodies[0].Pos.X
			}
		}
		t.Fatalf("no frame at %v", g)
		return 0
	}
	for _, tie := range []bool{false, true} {
		s := build(tie)
		v := s.View(time.Unix(0, 0).Add(rm.truthT[len(rm.truthT)-1].Duration()))
		// The view is 120 ms (7 ticks) behind the last frame: past the transfer.
		shown := s.Pose(idProp)[0].Pos.X
		tick := slices.Index(rm.truthT, v.Time)
		if tick < 0 {
			// Between ticks: compare with the earlier one, the crate barely moves.
			tick, _ = slices.BinarySearch(rm.truthT, v.Time)
			tick--
		}
		if tick < from+1 {
			t.Fatalf("view at tick %d, before the transfer at %d", tick, from)
		}
		want := crateX(s, rm.truthT[tick])
		if !tie {
			want++ // side 2's newer epoch wins
		}
		// Crate id 3 + epoch 1 is even: on a tie side 1 keeps it.
		if math.Abs(shown-want) > 0.01 {
			t.Errorf("tie %v: crate shown at x = %.3f, want %.3f", tie, shown, want)
		}
	}
}

// BenchmarkSpectator measures a spectator's work per tick of the match:
// both players' frames pushed, one view.
func BenchmarkSpectator(b *testing.B) {
	rm := playRecorded(b, 600, 9)
	base := time.Unix(0, 0)
	var s *Spectator
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := 2 * (i % (len(rm.frames) / 2))
		if k == 0 {
			s = newTestSpectator(b)
		}
		now := base.Add(rm.frames[k].t.Duration())
		s.Push(rm.frames[k].p, now)
		s.Push(rm.frames[k+1].p, now)
		s.View(now)
	}
}

// BenchmarkAppendFeedFrame measures building one player's frame.
func BenchmarkAppendFeedFrame(b *testing.B) {
	p := newMatchPair(b, nil)
	for range 30 {
		p.tick(b)
	}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf, _ = p.a.AppendFeedFrame(buf[:0], FeedRound{Round: 1})
	}
	b.ReportMetric(float64(len(buf)), "bytes/frame")
}

// Through a half-second blackout of the feed the view holds the last poses
// and never runs backwards; after it, the view catches up with the feed.
func TestSpectatorHoldsThroughABlackout(t *testing.T) {
	rm := playRecorded(t, 300, 13)
	s := newTestSpectator(t)
	base := time.Unix(1000, 0)
	g0 := rm.start
	blackFrom, blackTo := g0+clocksync.GameTimeOf(2*time.Second), g0+clocksync.GameTimeOf(2500*time.Millisecond)
	var prev SpectatorView
	var worst float64
	next := 0
	for tick, g := range rm.truthT {
		now := base.Add(g.Duration() + 30*time.Millisecond)
		for ; next < len(rm.frames) && rm.frames[next].t <= g; next++ {
			if f := rm.frames[next]; f.t < blackFrom || f.t >= blackTo {
				if err := s.Push(f.p, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		v := s.View(now)
		if tick > 0 && v.Time < prev.Time {
			t.Fatalf("tick %d: the view ran backwards from %v to %v", tick, prev.Time, v.Time)
		}
		if g > blackTo+clocksync.GameTimeOf(time.Second) && v.Seen[0] {
			want, ok := rm.truthAt(0, v.Time)
			if ok {
				pose := s.Pose(idA)
				worst = max(worst, math.Hypot(pose[0].Pos.X-want.X, pose[0].Pos.Y-want.Y))
			}
		}
		prev = v
	}
	if prev.Held == 0 {
		t.Error("the view never held through the blackout")
	}
	if worst > 0.02 {
		t.Errorf("a second after the blackout the torso is %.1f mm off", 1000*worst)
	}
	if lag := rm.truthT[len(rm.truthT)-1].Sub(prev.Time); lag > 200*time.Millisecond {
		t.Errorf("the view is %v behind the newest frame after the blackout", lag)
	}
	t.Logf("held %d views, late %d, worst error after %.2f mm", prev.Held, prev.Late, 1000*worst)
}
