package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/ragsync/ragsync"
	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/correction"
	"github.com/ragsync/ragsync/internal/netsim"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
	"github.com/ragsync/ragsync/signaling"
)

// Object ids of the simulated match, the same on both peers.
const (
	fighterA physics.ObjectID = 1 // owned by peer A (side 1: the offerer, the clock leader)
	fighterB physics.ObjectID = 2 // owned by peer B (side 2)
	crateID  physics.ObjectID = 3 // shared; A starts with it
)

// matchConfig is the match both peers play.
func matchConfig(corr correction.Config) ragsync.MatchConfig {
	return ragsync.MatchConfig{
		Fighters:   [2]physics.ObjectID{fighterA, fighterB},
		Props:      []physics.ObjectID{crateID},
		Replicator: ownership.Config{Correction: corr},
	}
}

var objectIDs = [...]physics.ObjectID{fighterA, fighterB, crateID}

const tickLen = time.Second / physics.TickRate

// Scenario is a network between the two peers.
type Scenario struct {
	Name string
	// Link impairs each direction (independently, with its own randomness),
	// or only A→B if BA is set.
	Link netsim.Config
	// BA, if not nil, impairs the B→A direction instead of Link.
	BA *netsim.Config
	// SkewPPM is how much faster B's clock runs than A's.
	SkewPPM float64
}

// Options of one simulated match.
type Options struct {
	Scenario Scenario
	Method   correction.Method
	// Correction tunes the correction (its Method is replaced by Method).
	Correction correction.Config
	// Duration of the match in virtual time (after calibration).
	Duration time.Duration
	// Calibration is the clock calibration before the match starts. Zero:
	// 2 s.
	Calibration time.Duration
	Seed        uint64
}

// Result is what one simulated match measured. See the package doc for the
// definition of each figure.
type Result struct {
	Scenario            string  `json:"scenario"`
	Method              string  `json:"method"`
	Seed                uint64  `json:"seed"`
	Seeds               string  `json:"seeds,omitempty"` // set on a mean over seeds (see Mean)
	Seconds             float64 `json:"seconds"`
	RMSErrorM           float64 `json:"rms_error_m"`
	P95ErrorM           float64 `json:"p95_error_m"`
	RMSTrueM            float64 `json:"rms_true_m"`
	P95TrueM            float64 `json:"p95_true_m"`
	VisualDelayABMs     float64 `json:"visual_delay_ab_ms"`
	VisualDelayBAMs     float64 `json:"visual_delay_ba_ms"`
	RMSAlignedM         float64 `json:"rms_aligned_m"`
	RMSBodyTrueM        float64 `json:"rms_body_true_m"`
	PopP99M             float64 `json:"pop_p99_m"`
	PopMaxM             float64 `json:"pop_max_m"`
	MaxJumpM            float64 `json:"max_jump_m"`
	HardSnapsPerS       float64 `json:"hard_snaps_per_s"`
	ClockErrorP95Ms     float64 `json:"clock_error_p95_ms"`
	HitAgreement        float64 `json:"hit_agreement"`
	Hits                float64 `json:"hits"`
	KbpsPerDirection    float64 `json:"kbps_per_direction"`
	PositionDisconnects float64 `json:"position_disconnects"`
	LossPct             float64 `json:"loss_pct"`
	Transfers           float64 `json:"transfers"`
	KOs                 float64 `json:"kos"`
	Rejected            float64 `json:"rejected"`
	DamageAgreement     float64 `json:"damage_agreement"`
	Refused             float64 `json:"refused"`
}

// objPos is the position of every body of the match's objects at one moment.
type objPos struct {
	n   [len(objectIDs)]int
	pos [len(objectIDs)][physics.FighterBodies]physics.Vec2
}

// frame is one tick of one peer, recorded for measurement.
type frame struct {
	g      clocksync.GameTime
	t      time.Duration        // the master (true) time of the tick
	owned  [len(objectIDs)]bool // this peer owned the object (and sent it)
	remote [len(objectIDs)]bool // this peer corrected the object
	p      objPos               // where the game draws each body (Replicator.Shown)
	body   objPos               // where each body is in the physics world
}

