package ownership

import (
	"errors"
	"math"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/physics"
)

// errNotOwnFighter is wrapped by the *physics.StateError of a hit report
// whose victim is not a fighter this peer owns.
var errNotOwnFighter = errors.New("hit report on a fighter this peer does not own")

// sizeOf returns the largest distance from a body's origin to a point of
// its shapes: a bound for cheap distance checks.
func sizeOf(o *physics.Object) float64 {
	var s float64
	for _, sh := range o.Shapes() {
		s = max(s, sh.Center.Len()+sh.Radius)
		for _, v := range sh.Vertices {
			s = max(s, v.Len())
		}
	}
	return s
}

// ResetRound declares a new round at game time now, the only way HP may
// rise: every fighter this peer owns gets up with full HP
// (physics.Fighter.Revive), and the rival's fighters may come back to full
// HP (or get up from a knock-out) in states that arrive within resetGrace
// of now. The rival declares the same round on its side (the game's own
// round protocol decides when); its reset's states may arrive before this
// peer declares it, and are held back, not applied, until it does. The
// rival's attack history is forgotten (a knocked-out fighter's last attack
// does not constrain its first of the new round).
func (r *Replicator) ResetRound(now clocksync.GameTime) {
	for _, o := range r.objs {
		if o.fighter == nil {
			continue
		}
		switch o.mode {
		case ModeOwned:
			o.fighter.Revive(o.fighter.MaxHP())
		case ModeRemote:
			o.health.declare(now)
			o.attacks.reset()
		}
	}
}

// refuse counts a refusal and returns its error.
func (r *Replicator) refuse(id physics.ObjectID, why Refusal, v float64) error {
	r.stats.Refused[why]++
	return &RefusedError{Object: id, Reason: why, Value: v}
}

// judgeRules holds a rival's state of object o to the rules of its own
// fighter (its attacks' pace, its HP) or, for a claim on a prop, to its
// fighter's reach. held reports a state kept back without a verdict yet (a
// rise of HP waiting for the round reset to be declared here).
func (r *Replicator) judgeRules(o *replicated, os *physics.ObjectState, d decision, now clocksync.GameTime, held *bool) error {
	if o.fighter != nil {
		if ok, hold := o.health.judge(&os.Fighter, now); !ok {
			if hold {
				o.health.hold(now)
				*held = true
				return nil
			}
			return r.refuse(os.ID, RefusedHealing, float64(os.Fighter.HP))
		}
		if o.health.rises(&os.Fighter) {
			return nil // the rival's round reset: its attacks start afresh
		}
		if gap, ok := o.attacks.judgeState(&os.Fighter, r.inTick); !ok {
			return r.refuse(os.ID, RefusedAttackRate, float64(gap)/float64(time.Millisecond))
		}
		return nil
	}
	if d.owner == d.fromOwner || d.owner != r.reg.remote {
		return nil // no transfer
	}
	if now.Sub(r.gapEnd) <= claimGap && r.gapEnd != 0 {
		return nil // made while nothing came through: cannot be judged
	}
	dist, ok := r.inReach(o)
	if !ok {
		var d float64
		if d, ok = r.claimedInReach(os); !ok {
			return r.refuse(os.ID, RefusedPropReach, min(dist, d))
		}
	}
	return nil
}

// claimedInReach reports whether the claim's own packet places a fighter of
// the claimer within propReach of the claimed prop (its state os), and the
// distance: a claim the claimer made on its copy of the prop after a
// blackout, where this peer's prop had moved on, is honest.
func (r *Replicator) claimedInReach(os *physics.ObjectState) (float64, bool) {
	prop := r.lookup(os.ID)
	if prop == nil || len(os.Bodies) != prop.obj.NumBodies() {
		return inf, false
	}
	var pp, fp [physics.MaxBodiesPerObject]physics.Pose
	for i, b := range os.Bodies {
		pp[i] = physics.Pose{Pos: b.Pos, Angle: b.Angle}
	}
	best := inf
	for i := range r.in.Objects {
		fs := &r.in.Objects[i]
		f := r.lookup(fs.ID)
		if f == nil || f.fighter == nil || f.mode != ModeRemote || len(fs.Bodies) != f.obj.NumBodies() {
			continue
		}
		for j, b := range fs.Bodies {
			fp[j] = physics.Pose{Pos: b.Pos, Angle: b.Angle}
		}
		if best = min(best, closest(f, fp[:], prop, pp[:], propReach)); best <= propReach {
			return best, true
		}
	}
	return best, false
}

// inReach reports whether a rival's fighter came within propReach of prop o
// in this peer's world, now or in the last propReachWindow, and the
// smallest distance found.
func (r *Replicator) inReach(o *replicated) (float64, bool) {
	best := inf
	for _, f := range r.objs {
		if f.fighter == nil || f.mode != ModeRemote {
			continue
		}
		if r.hist == nil || r.hist.count == 0 {
			d := r.liveClosest(f, o)
			if best = min(best, d); best <= propReach {
				return best, true
			}
			continue
		}
		d, ok := r.hist.within(f, o, propReachWindow, propReach, r.hist.t[r.hist.slot(0)])
		if best = min(best, d); ok {
			return best, true
		}
	}
	return best, false
}

