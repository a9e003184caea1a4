package ragsync

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/angle"
	"github.com/ragsync/ragsync/internal/feed"
	"github.com/ragsync/ragsync/physics"
)

// Spectator defaults and limits.
const (
	defaultSpectatorDelay = 120 * time.Millisecond
	// spectatorBuffer is how many frames of each side a Spectator keeps
	// (about a second at 60 Hz).
	spectatorBuffer = 64
	// leadBucket × leadBuckets is the window over which the newest frames
	// set the playback clock.
	leadBucket  = 250 * time.Millisecond
	leadBuckets = 4
	// The playback clock slews toward the newest frames at most this
	// fraction faster or slower than real time, and jumps when it is off
	// by more than leadSnap.
	leadSlew = 0.05
	leadSnap = 250 * time.Millisecond
	// maxLead: a frame more than this ahead of the feed's newest is
	// refused; resyncAfter: when only refused or hopelessly late frames
	// came for this long, the feed has jumped (a new clock): follow it.
	maxLead     = time.Second
	resyncAfter = time.Second
	maxLag      = 2 * time.Second
	// maxKORecords bounds the KO list (one per knock-out).
	maxKORecords = 1024
)

// SpectatorConfig configures a Spectator. Fighters is required; every
// other field documents its zero-value default.
type SpectatorConfig struct {
	// Fighters are the match's fighters by side, as in MatchConfig:
	// side 1's frames must carry Fighters[0], side 2's Fighters[1].
	Fighters [2]physics.ObjectID
	// Delay is how far behind the newest frames the view runs, so that
	// it always has a frame on each side of the time it shows and moves
	// smoothly through jitter and the loss of a few frames. Zero: 120 ms.
	Delay time.Duration
}

// SpectatorView is what a Spectator shows at one moment (View). The poses
// are read with Spectator.Pose.
type SpectatorView struct {
	// Time is the game time shown: the feed's newest frames less the delay.
	Time clocksync.GameTime
	// Seen says whether each side's fighter (by side, like every array
	// below) has a state shown yet.
	Seen [2]bool
	// Fighters are the fighters' HP, action, facing and attack at Time.
	Fighters [2]physics.FighterState
	// Round, RoundStart and RoundLength are the game's round state at
	// Time (the higher round of the two sides' frames), and Timer what is
	// left of the round at Time (RoundLength before RoundStart, 0 after
	// its end or without a timer).
	Round       uint32
	RoundStart  clocksync.GameTime
	RoundLength time.Duration
	Timer       time.Duration
	// HitsTaken and Damage count the hits each fighter took and the damage
	// they did, as its owner applied them; HitsDealt the hits each fighter
	// landed as its owner's world saw them; KOs its knock-outs (an action
	// of physics.ActionKO after none), all up to Time.
	HitsTaken, HitsDealt, Damage [2]uint64
	KOs                          [2]int
	// Frames counts the frames accepted, Duplicates and Late those
	// dropped (a frame already had, or one older than what was already
	// shown), Rejected the bad ones (Push's errors), and Held the views
	// that had no frame after Time for some fighter (the feed ran dry:
	// the view held its last pose).
	Frames, Duplicates, Late, Rejected, Held uint64
}

// spectatorSide is one side's frames, oldest first.
type spectatorSide struct {
	frames    []*feed.Frame
	committed clocksync.GameTime // the newest frame shown (Time passed it)
	any       bool               // committed is set
	ko        bool               // the last committed frame showed a KO
}

// spectatorObject is the shown pose of one object.
type spectatorObject struct {
	id     physics.ObjectID
	obj    *physics.Object
	side   int // 1 or 2 for a fighter, 0 for any other object
	bodies []physics.BodyState
	shown  bool
}