type hitRec struct {
	attacker, victim physics.ObjectID
	seq              uint8
	g                clocksync.GameTime
}

// peer is one simulated player: a local clock, a clock calibrator, a world,
// a Match, a bot, and its end of the network. It is the Match's Link.
type peer struct {
	role            signaling.Role
	master          *clocksync.ManualClock
	clock           *clocksync.SkewedClock
	cal             *clocksync.Calibrator
	world           *physics.World
	match           *ragsync.Match
	bot             *physics.Bot
	out             *netsim.Link
	inbox           [][]byte
	n               int
	calBuf, pongBuf []byte
	nextTick        time.Duration // local time
	nextPing        time.Duration // local time
	sentBytes       uint64        // during the match
	counting        bool
	frames          []frame // recorded ticks, in order
	hits            []hitRec
	damage          []hitRec // hits on this peer's fighter whose damage it applied
	round           roundRule
	pops            []float64 // Stats.Pop of every corrected rival body, every tick
	koTicks         int
	kos             int
}

var _ ragsync.Link = (*peer)(nil)

func (p *peer) Send(b []byte) error {
	if p.counting {
		p.sentBytes += uint64(len(b))
	}
	return p.out.Send(p.master.Now(), b)
}

func (p *peer) Poll(fn func([]byte)) int {
	n := p.n
	for i := range n {
		fn(p.inbox[i])
	}
	p.n = 0
	return n
}

func (p *peer) GameTime() (clocksync.GameTime, bool) { return p.cal.GameTime() }
func (p *peer) Role() signaling.Role                 { return p.role }

// StartMatch is called by the Match on its first synced tick, as
// p2p.Session's is: the calibrator switches to its match mode.
func (p *peer) StartMatch() { p.cal.StartMatch() }

// receive is called when a packet arrives: calibration messages are handled
// at once (as a network goroutine would), states wait for the next tick.
func (p *peer) receive(b []byte) {
	if len(b) > 0 && b[0] == clocksync.Magic {
		reply, err := p.cal.Handle(b, p.pongBuf[:0])
		if err == nil && reply != nil {
			p.Send(reply)
		}
		return
	}
	if p.n == len(p.inbox) {
		p.inbox = append(p.inbox, make([]byte, 0, 512))
	}
	p.inbox[p.n] = append(p.inbox[p.n][:0], b...)
	p.n++
}

// masterAt converts a local time of p's clock to the master (true) time, rounded up.
func (p *peer) masterAt(local time.Duration) time.Duration {
	m := float64(local-p.clock.Offset) / (1 + p.clock.SkewPPM*1e-6)
	return time.Duration(math.Ceil(m))
}