// liveClosest is closest for the objects' poses now (before the first
// history record).
func (r *Replicator) liveClosest(a, b *replicated) float64 {
	var pa, pb [physics.MaxBodiesPerObject]physics.Pose
	for i := range a.obj.NumBodies() {
		pa[i] = a.obj.Pose(i)
	}
	for i := range b.obj.NumBodies() {
		pb[i] = b.obj.Pose(i)
	}
	return closest(a, pa[:], b, pb[:], propReach)
}

// report queues a hit this peer's fighter landed on the rival's, to be
// repeated in every packet for reportRepeat.
func (r *Replicator) report(h *physics.HitEvent) {
	a := r.lookup(h.Attacker)
	if a == nil || h.Strike == physics.PartUnknown {
		return
	}
	if r.nout == len(r.outHits) {
		copy(r.outHits[:], r.outHits[1:])
		r.nout--
	}
	view, copyErr := time.Duration(maxView), float64(maxCopyErr)
	if v := r.lookup(h.Victim); v != nil && v.corr.HasTarget() && h.Part != physics.PartUnknown && h.Part.Index() < v.obj.NumBodies() {
		// How far its copy of the struck body was from the newest state
		// of it: any point of it, so the turn counts at its reach.
		i := h.Part.Index()
		st, at := v.corr.Target(i)
		p := v.obj.Pose(i)
		turn := math.Abs(math.Remainder(p.Angle-st.Angle, 2*math.Pi))
		view = min(maxView, max(0, r.now.Sub(at)))
		copyErr = min(maxCopyErr, p.Pos.Sub(st.Pos).Len()+turn*v.size)
	}
	r.outHits[r.nout] = hitReport{attacker: h.Attacker, victim: h.Victim, seq: h.AttackSeq, strike: h.Strike,
		part: h.Part, g: r.now, view: view, copyErr: copyErr, impulse: h.Impulse, limb: a.obj.Pose(h.Strike.Index())}
	r.nout++
	r.stats.Hits.Reported++
}

// appendHits appends the hit list of a packet of game time now: every
// report younger than reportRepeat.
func (r *Replicator) appendHits(dst []byte, now clocksync.GameTime) []byte {
	n := 0
	for i := range r.nout {
		if age := now - r.outHits[i].g; age >= 0 && age <= us(reportRepeat) {
			r.outHits[n] = r.outHits[i]
			n++
		}
	}
	r.nout = n
	dst = append(dst, byte(n)) // a uvarint: n ≤ maxReports < 128
	for i := range n {
		dst = appendReport(dst, &r.outHits[i], now)
	}
	return dst
}

// seenBefore reports whether h was judged already (a repeat), and
// remembers it if not.
func (r *Replicator) seenBefore(h *hitReport) bool {
	for i := range min(r.nseen, seenWindow) {
		s := &r.seen[i]
		if s.attacker == h.attacker && s.seq == h.seq && s.g == h.g {
			return true
		}
	}
	r.seen[r.nseen%seenWindow] = seenReport{attacker: h.attacker, seq: h.seq, g: h.g}
	r.nseen++
	return false
}