// Spectator shows a match from the players' spectator feed frames
// (Match.AppendFeedFrame): fed with both players' frames as they arrive, in
// any order, duplicated or late (Push), it keeps about a second of them and
// shows both fighters and the props at a moment a little behind the
// newest frames (SpectatorConfig.Delay), interpolated between the frames on
// either side of it (snapshot interpolation), with HP, round, timer, hits
// and KOs (View, Pose). It draws nothing: a game renders the poses its own
// way, for example by writing them into a world it only draws
// (physics.Object.WriteState, physics.Fighter.SetRemoteState).
//
// The world given to NewSpectator decodes the frames: it must be built
// like the players' (the same arena and the same objects under the same
// ids); the Spectator never changes or steps it. Time is injected: Push and
// View take the spectator's own clock (now), which needs no relation to
// the players' game clock; the playback clock follows the newest frames.
// A replay plays the same way, with the recorded arrival times as now.
//
// A Spectator allocates nothing per frame once warm. It is not safe for
// concurrent use.
type Spectator struct {
	world *physics.World
	cfg   SpectatorConfig
	sides [2]spectatorSide
	spare *feed.Frame
	objs  []spectatorObject
	index map[physics.ObjectID]int
	view  SpectatorView
	free  []*feed.Frame           // frames to decode into
	kos   [2][]clocksync.GameTime // game times of the knock-outs

	origin     time.Time // the first now
	haveOrigin bool
	lead       clocksync.GameTime // playback clock = local µs + lead − delay
	haveLead   bool
	bucket     [leadBuckets]struct {
		n    int64 // local µs / leadBucket
		lead clocksync.GameTime
		set  bool
	}
	lastView     int64 // local µs of the last View
	viewed       bool
	lastAccepted int64 // local µs of the last accepted frame
}

// NewSpectator returns a spectator of a match in world (see Spectator).
// It returns a *SetupError for a nil world, a Fighters entry that is not a
// fighter of world (or twice the same), or a negative Delay.
func NewSpectator(world *physics.World, cfg SpectatorConfig) (*Spectator, error) {
	if world == nil {
		return nil, &SetupError{Field: "world", Err: errors.New("nil world")}
	}
	if cfg.Delay < 0 {
		return nil, &SetupError{Field: "Delay", Err: fmt.Errorf("%v is negative", cfg.Delay)}
	}
	if cfg.Delay == 0 {
		cfg.Delay = defaultSpectatorDelay
	}
	mc := MatchConfig{Fighters: cfg.Fighters}
	if err := checkObjects(world, &mc); err != nil {
		return nil, err
	}
	s := &Spectator{world: world, cfg: cfg, spare: new(feed.Frame), index: make(map[physics.ObjectID]int),
		free: make([]*feed.Frame, 0, 2*spectatorBuffer+1)}
	for _, o := range world.Objects() {
		so := spectatorObject{id: o.ID(), obj: o, bodies: make([]physics.BodyState, o.NumBodies())}
		for k, id := range cfg.Fighters {
			if id == o.ID() {
				so.side = k + 1
			}
		}
		s.index[o.ID()] = len(s.objs)
		s.objs = append(s.objs, so)
	}
	for k := range s.sides {
		s.sides[k].frames = make([]*feed.Frame, 0, spectatorBuffer)
		s.kos[k] = make([]clocksync.GameTime, 0, 16)
	}
	return s, nil
}

// Push gives the spectator one frame of the feed, which arrived at now
// (the spectator's clock). A duplicate, or a frame older than what the
// view already showed, is dropped and counted (SpectatorView.Duplicates,
// Late), not an error. A bad frame changes nothing and gets an error
// wrapping ErrBadFeedFrame that says which byte and field were wrong:
// a frame this world cannot decode or that fails validation (package
// physics' errors inside), a side's frame without its fighter or with the
// other side's, or a game time more than a second ahead of the feed's
// newest. p is not kept.
func (s *Spectator) Push(p []byte, now time.Time) error {
	l := s.local(now)
	f := s.spare
	if err := feed.Decode(p, s.world, f); err != nil {
		s.view.Rejected++
		return err
	}
	side := int(f.Side)
	if err := s.checkFighters(f, side); err != nil {
		s.view.Rejected++
		return err
	}
	sd := &s.sides[side-1]
	t := f.Time()
	stale := s.haveLead && l-s.lastAccepted > resyncAfter.Microseconds()
	switch {
	case s.haveLead && t > s.head(l)+clocksync.GameTimeOf(maxLead):
		if !stale {
			s.view.Rejected++
			return &feed.Error{Op: "decode", Field: "time", Value: int64(t),
				Err: fmt.Errorf("%v is over %v ahead of the feed (%v)", t, maxLead, s.head(l))}
		}
		s.resync()
	case sd.any && t <= sd.committed:
		if !stale || t > s.view.Time-clocksync.GameTimeOf(maxLag) {
			s.view.Late++
			return nil
		}
		s.resync()
	}
	i, found := slices.BinarySearchFunc(sd.frames, t, func(g *feed.Frame, t clocksync.GameTime) int { return cmpTime(g.Time(), t) })
	if found {
		s.view.Duplicates++
		return nil
	}
	if len(sd.frames) == spectatorBuffer {
		if i == 0 {
			s.view.Late++ // older than a full buffer
			return nil
		}
		s.free = append(s.free, sd.frames[0])
		copy(sd.frames, sd.frames[1:])
		sd.frames = sd.frames[:len(sd.frames)-1]
		i--
	}
	sd.frames = slices.Insert(sd.frames, i, f)
	s.spare = s.get()
	s.view.Frames++
	s.lastAccepted = l
	s.noteLead(t, l)
	return nil
}