func newPeer(role signaling.Role, master *clocksync.ManualClock, skew float64, leader bool,
	corr correction.Config, out *netsim.Link, seed uint64) (*peer, error) {
	p := &peer{role: role, master: master, out: out,
		clock:  &clocksync.SkewedClock{Base: master, SkewPPM: skew},
		bot:    physics.NewBot(seed),
		calBuf: make([]byte, 0, 64), pongBuf: make([]byte, 0, 64)}
	var err error
	if p.cal, err = clocksync.NewCalibrator(clocksync.Config{Leader: leader}, p.clock); err != nil {
		return nil, err
	}
	if p.world, err = physics.NewWorld(physics.WorldConfig{}); err != nil {
		return nil, err
	}
	if _, err := p.world.AddFighter(fighterA, physics.FighterConfig{X: -1.5}); err != nil {
		return nil, err
	}
	if _, err := p.world.AddFighter(fighterB, physics.FighterConfig{X: 1.5}); err != nil {
		return nil, err
	}
	if _, err := p.world.AddCrate(crateID, physics.PropConfig{Pos: physics.V(3.5, 0.25)}); err != nil {
		return nil, err
	}
	if p.match, err = ragsync.NewMatch(p.world, p, matchConfig(corr)); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *peer) tick() {
	f := p.match.Fighter()
	f.SetInput(p.bot.Input(p.world, f.ID(), p.match.Rival().ID()))
	if err := p.match.Tick(); errors.Is(err, ragsync.ErrNotSynced) {
		return
	}
	g := p.match.Stats().GameTime
	if f.Action() == physics.ActionKO {
		if p.koTicks == 0 {
			p.kos++
		}
		p.koTicks++
	} else {
		p.koTicks = 0
	}
	p.round.tick(p.match, g)
	p.recordDamage(g)
	fr := frame{g: g, t: p.master.Now()}
	rep := p.match.Replicator()
	for i, id := range objectIDs {
		m := rep.Mode(id)
		fr.owned[i] = m == ownership.ModeOwned
		fr.remote[i] = m == ownership.ModeRemote
		o := p.world.Object(id)
		if fr.remote[i] {
			cs := rep.Corrector(id).Stats()
			p.pops = append(p.pops, cs.Pop[:o.NumBodies()]...)
		}
		fr.p.n[i] = o.NumBodies()
		fr.body.n[i] = o.NumBodies()
		for b := range o.NumBodies() {
			fr.body.pos[i][b], _ = o.Transform(b)
			fr.p.pos[i][b], _ = rep.Shown(id, b)
		}
	}
	p.frames = append(p.frames, fr)
	for _, h := range p.world.Hits() {
		p.hits = append(p.hits, hitRec{attacker: h.Attacker, victim: h.Victim, seq: h.AttackSeq, g: g})
	}
}

// roundRule is the simulated game's round rule, which both peers follow on
// their own: 2 s after a fighter is knocked out (this peer's own, or the
// rival's as its states show it) a new round begins, declared through
// Match.ResetRound, the only way HP may rise.
type roundRule struct {
	koAt    clocksync.GameTime
	ko      bool
	resetAt clocksync.GameTime // the last reset (a KO state may still be on its way)
}

func (r *roundRule) tick(m *ragsync.Match, g clocksync.GameTime) {
	const after = 2 * time.Second
	down := m.Fighter().Action() == physics.ActionKO || m.Rival().HP() == 0
	if down && !r.ko && g.Sub(r.resetAt) > after {
		r.ko, r.koAt = true, g
	}
	if r.ko && g.Sub(r.koAt) >= after {
		m.ResetRound()
		r.ko, r.resetAt = false, g
	}
}

// recordDamage records the hits on this peer's fighter whose damage the
// last tick applied.
func (p *peer) recordDamage(g clocksync.GameTime) {
	for _, h := range p.match.Damaged() {
		p.damage = append(p.damage, hitRec{attacker: h.Attacker, victim: h.Victim, seq: h.AttackSeq, g: g})
	}
}