// judgeReport confirms or refuses a hit report of the rival (see the
// package documentation): the attacker must be a fighter the rival owns,
// the victim one this peer owns; then the striking limb, as the report
// (and, if this peer has it, the attacker's state of the same tick: the
// packet's own, when its game time is the hit's and no other tick of the
// rival's can have had it, see rivalClock.only) places it, must have been within hitTolerance of the victim's body as
// this peer's history has it at that game time, and the hit must belong to
// an attack of the attacker's that fits its move table. Each attack deals
// damage once.
func (r *Replicator) judgeReport(h *hitReport) error {
	att, vic := r.lookup(h.attacker), r.lookup(h.victim)
	if att == nil || att.fighter == nil || att.mode != ModeRemote {
		r.stats.Unauthorized++
		return &AuthorityError{Object: h.attacker, Sender: r.reg.remote, Err: ErrNotOwner}
	}
	if vic == nil || vic.fighter == nil || vic.mode != ModeOwned {
		r.stats.Invalid++
		return &physics.StateError{Object: h.victim, Body: -1, Field: "hit victim", Value: float64(h.victim), Err: errNotOwnFighter}
	}
	if !(h.limb.Pos.X >= r.cfg.Correction.Bounds.Min.X-1 && h.limb.Pos.X <= r.cfg.Correction.Bounds.Max.X+1 &&
		h.limb.Pos.Y >= r.cfg.Correction.Bounds.Min.Y-1 && h.limb.Pos.Y <= r.cfg.Correction.Bounds.Max.Y+1) {
		r.stats.Invalid++
		return &physics.StateError{Object: h.attacker, Body: h.strike.Index(), Field: "hit limb", Value: h.limb.Pos.X, Err: physics.ErrOutOfRange}
	}
	if r.seenBefore(h) {
		r.stats.Hits.Repeats++
		return nil
	}
	if h.view > r.viewLimit() || !(h.copyErr <= maxCopyError) {
		r.stats.Hits.Stale++
		return nil
	}
	ageMs := float64(r.now.Sub(h.g)) / float64(time.Millisecond)
	if r.hist == nil {
		return r.refuse(h.attacker, RefusedHitAttack, ageMs)
	}
	_, block, ok := r.hist.at(vic, vic.k, h.part.Index(), h.g)
	if !ok {
		return r.refuse(h.attacker, RefusedHitAttack, ageMs)
	}
	if r.rival.only(h.g) {
		for i := range r.in.Objects {
			if os := &r.in.Objects[i]; os.ID == h.attacker && h.strike.Index() < len(os.Bodies) {
				if os.Bodies[h.strike.Index()].Pos.Sub(h.limb.Pos).Len() > limbMatch {
					return r.refuse(h.attacker, RefusedHitAttack, ageMs)
				}
			}
		}
	}
	dist := r.hist.nearest(att, h.strike.Index(), h.limb, vic, h.part.Index(), h.g-us(h.view+viewMargin), h.g+us(viewMargin))
	if !(dist <= hitTolerance+h.copyErr) {
		return r.refuse(h.attacker, RefusedHitTolerance, dist)
	}
	lo, hi := r.rival.at(h.g, r.in.Time, r.inTick)
	rec, why, v, ok := att.attacks.attackAt(h.seq, h.strike, lo, hi)
	if !ok {
		return r.refuse(h.attacker, why, v)
	}
	r.stats.Hits.MaxMiss = max(r.stats.Hits.MaxMiss, dist-h.copyErr)
	ev := physics.HitEvent{Attacker: h.attacker, Victim: h.victim, Part: h.part, Impulse: h.impulse, Tick: r.world.Tick(),
		Attack: rec.action, Blocked: block, AttackSeq: h.seq, Strike: h.strike}
	return r.damage(att, vic, rec, &ev, &r.stats.Hits.Confirmed)
}

// viewLimit is the largest view age a report may have to be judged: the
// largest accepted delay of a state (Config.MaxDelay).
func (r *Replicator) viewLimit() time.Duration {
	if r.cfg.MaxDelay <= 0 {
		return defaultHistoryDelay
	}
	return r.cfg.MaxDelay
}

// viewMargin widens the span of the victim's poses a report is judged
// against by two ticks each way: the two peers' ticks are not in phase.
const viewMargin = 2 * physics.TickDuration

// detected handles a hit this peer's world saw the rival's fighter land on
// this peer's: it belongs to the attack the rival's states started on its
// copy here.
func (r *Replicator) detected(h *physics.HitEvent) {
	att, vic := r.lookup(h.Attacker), r.lookup(h.Victim)
	if att == nil || vic == nil || vic.fighter == nil {
		return
	}
	var rec *attackRec
	for i := att.attacks.n - 1; i >= 0; i-- {
		if c := &att.attacks.recs[i]; c.seq == h.AttackSeq && c.action == h.Attack {
			rec = c
			break
		}
	}
	if rec == nil { // cannot happen: the copy attacks only as accepted states say
		_ = r.refuse(h.Attacker, RefusedHitAttack, 0)
		return
	}
	_ = r.damage(att, vic, rec, h, &r.stats.Hits.Detected)
}

// damage applies hit h of attack rec once, within the attacker's damage
// budget, and counts it in counter.
func (r *Replicator) damage(att, vic *replicated, rec *attackRec, h *physics.HitEvent, counter *uint64) error {
	if rec.damaged {
		r.stats.Hits.Duplicate++
		return nil
	}
	d := vic.fighter.Damage(*h)
	if vic.fighter.HP() > 0 && !att.budget.take(d, r.now) {
		return r.refuse(h.Attacker, RefusedDamageRate, float64(d))
	}
	rec.damaged = true
	if len(r.damaged) < cap(r.damaged) {
		r.damaged = append(r.damaged, *h)
	}
	r.stats.Damage += uint64(vic.fighter.ApplyHit(*h))
	r.stats.HitsTaken++
	*counter++
	return nil
}

// newTick forgets the last tick's damage once a new tick begins (the first
// HandlePacket or BeforeStep after an AppendPacket).
func (r *Replicator) newTick() {
	if r.sent {
		r.damaged, r.sent = r.damaged[:0], false
	}
}

// Damaged returns the hits on this peer's fighters whose damage was applied
// during the current tick (or, read after AppendPacket, the last one):
// confirmed reports of the rival's and hits this peer's world detected,
// each attack's at most once. Part, Impulse and Blocked are the hit's;
// AttackSeq and Attacker name the attack. The slice is reused by the next
// tick; it holds at most 8 hits.
func (r *Replicator) Damaged() []physics.HitEvent { return r.damaged }