func cmpTime(a, b clocksync.GameTime) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkFighters checks that a side's frame carries its fighter and not the
// other side's.
func (s *Spectator) checkFighters(f *feed.Frame, side int) error {
	own := false
	for i := range f.Snapshot.Objects {
		id := f.Snapshot.Objects[i].ID
		switch id {
		case s.cfg.Fighters[side-1]:
			own = true
		case s.cfg.Fighters[2-side]:
			return &feed.Error{Op: "decode", Field: "object", Value: int64(id),
				Err: fmt.Errorf("side %d's frame carries side %d's fighter %v", side, 3-side, id)}
		}
	}
	if !own {
		return &feed.Error{Op: "decode", Field: "side", Value: int64(side),
			Err: fmt.Errorf("side %d's frame lacks its fighter %v", side, s.cfg.Fighters[side-1])}
	}
	return nil
}

// local converts now to µs of the spectator's clock.
func (s *Spectator) local(now time.Time) int64 {
	if !s.haveOrigin {
		s.origin, s.haveOrigin = now, true
	}
	return now.Sub(s.origin).Microseconds()
}

// head is the feed's newest game time at local time l.
func (s *Spectator) head(l int64) clocksync.GameTime { return clocksync.GameTime(l) + s.lead }

// noteLead records that game time t arrived at local time l.
func (s *Spectator) noteLead(t clocksync.GameTime, l int64) {
	lead := t - clocksync.GameTime(l)
	n := l / leadBucket.Microseconds()
	b := &s.bucket[n%leadBuckets]
	if !b.set || b.n != n {
		b.n, b.lead, b.set = n, lead, true
	} else if lead > b.lead {
		b.lead = lead
	}
	if !s.haveLead {
		s.lead, s.haveLead = lead, true
	}
}

// targetLead is the largest lead of the last second's frames.
func (s *Spectator) targetLead(l int64) (clocksync.GameTime, bool) {
	n := l / leadBucket.Microseconds()
	var best clocksync.GameTime
	ok := false
	for i := range s.bucket {
		b := &s.bucket[i]
		if b.set && b.n > n-leadBuckets && b.n <= n && (!ok || b.lead > best) {
			best, ok = b.lead, true
		}
	}
	return best, ok
}

// resync forgets the frames and the playback clock (the knock-outs and
// counters stay): the feed jumped.
func (s *Spectator) resync() {
	for k := range s.sides {
		sd := &s.sides[k]
		for _, f := range sd.frames {
			s.pool(f)
		}
		sd.frames = sd.frames[:0]
		sd.any = false
	}
	s.haveLead, s.viewed = false, false
	for i := range s.bucket {
		s.bucket[i].set = false
	}
}

// pool keeps f for reuse.
func (s *Spectator) pool(f *feed.Frame) { s.free = append(s.free, f) }

// get returns a frame to decode into: a pooled one, or a new one (at most
// 2·spectatorBuffer+1 frames are ever made).
func (s *Spectator) get() *feed.Frame {
	if n := len(s.free); n > 0 {
		f := s.free[n-1]
		s.free = s.free[:n-1]
		return f
	}
	return new(feed.Frame)
}