// Run plays one match and measures it.
func Run(o Options) (Result, error) {
	if o.Duration <= 0 {
		return Result{}, fmt.Errorf("duration %v must be positive", o.Duration)
	}
	if o.Calibration == 0 {
		o.Calibration = 2 * time.Second
	}
	ba := o.Scenario.Link
	if o.Scenario.BA != nil {
		ba = *o.Scenario.BA
	}
	pair, err := netsim.NewAsymmetricPair(o.Scenario.Link, ba, o.Seed)
	if err != nil {
		return Result{}, err
	}
	master := &clocksync.ManualClock{}
	corr := o.Correction
	corr.Method = o.Method
	a, err := newPeer(signaling.RoleOfferer, master, 0, true, corr, pair.AB, o.Seed+1)
	if err != nil {
		return Result{}, err
	}
	b, err := newPeer(signaling.RoleAnswerer, master, o.Scenario.SkewPPM, false, corr, pair.BA, o.Seed+2)
	if err != nil {
		return Result{}, err
	}
	// B's clock starts 10 s off, to show the calibration converging.
	b.clock.Offset = 10 * time.Second
	peers := [2]*peer{a, b}
	start := o.Calibration
	end := start + o.Duration
	for _, p := range peers {
		p.nextPing = p.cal.NextPing()
		p.nextTick = p.clock.Offset + time.Duration(float64(start)*(1+p.clock.SkewPPM*1e-6))
	}
	var clockErr []float64
	started := false
	for {
		t := time.Duration(math.MaxInt64)
		for _, p := range peers {
			t = min(t, p.masterAt(p.nextTick), p.masterAt(p.nextPing))
		}
		if at, ok := pair.AB.NextArrival(); ok {
			t = min(t, at)
		}
		if at, ok := pair.BA.NextArrival(); ok {
			t = min(t, at)
		}
		if t >= end {
			break
		}
		t = max(t, master.Now())
		master.Set(t)
		pair.AB.Deliver(t, b.receive)
		pair.BA.Deliver(t, a.receive)
		if !started && t >= start {
			started = true // the measured match: each Match starts its calibrator at its first tick
			for _, p := range peers {
				p.counting = true
			}
		}
		for _, p := range peers {
			if now := p.clock.Now(); now >= p.nextPing {
				if msg, _ := p.cal.Poll(p.calBuf[:0]); msg != nil {
					p.Send(msg)
				}
				p.nextPing = max(p.cal.NextPing(), now+time.Microsecond)
			}
		}
		for _, p := range peers {
			if p.clock.Now() >= p.nextTick {
				p.tick()
				p.nextTick += tickLen // by its own clock, as the demo ticks
				if p == a && started {
					ga, okA := a.cal.GameTime()
					gb, okB := b.cal.GameTime()
					if okA && okB {
						clockErr = append(clockErr, math.Abs(float64(ga-gb))/1000)
					}
				}
			}
		}
	}
	res := Result{Scenario: o.Scenario.Name, Method: o.Method.String(), Seed: o.Seed, Seconds: o.Duration.Seconds()}
	measure(&res, a, b)
	res.ClockErrorP95Ms = percentile(clockErr, 0.95)
	secs := o.Duration.Seconds()
	res.KbpsPerDirection = float64(a.sentBytes+b.sentBytes) / 2 * 8 / 1000 / secs
	var hard uint64
	for _, p := range peers {
		s := p.match.Stats()
		hard += s.Replicator.Correction.HardTicks
		res.PositionDisconnects += float64(s.Replicator.PositionDisconnects)
		res.Transfers += float64(s.Replicator.Claims)
		res.Rejected += float64(s.Replicator.Unauthorized + s.Replicator.Invalid + s.Replicator.Malformed)
		res.Refused += float64(s.Replicator.Refused.Total())
		res.KOs += float64(p.kos)
	}
	res.HardSnapsPerS = float64(hard) / 2 / secs
	sa, sb := pair.AB.Stats(), pair.BA.Stats()
	if sent := sa.Sent + sb.Sent; sent > 0 {
		res.LossPct = 100 * float64(sa.Lost()+sb.Lost()) / float64(sent)
	}
	return res, nil
}

// measure compares every peer's copy of the rival's objects with the owner's
// true positions at the same game time (interpolated between the owner's
// ticks), and matches the hits both peers saw.
func measure(res *Result, a, b *peer) {
	var errs []float64
	for _, pr := range [][2]*peer{{a, b}, {b, a}} {
		cp, owner := pr[0], pr[1]
		var prev *frame
		var prevTrue objPos
		var prevOK [len(objectIDs)]bool
		for i := range cp.frames {
			f := &cp.frames[i]
			var tru objPos
			var ok [len(objectIDs)]bool
			for k := range objectIDs {
				if f.remote[k] {
					ok[k] = trueAt(owner, k, gameTime, f.g, clocksync.GameTime(3*tickLen/time.Microsecond), &tru)
				}
			}
			for k := range objectIDs {
				if !ok[k] {
					continue
				}
				for bi := range f.p.n[k] {
					e := f.p.pos[k][bi].Sub(tru.pos[k][bi]).Len()
					errs = append(errs, e)
					if prev != nil && prevOK[k] {
						dCopy := f.p.pos[k][bi].Sub(prev.p.pos[k][bi])
						dTrue := tru.pos[k][bi].Sub(prevTrue.pos[k][bi])
						res.MaxJumpM = math.Max(res.MaxJumpM, dCopy.Sub(dTrue).Len())
					}
				}
			}
			prev, prevTrue, prevOK = f, tru, ok
		}
	}
	if len(errs) > 0 {
		var sq float64
		for _, e := range errs {
			sq += e * e
		}
		res.RMSErrorM = math.Sqrt(sq / float64(len(errs)))
		res.P95ErrorM = percentile(errs, 0.95)
	}
	measureTrue(res, a, b)
	pops := slices.Concat(a.pops, b.pops)
	res.PopP99M = percentile(pops, 0.99)
	if len(pops) > 0 {
		res.PopMaxM = slices.Max(pops)
	}
	hits, agree := matchHits(a.hits, b.hits)
	res.Hits, res.HitAgreement = float64(hits), agree
	res.DamageAgreement = damageAgreement(a, b)
}

// damageAgreement is |A ∩ D| / |A ∪ D| over both directions, where A are
// the hits each attacker's world saw its fighter land (its screen) and D
// the hits each victim's owner applied as damage, paired as matchHits does.
func damageAgreement(a, b *peer) float64 {
	var seen, applied []hitRec
	for _, p := range [2]*peer{a, b} {
		own := p.match.Fighter().ID()
		for _, h := range p.hits {
			if h.attacker == own {
				seen = append(seen, h)
			}
		}
		applied = append(applied, p.damage...)
	}
	_, agree := matchHits(seen, applied)
	return agree
}

// Visual delay search: the lag d that minimises the rms distance between
// the copy at true time t and its owner at t − d is looked for on a grid
// from delayMin to delayMax, then refined twice around the best point.
const (
	delayMin    = -100 * time.Millisecond
	delayMax    = 600 * time.Millisecond
	delayCoarse = 8 * time.Millisecond
	delayMid    = time.Millisecond
	delayFine   = 100 * time.Microsecond
)

// measureTrue compares every peer's copy of the rival's objects with the
// owner's positions at the same true (master) instant, interpolated between
// the owner's ticks: unlike the game-time comparison, it does not hide the
// game clock's own error (half the path's asymmetry). It also finds the
// visual delay of each direction, the lag that best aligns the copy with
// its owner, and the rms error left at those lags (the copy's distortion).
func measureTrue(res *Result, a, b *peer) {
	var errs []float64
	sq, n := trueError(a, b, 0, &errs)
	if n == 0 {
		return
	}
	res.RMSTrueM = math.Sqrt(sq / float64(n))
	bsq, bn := bodyError(a, b)
	res.RMSBodyTrueM = math.Sqrt(bsq / float64(max(1, bn)))
	res.P95TrueM = percentile(errs, 0.95)
	var alignedSq float64
	var alignedN int
	// A→B: B's copy of A's objects; B→A: A's copy of B's.
	for _, dir := range [2]struct {
		cp, owner *peer
		delay     *float64
	}{{b, a, &res.VisualDelayABMs}, {a, b, &res.VisualDelayBAMs}} {
		lag, sq, n := bestLag(dir.cp, dir.owner)
		*dir.delay = float64(lag) / float64(time.Millisecond)
		alignedSq += sq
		alignedN += n
	}
	res.RMSAlignedM = math.Sqrt(alignedSq / float64(max(1, alignedN)))
}

// bestLag returns the lag d that minimises the rms distance between cp's
// copy of owner's objects at true time t and owner's at t − d, with the
// squared distances' sum and count at that lag.
func bestLag(cp, owner *peer) (best time.Duration, bestSq float64, bestN int) {
	bestRMS := math.Inf(1)
	try := func(d time.Duration) {
		sq, n := copyError(cp, owner, d, nil)
		if n == 0 {
			return
		}
		if r := math.Sqrt(sq / float64(n)); r < bestRMS {
			best, bestRMS, bestSq, bestN = d, r, sq, n
		}
	}
	try(0)
	for d := delayMin; d <= delayMax; d += delayCoarse {
		try(d)
	}
	for _, step := range [2][2]time.Duration{{delayCoarse, delayMid}, {delayMid, delayFine}} {
		center := best
		for d := center - step[0]; d <= center+step[0]; d += step[1] {
			try(d)
		}
	}
	return best, bestSq, bestN
}