// View moves the view to now (the spectator's clock, as given to Push) and
// returns it; Pose then gives each object's pose. The playback clock runs
// with now, steered smoothly (within 5 % of real time) to stay Delay behind
// the newest frames; when the feed runs dry it holds the last poses.
func (s *Spectator) View(now time.Time) SpectatorView {
	l := s.local(now)
	if !s.haveLead {
		return s.view
	}
	if target, ok := s.targetLead(l); ok {
		diff := target - s.lead
		step := clocksync.GameTime(0)
		if s.viewed {
			step = clocksync.GameTime(float64(max(l-s.lastView, 0)) * leadSlew)
		}
		switch {
		case !s.viewed || diff > clocksync.GameTimeOf(leadSnap) || diff < -clocksync.GameTimeOf(leadSnap):
			s.lead = target
		case diff > step:
			s.lead += step
		case diff < -step:
			s.lead -= step
		default:
			s.lead = target
		}
	}
	t := s.head(l) - clocksync.GameTimeOf(s.cfg.Delay)
	if s.viewed && t < s.view.Time && s.view.Time-t < clocksync.GameTimeOf(leadSnap) {
		t = s.view.Time // never run backwards by a slew step
	}
	s.lastView, s.viewed = l, true
	s.view.Time = t
	s.commit(t)
	s.show(t)
	return s.view
}

// commit passes the frames at or before t of each side: their KOs count,
// and the newest one sets the side's figures. Older frames are let go.
func (s *Spectator) commit(t clocksync.GameTime) {
	v := &s.view
	for k := range s.sides {
		sd := &s.sides[k]
		n := 0
		for n < len(sd.frames) && sd.frames[n].Time() <= t {
			f := sd.frames[n]
			if f.Time() > sd.committed || !sd.any {
				fs := s.fighterState(f, k)
				ko := fs.Action == physics.ActionKO
				if ko && !sd.ko && len(s.kos[k]) < maxKORecords {
					s.kos[k] = append(s.kos[k], f.Time())
				}
				sd.ko, sd.committed, sd.any = ko, f.Time(), true
			}
			n++
		}
		if n == 0 {
			continue
		}
		last := sd.frames[n-1]
		v.Seen[k] = true
		v.Fighters[k] = s.fighterState(last, k)
		v.HitsTaken[k], v.Damage[k], v.HitsDealt[k] = uint64(last.HitsTaken), uint64(last.Damage), uint64(last.HitsDealt)
		// Keep the newest frame at or before t (the view interpolates from it).
		if n > 1 {
			for _, f := range sd.frames[:n-1] {
				s.pool(f)
			}
			sd.frames = slices.Delete(sd.frames, 0, n-1)
		}
	}
	v.KOs[0], v.KOs[1] = len(s.kos[0]), len(s.kos[1])
	// The round: the higher of the two sides' newest shown frames.
	var rf *feed.Frame
	for k := range s.sides {
		if fr := s.shownFrame(k); fr != nil && (rf == nil || fr.Round > rf.Round) {
			rf = fr
		}
	}
	if rf != nil {
		v.Round, v.RoundStart, v.RoundLength = rf.Round, rf.RoundStart, rf.RoundLength
		v.Timer = 0
		if rf.RoundLength > 0 {
			v.Timer = min(max(rf.RoundStart.Add(rf.RoundLength).Sub(t), 0), rf.RoundLength)
		}
	}
}

// shownFrame is side k's newest frame at or before the view's time.
func (s *Spectator) shownFrame(k int) *feed.Frame {
	sd := &s.sides[k]
	if len(sd.frames) > 0 && sd.frames[0].Time() <= s.view.Time {
		return sd.frames[0]
	}
	return nil
}

// fighterState is side k's fighter's state in f.
func (s *Spectator) fighterState(f *feed.Frame, k int) physics.FighterState {
	if os := findObject(f, s.cfg.Fighters[k]); os != nil {
		return os.Fighter
	}
	return physics.FighterState{}
}

func findObject(f *feed.Frame, id physics.ObjectID) *physics.ObjectState {
	objs := f.Snapshot.Objects
	i, ok := slices.BinarySearchFunc(objs, id, func(o physics.ObjectState, id physics.ObjectID) int { return int(o.ID) - int(id) })
	if !ok {
		return nil
	}
	return &objs[i]
}

// show interpolates every object's pose at t.
func (s *Spectator) show(t clocksync.GameTime) {
	held := false
	for i := range s.objs {
		o := &s.objs[i]
		var a, b *physics.ObjectState
		var ta, tb clocksync.GameTime
		if o.side != 0 {
			a, ta, b, tb = bracket(s.sides[o.side-1].frames, o.id, t)
			if b == nil && a != nil {
				held = true
			}
		} else {
			a, ta, b, tb = s.propBracket(o.id, t)
		}
		switch {
		case a != nil && b != nil:
			alpha := float64(t-ta) / float64(tb-ta)
			lerpBodies(o.bodies, a.Bodies, b.Bodies, alpha)
		case a != nil:
			copy(o.bodies, a.Bodies)
		case b != nil && !o.shown:
			copy(o.bodies, b.Bodies) // it appears: show its first state
		default:
			continue
		}
		o.shown = true
	}
	if held {
		s.view.Held++
	}
}

// bracket finds the states of object id in frames (oldest first) at or
// before t (a) and after t (b), either nil.
func bracket(frames []*feed.Frame, id physics.ObjectID, t clocksync.GameTime) (a *physics.ObjectState, ta clocksync.GameTime, b *physics.ObjectState, tb clocksync.GameTime) {
	for _, f := range frames {
		os := findObject(f, id)
		if os == nil {
			continue
		}
		if f.Time() <= t {
			a, ta = os, f.Time()
			continue
		}
		return a, ta, os, f.Time()
	}
	return a, ta, nil, 0
}

// propBracket is bracket for an object either side may own: the side whose
// newest state at or before t claims the newer ownership epoch wins (a tie
// as package ownership breaks it: side 1 when id + epoch is even).
func (s *Spectator) propBracket(id physics.ObjectID, t clocksync.GameTime) (a *physics.ObjectState, ta clocksync.GameTime, b *physics.ObjectState, tb clocksync.GameTime) {
	best, bestEpoch := -1, uint32(0)
	for k := range s.sides {
		frames := s.sides[k].frames
		var ep uint32
		have := false
		for _, f := range frames {
			if f.Time() > t {
				break
			}
			if findObject(f, id) != nil {
				ep, _ = f.Epoch(id) // a state without a claim claims epoch 0, as in package ownership
				have = true
			}
		}
		if !have {
			continue
		}
		switch {
		case best < 0 || ep > bestEpoch:
			best, bestEpoch = k, ep
		case ep == bestEpoch && (uint32(id)+ep)%2 == uint32(k): // k = 0 wins on even
			best = k
		}
	}
	if best >= 0 {
		return bracket(s.sides[best].frames, id, t)
	}
	// Nobody's state before t yet: the first one after it, if any.
	for k := range s.sides {
		if a, ta, b, tb = bracket(s.sides[k].frames, id, t); b != nil {
			return
		}
	}
	return nil, 0, nil, 0
}

// lerpBodies interpolates bodies between a and b (alpha 0 to 1); angles
// turn the short way.
func lerpBodies(dst, a, b []physics.BodyState, alpha float64) {
	for i := range dst {
		p, q := &a[i], &b[i]
		dst[i] = physics.BodyState{
			Pos:    physics.Vec2{X: p.Pos.X + (q.Pos.X-p.Pos.X)*alpha, Y: p.Pos.Y + (q.Pos.Y-p.Pos.Y)*alpha},
			Angle:  angle.Wrap(p.Angle + angle.Diff(q.Angle, p.Angle)*alpha),
			Vel:    physics.Vec2{X: p.Vel.X + (q.Vel.X-p.Vel.X)*alpha, Y: p.Vel.Y + (q.Vel.Y-p.Vel.Y)*alpha},
			AngVel: p.AngVel + (q.AngVel-p.AngVel)*alpha,
		}
	}
}

// Pose returns the pose of object id at the last View's time: its bodies'
// states, in the world's body order, interpolated between the frames on
// either side of that time. It returns nil for an object with no state
// shown yet or not of the world. The slice is reused by the next View.
func (s *Spectator) Pose(id physics.ObjectID) []physics.BodyState {
	i, ok := s.index[id]
	if !ok || !s.objs[i].shown {
		return nil
	}
	return s.objs[i].bodies
}