// trueError sums the squared distances between each peer's copy of the
// rival's bodies at true time t and the owner's at t − lag, and counts them;
// if errs is not nil, it appends every distance to it.
func trueError(a, b *peer, lag time.Duration, errs *[]float64) (sq float64, n int) {
	sq1, n1 := copyError(a, b, lag, errs)
	sq2, n2 := copyError(b, a, lag, errs)
	return sq1 + sq2, n1 + n2
}

// copyError is trueError for one direction: cp's copy of owner's objects.
func copyError(cp, owner *peer, lag time.Duration, errs *[]float64) (sq float64, n int) {
	for i := range cp.frames {
		f := &cp.frames[i]
		var tru objPos
		for k := range objectIDs {
			if !f.remote[k] || !trueAt(owner, k, masterTime, f.t-lag, 3*tickLen, &tru) {
				continue
			}
			for bi := range f.p.n[k] {
				e := f.p.pos[k][bi].Sub(tru.pos[k][bi]).Len()
				sq += e * e
				n++
				if errs != nil {
					*errs = append(*errs, e)
				}
			}
		}
	}
	return sq, n
}

// bodyError is trueError at no lag for the physics bodies rather than the
// drawn pose: how close the bodies that collide and strike are to their
// owner's.
func bodyError(a, b *peer) (sq float64, n int) {
	for _, pr := range [][2]*peer{{a, b}, {b, a}} {
		cp, owner := pr[0], pr[1]
		for i := range cp.frames {
			f := &cp.frames[i]
			var tru objPos
			for k := range objectIDs {
				if !f.remote[k] || !trueAt(owner, k, masterTime, f.t, 3*tickLen, &tru) {
					continue
				}
				for bi := range f.body.n[k] {
					e := f.body.pos[k][bi].Sub(tru.pos[k][bi]).Len()
					sq += e * e
					n++
				}
			}
		}
	}
	return sq, n
}

// masterTime and gameTime are the two clocks a frame is stamped with, for
// trueAt.
func masterTime(f *frame) time.Duration    { return f.t }
func gameTime(f *frame) clocksync.GameTime { return f.g }

// trueAt interpolates owner p's positions of object k at time t from its
// recorded ticks, on the clock key reads from each (masterTime or
// gameTime), if it owned the object at both surrounding ticks and they are
// at most maxGap apart.
func trueAt[T ~int64](p *peer, k int, key func(*frame) T, t, maxGap T, dst *objPos) bool {
	i := sort.Search(len(p.frames), func(i int) bool { return key(&p.frames[i]) >= t })
	if i == 0 || i >= len(p.frames) {
		return false
	}
	f0, f1 := &p.frames[i-1], &p.frames[i]
	t0, t1 := key(f0), key(f1)
	if !f0.owned[k] || !f1.owned[k] || t1-t0 > maxGap {
		return false
	}
	w := 1.0
	if t1 != t0 {
		w = float64(t-t0) / float64(t1-t0)
	}
	dst.n[k] = f1.p.n[k]
	for bi := range f1.p.n[k] {
		dst.pos[k][bi] = f0.p.pos[k][bi].Add(f1.p.pos[k][bi].Sub(f0.p.pos[k][bi]).Scale(w))
	}
	return true
}

// matchHits pairs the hits both peers saw (same attacker, victim and attack
// sequence, within 0.5 s of game time) and returns the number of distinct
// hits and the share seen by both.
func matchHits(a, b []hitRec) (distinct int, agreement float64) {
	used := make([]bool, len(b))
	matched := 0
	for _, ha := range a {
		for j, hb := range b {
			if used[j] || ha.attacker != hb.attacker || ha.victim != hb.victim || ha.seq != hb.seq {
				continue
			}
			if d := ha.g - hb.g; d < -500_000 || d > 500_000 {
				continue
			}
			used[j] = true
			matched++
			break
		}
	}
	distinct = len(a) + len(b) - matched
	if distinct == 0 {
		return 0, 1
	}
	return distinct, float64(matched) / float64(distinct)
}

func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
