package ownership

// The rival held to the rules: every rule a rival's state, claim, hit
// report or hit in this world is judged by lives here (see the package
// documentation, "A rival held to the rules"). HandlePacket's pass over an
// object state is authorize (registry.go) → validate → judgeRival → commit
// (commitRival records what the rules must remember); a hit report is
// judged by judgeReport, a hit this world saw by detected.

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/physics"
)

// Refusal is why a rival's state, hit report or claim was refused: it
// broke a rule of its own fighter (see the package documentation, "A rival
// held to the rules"). A refused input is counted in Stats.Refused by its
// reason and changes nothing.
type Refusal uint8

const (
	// RefusedAttackRate: an attack that starts before the rival's previous
	// attack could have ended (its move's wind-up, active and recovery
	// phases, less two ticks of slack), in the rival's own ticks.
	RefusedAttackRate Refusal = iota
	// RefusedDamageRate: a hit that would take more HP per second than the
	// rival's move table allows (see Stats.Refused).
	RefusedDamageRate
	// RefusedHealing: a rival fighter's HP that rose, or a knocked-out
	// fighter that got up, without a round reset declared through
	// Replicator.ResetRound.
	RefusedHealing
	// RefusedPropReach: a claim on a prop the claimer's fighter was not
	// within 1 m of, neither now nor in the last second of this peer's
	// world.
	RefusedPropReach
	// RefusedHitTolerance: a hit report whose striking limb, as the
	// attacker's states placed it, was farther than 0.25 m plus the
	// report's copy error from the victim's body at the hit's game time in
	// this peer's history.
	RefusedHitTolerance
	// RefusedHitAttack: a hit report (or a hit in this world) that belongs
	// to no attack the attacker's states show in its active phase at that
	// time, whose limb is not that attack's, whose limb pose contradicts
	// the attacker's state of the same time, or whose time this peer's
	// history does not cover.
	RefusedHitAttack
	// RefusedMotion: a state whose bodies move beyond what the object's
	// body can do since the rival's last accepted state of it: a body
	// faster than its speed limit, a velocity change or a displacement
	// larger than the elapsed ticks allow, a joint pulled apart, or a
	// claimed prop placed away from where this peer's world had it (see
	// motionLimits). Value: the offending figure (m/s or m).
	RefusedMotion
	// RefusedAir: a fighter state higher above its last accepted state on
	// the ground than a launch at 8 m/s could carry it under gravity in
	// the time since (a hover). Value: the time in the air, ms.
	RefusedAir
	// RefusedRound: a round reset declared (Replicator.ResetRound) while
	// neither fighter is knocked out at 0 HP in its owner's states nor the
	// round's time is up. Nothing is reset.
	RefusedRound
	numRefusals
)

var refusalNames = [numRefusals]string{"attack rate", "damage rate", "healing", "prop reach", "hit tolerance", "hit attack", "motion", "air", "round"}

func (r Refusal) String() string {
	if r < numRefusals {
		return refusalNames[r]
	}
	return fmt.Sprintf("refusal(%d)", uint8(r))
}

// Refusals counts refusals by reason (index: Refusal).
type Refusals [numRefusals]uint64

// Total returns the number of refusals of every reason.
func (r *Refusals) Total() uint64 {
	var n uint64
	for _, v := range r {
		n += v
	}
	return n
}

// RefusedError is returned by HandlePacket for a rival's input a rule of
// its own fighter refuses: it names the object, the reason, and the
// offending value (the attack's start, the HP, the distance in m, ...).
type RefusedError struct {
	Object physics.ObjectID
	Reason Refusal
	// Value is the offending figure: for RefusedAttackRate the time in ms
	// since the previous attack began, RefusedDamageRate the damage,
	// RefusedHealing the HP, RefusedPropReach and RefusedHitTolerance the
	// distance in m, RefusedHitAttack the hit's age in ms.
	Value float64
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("ownership: %v: refused (%v): %g", e.Object, e.Reason, e.Value)
}

// moveTable is what a fighter's tuning says of its attacks, in ticks.
type moveTable struct {
	punch, kick [3]int64   // wind-up, active, recovery
	maxDamage   int        // one hit's largest damage
	maxImpulse  [2]float64 // a rival's hit's largest impulse: punch, kick
}

func movesOf(t physics.Tuning) moveTable {
	return moveTable{
		punch:      [3]int64{int64(t.PunchWindup), int64(t.PunchActive), int64(t.PunchRecovery)},
		kick:       [3]int64{int64(t.KickWindup), int64(t.KickActive), int64(t.KickRecovery)},
		maxDamage:  t.MaxHitDamage,
		maxImpulse: [2]float64{t.MaxPunchImpulse, t.MaxKickImpulse},
	}
}

// impulseCap is the largest impulse a rival's hit by attack a may have
// (Tuning.MaxPunchImpulse, MaxKickImpulse).
func (m *moveTable) impulseCap(a physics.Action) float64 {
	if a == physics.ActionKick {
		return m.maxImpulse[1]
	}
	return m.maxImpulse[0]
}

func (m *moveTable) phases(a physics.Action) *[3]int64 {
	if a == physics.ActionKick {
		return &m.kick
	}
	return &m.punch
}

// full is how many ticks an attack lasts, wind-up to the end of its
// recovery.
func (m *moveTable) full(a physics.Action) int64 {
	p := m.phases(a)
	return p[0] + p[1] + p[2]
}

// shortest is the shortest attack of the table, in game time.
func (m *moveTable) shortest() time.Duration {
	return time.Duration(min(m.full(physics.ActionPunch), m.full(physics.ActionKick))) * physics.TickDuration
}

// startBounds returns the earliest and latest tick an attack seen in phase
// ph at the rival's tick t started on: it had entered ph, and not yet left
// it.
func (m *moveTable) startBounds(a physics.Action, ph physics.AttackPhase, t int64) (lo, hi int64) {
	p := m.phases(a)
	var before int64
	for i := physics.PhaseWindup; i < ph; i++ {
		before += p[i-physics.PhaseWindup]
	}
	through := before + p[ph-physics.PhaseWindup]
	return t - through, t - before
}

func us(d time.Duration) clocksync.GameTime { return clocksync.GameTime(d / time.Microsecond) }

// attackRec is one attack of a rival fighter, as its states and hit
// reports showed it.
type attackRec struct {
	seq     uint8 // FighterState.AttackSeq (mod 4)
	action  physics.Action
	strike  physics.BodyPart
	lo, hi  int64 // bounds of its start, in the rival's ticks (rivalClock)
	damaged bool  // it dealt its damage (once per attack)
	ended   bool  // a later state showed it over
}

// attackWindow is how many of a rival fighter's attacks are remembered.
const attackWindow = 8

// attackPolicy follows a rival fighter's attacks through its states and
// hit reports, in the rival's own ticks (rivalClock), and refuses an attack
// that the observations prove started before the previous one could have
// ended. It is a plain type driven by the states' ticks: no clock, no
// goroutine.
//
// It counts in ticks, not in the states' game times, because a state's
// stamp is the game time its tick ran at, and a peer that falls behind
// runs ticks in bursts to catch up (a slow browser frame runs several at
// once): an attack's 24 ticks may then span anything from a few µs to
// seconds of game time, so no bound in game time holds for honest play.
type attackPolicy struct {
	moves moveTable
	tol   int64                   // slack, in ticks
	recs  [attackWindow]attackRec // in start order; recs[:n]
	n     int
}

func newAttackPolicy(m moveTable, tol time.Duration) attackPolicy {
	return attackPolicy{moves: m, tol: int64(tol / physics.TickDuration)}
}

// current returns the attack in progress as of the last committed state
// (or nil).
func (p *attackPolicy) current() *attackRec {
	if p.n == 0 || p.recs[p.n-1].ended {
		return nil
	}
	return &p.recs[p.n-1]
}

// find returns the remembered attack seq whose active phase (with the
// tolerance) may contain a tick within [lo, hi], or nil.
func (p *attackPolicy) find(seq uint8, a physics.Action, lo, hi int64) *attackRec {
	for i := p.n - 1; i >= 0; i-- {
		r := &p.recs[i]
		if r.seq != seq || r.action != a {
			continue
		}
		ph := p.moves.phases(a)
		from := r.lo + ph[0] - p.tol
		to := r.hi + ph[0] + ph[1] + p.tol
		if hi >= from && lo <= to {
			return r
		}
	}
	return nil
}

// fits reports whether an attack that started on a tick within [lo, hi]
// may be honest next to the remembered attacks: for each of them, some
// starts within both bounds put one attack's end (less the tolerance)
// before the other's start. It refuses only what the observations prove:
// the latest start the new attack may have had is earlier than the
// earliest end of a remembered one that began first, and the reverse
// order is just as impossible. It returns the offending gap (how long
// after the neighbour's earliest start the new one began, at the latest)
// if not.
func (p *attackPolicy) fits(a physics.Action, lo, hi int64) (time.Duration, bool) {
	for i := range p.n {
		r := &p.recs[i]
		after := hi+p.tol >= r.lo+p.moves.full(r.action) // r first, then the new one
		before := r.hi+p.tol >= lo+p.moves.full(a)       // the new one first, then r
		if !after && !before {
			return time.Duration(hi-r.lo) * physics.TickDuration, false
		}
	}
	return 0, true
}

// judgeState checks the attack a state of the rival's tick t shows. It
// changes nothing; commitState records it once the whole state is
// accepted.
func (p *attackPolicy) judgeState(s *physics.FighterState, t int64) (time.Duration, bool) {
	if s.Phase == physics.PhaseNone {
		return 0, true
	}
	lo, hi := p.moves.startBounds(s.Action, s.Phase, t)
	if p.same(s, lo, hi) != nil {
		return 0, true // the attack in progress, or one a hit report showed
	}
	return p.fits(s.Action, lo, hi)
}

// same returns the remembered attack a state showing attack seq s.AttackSeq
// with a start within [lo, hi] continues: the same seq and move, and a
// start consistent with what earlier states showed of it (an attack held
// in a phase longer than the move table says is not the same attack).
func (p *attackPolicy) same(s *physics.FighterState, lo, hi int64) *attackRec {
	for i := p.n - 1; i >= 0; i-- {
		r := &p.recs[i]
		if r.seq == s.AttackSeq && r.action == s.Action && lo <= r.hi+p.tol && r.lo <= hi+p.tol {
			return r
		}
	}
	return nil
}

// commitState records the attack the state s of the rival's tick t shows
// (judged).
func (p *attackPolicy) commitState(s *physics.FighterState, t int64) {
	if s.Phase == physics.PhaseNone {
		if c := p.current(); c != nil {
			c.ended = true
		}
		return
	}
	lo, hi := p.moves.startBounds(s.Action, s.Phase, t)
	r := p.same(s, lo, hi)
	if r == nil {
		r = p.insert(attackRec{seq: s.AttackSeq, action: s.Action, strike: s.Strike, lo: lo, hi: hi})
	}
	r.lo, r.hi = max(r.lo, lo), min(r.hi, hi)
	if r.lo > r.hi { // matched within the tolerance: keep the bounds ordered
		r.lo = r.hi
	}
	if r.strike == physics.PartUnknown {
		r.strike = s.Strike
	}
	// Any attack before it is over.
	for i := range p.n {
		if &p.recs[i] != r && p.recs[i].lo < r.lo {
			p.recs[i].ended = true
		}
	}
}

// attackAt returns the attack a hit on a rival tick within [lo, hi], with
// attack seq and striking limb strike, belongs to, recording it if the
// states have not shown it (its states were lost): an attack in its active
// phase then. It refuses one that does not fit between the remembered
// attacks, or whose limb is not the remembered attack's.
func (p *attackPolicy) attackAt(seq uint8, strike physics.BodyPart, lo, hi int64) (*attackRec, Refusal, float64, bool) {
	a := physics.ActionPunch
	if strike == physics.PartLowerLegL || strike == physics.PartLowerLegR {
		a = physics.ActionKick
	}
	if r := p.find(seq, a, lo, hi); r != nil {
		if r.strike != physics.PartUnknown && r.strike != strike {
			return nil, RefusedHitAttack, float64(strike), false
		}
		return r, 0, 0, true
	}
	slo, _ := p.moves.startBounds(a, physics.PhaseActive, lo)
	_, shi := p.moves.startBounds(a, physics.PhaseActive, hi)
	if gap, ok := p.fits(a, slo, shi); !ok {
		return nil, RefusedAttackRate, float64(gap) / float64(time.Millisecond), false
	}
	r := p.insert(attackRec{seq: seq, action: a, strike: strike, lo: slo, hi: shi, ended: p.n > 0 && p.recs[p.n-1].lo > slo})
	return r, 0, 0, true
}

// insert records r in start order, forgetting the oldest attack if full,
// and returns where it is kept.
func (p *attackPolicy) insert(r attackRec) *attackRec {
	if p.n == len(p.recs) {
		copy(p.recs[:], p.recs[1:])
		p.n--
	}
	i := p.n
	for i > 0 && p.recs[i-1].lo > r.lo {
		i--
	}
	copy(p.recs[i+1:p.n+1], p.recs[i:p.n])
	p.recs[i] = r
	p.n++
	return &p.recs[i]
}

// reset forgets every attack (a round reset).
func (p *attackPolicy) reset() { p.n = 0 }

// tickLead is how far ahead of its game clock a rival's ticks may run, at
// most, relative to the slowest they ran before: how far behind its clock
// an honest peer may fall and then catch up, running its missed ticks in a
// burst. The demo runs up to 60 missed ticks per frame and drops a backlog
// of more than 3 s (180 ticks); tickLead covers that and the two ticks a
// peer may run ahead. A peer that fell further behind and caught up is
// judged as if it had run its ticks later than it did; a cheater that
// numbers its packets faster than its clock runs gains at most tickLead of
// extra ticks, once, and must then fall behind as far to gain them again.
const tickLead = 3500 * time.Millisecond

// rivalClock counts the rival's ticks: each state packet carries the
// sender's sequence number, one per tick (Replicator.AppendPacket is called
// once per tick), so the increase of the sequence number between two
// accepted packets is how many ticks the rival ran between them. A tick
// runs at the game time its packet is stamped with, late or early; the
// count may run ahead of the packets' game times by at most tickLead: a
// token bucket, refilled at one tick per tick of game time, pays for
// every tick counted. It also remembers the last packets' ticks and game
// times, to place a hit report's game time among the rival's ticks.
type rivalClock struct {
	seq  uint32
	time clocksync.GameTime
	tick int64   // ticks counted
	bank float64 // ticks the count may still run ahead of the game time
	has  bool
	// the packet before the last: its sequence number and game time
	prevSeq  uint32
	prevTime clocksync.GameTime
	hasPrev  bool
	ring     [clockRing]tickAt // the last accepted packets, oldest first from next
	next     int
	fill     int
}

type tickAt struct {
	time clocksync.GameTime
	tick int64
}

// clockRing is how many of the rival's last packets rivalClock remembers:
// more than a hit report's repeat window holds at 60 per second.
const clockRing = 64

var tickLeadTicks = float64(tickLead / physics.TickDuration)

// advance counts an accepted packet (sequence number seq, game time t,
// later than the last) and returns its tick.
func (c *rivalClock) advance(seq uint32, t clocksync.GameTime) int64 {
	if !c.has {
		c.bank = tickLeadTicks
	} else {
		c.bank = min(tickLeadTicks, c.bank+float64(t-c.time)/float64(physics.TickDuration/time.Microsecond))
		if d := int64(int32(seq - c.seq)); d > 0 {
			d = min(d, int64(c.bank))
			c.tick += d
			c.bank -= float64(d)
		}
	}
	c.prevSeq, c.prevTime, c.hasPrev = c.seq, c.time, c.has
	c.seq, c.time, c.has = seq, t, true
	c.ring[c.next] = tickAt{time: t, tick: c.tick}
	c.next = (c.next + 1) % clockRing
	c.fill = min(c.fill+1, clockRing)
	return c.tick
}

// only reports whether the last packet's state is the rival's only tick
// stamped g: the packet just before it in the rival's numbering arrived,
// stamped earlier. A peer whose clock is coarser than its ticks (a burst of
// ticks run within one step of its clock) stamps several ticks alike; a
// hit report of game time g may then belong to another of them.
func (c *rivalClock) only(g clocksync.GameTime) bool {
	return c.hasPrev && c.seq-c.prevSeq == 1 && c.prevTime < g && c.time == g
}

// at returns the ticks the rival's tick of game time g may be within: at or
// after the last packet stamped at or before g, at or before the first
// stamped at or after g, and at most now (the tick of the packet being
// handled). A g older than every remembered packet is bounded below only by
// tickLead and the age.
func (c *rivalClock) at(g, now clocksync.GameTime, tick int64) (lo, hi int64) {
	hi = tick
	lo = tick - int64(float64(now-g)/float64(physics.TickDuration/time.Microsecond)+tickLeadTicks) - 1
	for k := range c.fill {
		e := c.ring[(c.next-1-k+2*clockRing)%clockRing] // newest first
		if e.time >= g {
			hi = min(hi, e.tick)
		}
		if e.time <= g {
			lo = max(lo, e.tick)
			break
		}
	}
	return lo, hi
}

// damageBudget refuses more damage per second than a move table allows: a
// token bucket in game time holding two of the table's strongest hits,
// refilled at one strongest hit per shortest attack (less the tolerance).
type damageBudget struct {
	rate   float64 // HP per µs of game time
	burst  float64
	tokens float64
	last   clocksync.GameTime
	primed bool
}

func newDamageBudget(m moveTable, tol time.Duration) damageBudget {
	per := max(m.shortest()-tol, physics.TickDuration)
	burst := 2 * float64(max(1, m.maxDamage))
	return damageBudget{rate: float64(max(1, m.maxDamage)) / float64(per/time.Microsecond), burst: burst, tokens: burst}
}

// take spends d HP at game time now if the budget allows it.
func (b *damageBudget) take(d int, now clocksync.GameTime) bool {
	if b.primed && now > b.last {
		b.tokens = min(b.burst, b.tokens+float64(now-b.last)*b.rate)
	}
	if !b.primed || now > b.last {
		b.last, b.primed = now, true
	}
	if float64(d) > b.tokens {
		return false
	}
	b.tokens -= float64(d)
	return true
}

// healthPolicy refuses a rival fighter's HP that rises, or a knocked-out
// fighter getting up, outside a new round (see roundPolicy): such a state
// is refused (RefusedHealing) at once.
type healthPolicy struct {
	hp int
	ko bool
}

// judge checks a state's HP and action, in no new round.
func (p *healthPolicy) judge(s *physics.FighterState) bool { return !p.rises(s) }

// rises reports whether s shows HP above the last accepted, or a
// knocked-out fighter up again.
func (p *healthPolicy) rises(s *physics.FighterState) bool {
	return s.HP > p.hp || (p.ko && s.Action != physics.ActionKO)
}

// commit records an accepted state.
func (p *healthPolicy) commit(s *physics.FighterState) {
	p.hp, p.ko = s.HP, s.HP == 0 || s.Action == physics.ActionKO
}

// roundPolicy pairs the rival's round resets with this peer's. Every
// packet carries its sender's round (the resets it declared); a rival's
// packet of a round newer than its last accepted packet's is the first of
// a new round: its fighter may heal and its objects may be placed anew, if
// this peer declared a reset (Replicator.ResetRound) that no rival's new
// round has matched yet. Without one it is held back (not
// applied, not counted) until this peer declares it, however long the
// link was down: a blackout cannot split a reset both peers declared.
//
// A declared reset stays owed for roundGrace of the rival's stream (the
// time since the later of the declaration and the end of the last gap in
// the stream) while the rival's states stay in the old round; then it
// lapses, so a rival cannot keep a reset for a heal later in the round.
type roundPolicy struct {
	refused uint32             // the last rival's round refused (RefusedRound)
	aheadOf uint32             // the last rival's round taken bodies only (see ahead)
	round   uint32             // the rival's round in the last accepted packet
	owed    int                // resets declared here not yet matched by the rival's
	owedAt  clocksync.GameTime // when the last was declared
}

// roundGrace is how long a reset declared here waits, in the rival's
// stream, for the rival's own: the rival's game declares it on what it
// sees, which after an outage comes a game's reaction (2 s in cmd/ragsim)
// later than here.
const roundGrace = 4 * time.Second

// newRound reports whether a state of the rival's round inRound starts a
// new round.
func (p *roundPolicy) newRound(inRound uint32) bool { return inRound > p.round }

// ahead reports whether a packet of the rival's round inRound, one this
// peer has not declared yet but sees decided (its bodies apply), is the
// first of that round: the rival's reset placed its objects anew.
func (p *roundPolicy) ahead(inRound uint32) bool {
	if inRound <= p.aheadOf {
		return false
	}
	p.aheadOf = inRound
	return true
}

// lapse drops an owed reset the rival's old-round states outlasted (now:
// game time; gapEnd: the end of the last gap in the rival's stream).
func (p *roundPolicy) lapse(now, gapEnd clocksync.GameTime) {
	if p.owed > 0 && now.Sub(max(p.owedAt, gapEnd)) > roundGrace {
		p.owed = 0
	}
}

// declare records a reset declared here at now.
func (p *roundPolicy) declare(now clocksync.GameTime) {
	p.owed = min(p.owed+1, 2)
	p.owedAt = now
}

// refuse counts the rival's round inRound, started on its word alone
// (see HandlePacket), as refused, once.
func (p *roundPolicy) refuse(r *Replicator, inRound uint32) {
	if inRound > p.refused {
		p.refused = inRound
		_ = r.refuse(0, RefusedRound, float64(inRound))
	}
}

// commit records an accepted packet of round inRound.
func (p *roundPolicy) commit(inRound uint32) {
	if inRound > p.round {
		p.round = inRound
		p.owed = max(0, p.owed-1)
	}
}

// errNotOwnFighter is wrapped by the *physics.StateError of a hit report
// whose victim is not a fighter this peer owns.
var errNotOwnFighter = errors.New("hit report on a fighter this peer does not own")

// ResetRound declares a new round at game time now, the only way HP may
// rise: every fighter gets up with full HP (physics.Fighter.Revive; the
// rival's copy until the rival's states say otherwise), and the rival's objects may start the new
// round (its fighter back to full HP, up from a knock-out, anywhere) in
// its first state of a new round (see roundPolicy: the packets carry each
// peer's round, so the two resets pair up whenever the rival's arrives).
// The rival's attack history is forgotten then (a knocked-out fighter's
// last attack does not constrain its first of the new round), and so is
// where its objects were.
//
// A round ends only on what both worlds can check: a fighter knocked out
// at 0 HP in its owner's states (this peer's own fighter, or the rival's
// as its accepted states show it), or the round's time
// (Config.RoundLength since the last reset, or the first tick) being up.
// A rival whose packets show a newer round than this peer's is judged on
// what this peer sees: while the round is decided here too, or if the
// rival's stream was cut before it (an outage may have hidden its
// fighter's knock-out), its bodies move as its states say but its
// fighter keeps its HP and action until this peer declares the round; if
// none of that holds here, its fighter was knocked out in the states this
// peer lost (it says so by its round), and is knocked out here (HP 0),
// which lets this peer's game end the round too. A round the rival started
// with neither is refused and counted (RefusedRound, once per round), and
// its states judged as the old round's. A reset declared here otherwise is
// refused: it changes nothing, is counted (RefusedRound) and returns a
// *RefusedError whose Value is the round's age in ms.
func (r *Replicator) ResetRound(now clocksync.GameTime) error {
	if !r.roundOver(now) {
		return r.refuse(0, RefusedRound, float64(now.Sub(r.roundStart))/float64(time.Millisecond))
	}
	r.roundStart = now
	r.round++
	r.rounds.declare(now)
	for _, o := range r.objs {
		if o.fighter != nil {
			// The rival's copy too, as the rival's reset will: until
			// its new round's states come, its last ones (still the
			// old round's) are all this peer has of it, and after an
			// outage they may be long gone.
			o.fighter.Revive(o.fighter.MaxHP())
		}
	}
	return nil
}

// roundOver reports whether the round may end at now: it is decided
// (roundDecided), or every fighter is at full HP (a reset then heals
// nothing).
func (r *Replicator) roundOver(now clocksync.GameTime) bool {
	if r.roundDecided(now, 0) {
		return true
	}
	for _, o := range r.objs {
		switch {
		case o.fighter == nil:
		case o.mode == ModeOwned && o.fighter.HP() != o.fighter.MaxHP():
			return false
		case o.mode == ModeRemote && (o.health.hp != o.fighter.MaxHP() || o.health.ko):
			return false
		}
	}
	return true // nothing to heal (the first round's start): harmless
}

// roundDecided reports whether a fighter is knocked out at 0 HP in its
// owner's states or the round's time is up (but for slack: the peers'
// rounds start apart).
func (r *Replicator) roundDecided(now clocksync.GameTime, slack time.Duration) bool {
	if l := r.roundLength(); l > 0 && now.Sub(r.roundStart) >= l-slack {
		return true
	}
	for _, o := range r.objs {
		switch {
		case o.fighter == nil:
		case o.mode == ModeOwned && o.fighter.HP() == 0:
			return true
		case o.mode == ModeRemote && o.health.hp == 0:
			return true
		}
	}
	return false
}

// rivalAhead handles a state of fighter o of a round newer than this
// peer's that no reset declared here pairs with: unless the round is
// decided here already, the rival's fighter was knocked out in states this
// peer lost, so it is knocked out here (see ResetRound).
func (r *Replicator) rivalAhead(o *replicated, now clocksync.GameTime) {
	if o.fighter == nil || o.health.ko || r.roundDecided(now, roundGrace) {
		return
	}
	s := o.fighter.State()
	s.HP, s.Action, s.Phase, s.Strike = 0, physics.ActionKO, physics.PhaseNone, physics.PartUnknown
	if o.fighter.SetRemoteState(s) == nil {
		o.health.hp, o.health.ko = 0, true
	}
}

// roundLength is Config.RoundLength with its default (0: none).
func (r *Replicator) roundLength() time.Duration {
	switch {
	case r.cfg.RoundLength == 0:
		return defaultRoundLength
	case r.cfg.RoundLength < 0:
		return 0
	}
	return r.cfg.RoundLength
}

// defaultRoundLength is Config.RoundLength's default.
const defaultRoundLength = 60 * time.Second

// refuse counts a refusal and returns its error.
func (r *Replicator) refuse(id physics.ObjectID, why Refusal, v float64) error {
	r.stats.Refused[why]++
	return &RefusedError{Object: id, Reason: why, Value: v}
}

// initRival sets up the rules object o is held to while the rival owns it.
func (o *replicated) initRival() {
	o.motion.lim = propLimits
	if o.fighter != nil {
		o.motion.lim = fighterLimits
	}
	if o.fighter == nil {
		return
	}
	m := movesOf(o.fighter.Tuning())
	o.attacks = newAttackPolicy(m, attackTolerance)
	o.budget = newDamageBudget(m, attackTolerance)
	o.health = healthPolicy{hp: o.fighter.HP(), ko: o.fighter.HP() == 0}
}

// judgeRival holds a rival's state os of object o, authorized as d and
// valid, to every rule of the rival's: its fighter's HP, attacks' pace and
// motion or, for a claim on a prop, its fighter's reach. The first packet
// of a round both peers declared (r.newRound, see roundPolicy) is held to
// none of them: the rival's objects may start the round anywhere. So is
// the first packet of a round the rival started before this peer declared
// it, on a result this peer sees too (r.placed: only its bodies apply, see
// HandlePacket): the rival's reset moved its objects to their starts. It
// changes nothing but the count of a refusal. commitRival records an
// accepted state.
func (r *Replicator) judgeRival(o *replicated, os *physics.ObjectState, d decision, now clocksync.GameTime) error {
	if r.placed {
		return nil
	}
	if r.bodiesOnly && o.fighter != nil {
		return r.judgeMotion(o, os, d, now)
	}
	if err := r.judgeMotionRules(o, os, d, now); err != nil {
		return err
	}
	if o.fighter != nil {
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

// judgeMotionRules holds a fighter's state to its HP, its attacks' pace and
// its body's motion, and a prop's to its motion.
func (r *Replicator) judgeMotionRules(o *replicated, os *physics.ObjectState, d decision, now clocksync.GameTime) error {
	if o.fighter == nil {
		return r.judgeMotion(o, os, d, now)
	}
	if !o.health.judge(&os.Fighter) {
		return r.refuse(os.ID, RefusedHealing, float64(os.Fighter.HP))
	}
	if gap, ok := o.attacks.judgeState(&os.Fighter, r.inTick); !ok {
		return r.refuse(os.ID, RefusedAttackRate, float64(gap)/float64(time.Millisecond))
	}
	if err := r.judgeMotion(o, os, d, now); err != nil {
		// Refused, but the attack it shows passed its rule: it is
		// remembered, so hit reports cannot claim it again as an
		// attack whose states were lost.
		o.attacks.commitState(&os.Fighter, r.inTick)
		return err
	}
	return nil
}

// commitRival records a rival's accepted state os of object o in the rules
// judgeRival holds it to.
func (r *Replicator) commitRival(o *replicated, os *physics.ObjectState) {
	if r.placed {
		o.motion.forget() // placed anew
	}
	o.motion.commit(o, os, r.inTick, r.floor, r.in.Time)
	if o.fighter == nil || r.bodiesOnly {
		return
	}
	if r.newRound {
		o.attacks.reset() // a round reset ended its attack
	}
	o.attacks.commitState(&os.Fighter, r.inTick)
	o.health.commit(&os.Fighter)
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
	imp := min(verifiedImpulse(att, h.strike, h.g, h.impulse), att.attacks.moves.impulseCap(rec.action))
	ev := physics.HitEvent{Attacker: h.attacker, Victim: h.victim, Part: h.part, Impulse: imp, Tick: r.world.Tick(),
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
	// Its impulse is this world's own measure: the copy moves only as
	// the rival's accepted states, held to the motion rules, move it.
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

// hitTolerance is how far (m), beyond the attacker's reported copy error,
// the attacker's striking limb, as its attacker's states placed it, may be
// from the victim's body, as the victim's owner recorded it over the span
// the attacker saw, for the victim's owner to confirm the hit. See the
// package documentation for why 0.25 m.
const hitTolerance = 0.25

// maxCopyError is the largest copy error (m) a hit report is judged with:
// a report of a hit on a copy farther than this from the newest state the
// attacker had of it is stale (Stats.Hits.Stale): neither confirmed nor
// refused. With hitTolerance it bounds a report's slack at 0.75 m.
const maxCopyError = 0.5

// attackTolerance is the slack of the rule that an attack may not start
// before the previous one could have ended: two ticks (the rule counts the
// rival's ticks, see tickLead). Lost packets and ticks run in bursts need
// none: each state bounds its attack's start by the phase it shows, in
// ticks, and a lost one only widens the bounds.
const attackTolerance = 2 * physics.TickDuration

// propReach is how close (m) the claimer's fighter must have come to a prop,
// body to body, in this peer's world (now or within propReachWindow), for a
// claim on the prop to be accepted. See the package documentation.
const propReach = 1.0

// claimGap is the longest silence of the rival's stream after which its
// claims are not judged by reach for as long again: a claim made during a
// blackout, on the claimer's copy of a prop this peer's world moved on, may
// show neither this peer's history nor the claim's own packet (its fighter
// may have left the prop since) in reach.
const claimGap = 250 * time.Millisecond

// propReachWindow is how far back in this peer's history a prop claim is
// judged.
const propReachWindow = time.Second

// motionLimits is what an object's body can do between two of its owner's
// states, with the tolerances that keep honest play clear of them. Honest
// bot fights (TestHonestMotion, cmd/ragsim) peak at 10.1 m/s for a
// fighter's body, 8.4 m/s of velocity change in a tick (a hit), 0.12 m of
// joint separation, 6 m/s for a crate; a jump lifts a fighter's lowest
// body 1.6 m at most.
type motionLimits struct {
	speed float64 // m/s, any body
	dv    float64 // m/s of velocity change per elapsed tick, any body
	slack float64 // m a body may be off its path (quantization, correction of the owner's copy)
	joint float64 // m a joint may be pulled apart; 0: not checked
}

var (
	fighterLimits = motionLimits{speed: 16, dv: 14, slack: 0.3, joint: 0.35}
	propLimits    = motionLimits{speed: 20, dv: 20, slack: 0.3}
)

const (
	// airHeight is how high (m) above the arena's floor a fighter's lowest
	// body is "in the air": above a crate, and above most of a jump. (No
	// limit on the time in the air: a fighter may stand on a crate on a
	// knocked-out rival for as long as it likes.)
	airHeight = 1.2
	// maxLaunch (m/s) and gravity (m/s²) bound how high a fighter off the
	// ground may rise: a jump leaves at about 5 m/s.
	maxLaunch = 8.0
	gravity   = 9.8
	// claimSlack is how far (m) a claimed prop may be from where this
	// peer's world had it within the last propReachWindow: the claimer's
	// copy follows this peer's states, a latency behind.
	claimSlack = 1.0
)

// motion is what the motion rules remember of a rival's object: its last
// accepted state's bodies and rival tick, its last tick on the ground, and
// the speeds of its bodies in its last accepted states (to judge the
// impulse of its hits).
type motion struct {
	speeds [speedRing]speedAt
	nspeed int
	lim    motionLimits
	pos    [physics.MaxBodiesPerObject]physics.Vec2
	vel    [physics.MaxBodiesPerObject]physics.Vec2
	tick   int64   // rival tick of the last accepted state
	ground int64   // rival tick of the last accepted state on the ground (fighters)
	low    float64 // its lowest body's height then
	has    bool
}

// forget drops the last state (a round reset, a transfer): the next state
// is judged on its own.
func (m *motion) forget() { m.has = false }

func (m *motion) commit(o *replicated, os *physics.ObjectState, tick int64, floor float64, g clocksync.GameTime) {
	sp := &m.speeds[m.nspeed%speedRing]
	m.nspeed++
	sp.t = g
	for i, b := range os.Bodies {
		m.pos[i], m.vel[i] = b.Pos, b.Vel
		sp.v[i] = float32(b.Vel.Len())
	}
	if low := lowest(os); !m.has || low-floor <= airHeight {
		m.ground, m.low = tick, low
	}
	m.tick, m.has = tick, true
}

func lowest(os *physics.ObjectState) float64 {
	low := inf
	for _, b := range os.Bodies {
		low = min(low, b.Pos.Y)
	}
	return low
}

// judgeMotion holds a rival's state os of object o (authorized as d) to
// what o's body can do: speeds, velocity change and displacement since the
// rival's last accepted state of it (in the rival's ticks, so a lost
// packet or a blackout only widens the bounds), joint separation, time in
// the air; and a claimed prop to where this peer's world had it. It changes
// nothing.
func (r *Replicator) judgeMotion(o *replicated, os *physics.ObjectState, d decision, now clocksync.GameTime) error {
	m := &o.motion
	lim := &m.lim
	for _, b := range os.Bodies {
		if v := b.Vel.Len(); v > lim.speed {
			return r.refuse(os.ID, RefusedMotion, v)
		}
	}
	if lim.joint > 0 {
		if sep := jointSeparation(o.obj.Layout(), os.Bodies); sep > lim.joint {
			return r.refuse(os.ID, RefusedMotion, sep)
		}
	}
	claimed := d.owner != d.fromOwner && d.owner == r.reg.remote
	if claimed && !(now.Sub(r.gapEnd) <= claimGap && r.gapEnd != 0) {
		if dist := r.claimedMove(o, os); dist > claimSlack {
			return r.refuse(os.ID, RefusedMotion, dist)
		}
	}
	if !m.has || claimed || o.mode != ModeRemote {
		return nil
	}
	dt := max(1, r.inTick-m.tick)
	span := float64(dt) * physics.TickDuration.Seconds()
	for i, b := range os.Bodies {
		if dv := b.Vel.Sub(m.vel[i]).Len(); dv > lim.dv*float64(dt) {
			return r.refuse(os.ID, RefusedMotion, dv)
		}
		if dp := b.Pos.Sub(m.pos[i]).Len(); dp > lim.speed*span+lim.slack {
			return r.refuse(os.ID, RefusedMotion, dp)
		}
	}
	if low := lowest(os); o.fighter != nil && low-r.floor > airHeight {
		air := time.Duration(r.inTick-m.ground) * physics.TickDuration
		// Off the ground, the body rises at most as a launch at
		// maxLaunch would carry it under gravity.
		ta := min(air.Seconds(), maxLaunch/gravity)
		rise := maxLaunch*ta - gravity*ta*ta/2 + lim.slack
		if low-m.low > rise {
			return r.refuse(os.ID, RefusedAir, float64(air)/float64(time.Millisecond))
		}
	}
	return nil
}

// jointSeparation returns the largest distance between the two ends of a
// joint of layout l at the given body states.
func jointSeparation(l *physics.Layout, bodies []physics.BodyState) float64 {
	var sep float64
	for i, lb := range l.Bodies {
		if lb.Parent < 0 || i >= len(bodies) {
			continue
		}
		p, c := &bodies[lb.Parent], &bodies[i]
		a := p.Pos.Add(rotate(lb.AnchorParent, p.Angle))
		b := c.Pos.Add(rotate(lb.AnchorSelf, c.Angle))
		sep = max(sep, a.Sub(b).Len())
	}
	return sep
}

func rotate(v physics.Vec2, angle float64) physics.Vec2 {
	s, c := math.Sincos(angle)
	return physics.V(c*v.X-s*v.Y, s*v.X+c*v.Y)
}

// claimedMove returns how far the claim's state os of prop o is from where
// this peer's world had the prop, now or within propReachWindow: a thief
// may not move a prop to its fighter in the claim.
func (r *Replicator) claimedMove(o *replicated, os *physics.ObjectState) float64 {
	best := inf
	for i, b := range os.Bodies {
		p := o.obj.Pose(i).Pos
		d := b.Pos.Sub(p).Len()
		if r.hist != nil && r.hist.count > 0 {
			d = min(d, r.hist.moved(o, i, b.Pos, propReachWindow, r.hist.t[r.hist.slot(0)]))
		}
		if i == 0 {
			best = d
		}
		best = max(best, d)
	}
	return best
}

// speedRing is how many of a rival object's last accepted states' body
// speeds are kept: 267 ms at 60 per second, more than a hit report's
// window around its hit.
const speedRing = 16

type speedAt struct {
	t clocksync.GameTime
	v [physics.MaxBodiesPerObject]float32
}

// limbSpeed returns the largest speed body i had in the accepted states
// stamped within [g-hitSpeedBefore, g+hitSpeedAfter], or, if none was (the
// swing's states were lost), the body speed limit; ok is false without
// any state.
func (m *motion) limbSpeed(i int, g clocksync.GameTime) (v float64, ok bool) {
	for k := range min(m.nspeed, speedRing) {
		s := &m.speeds[k]
		if s.t >= g-us(hitSpeedBefore) && s.t <= g+us(hitSpeedAfter) {
			v, ok = max(v, float64(s.v[i])), true
		}
	}
	if !ok && m.nspeed > 0 {
		// The swing's states were lost (a blackout): the speed limit.
		return m.lim.speed, true
	}
	return v, ok
}

const (
	// hitSpeedBefore and hitSpeedAfter are the span of the attacker's
	// states around a hit whose striking limb's speed bounds the hit's
	// impulse: the swing before it, and the state of the hit's tick.
	hitSpeedBefore = 100 * time.Millisecond
	hitSpeedAfter  = 20 * time.Millisecond

	// impulseFactor bounds a hit's impulse by the striking limb's
	// momentum: impulse ≤ impulseFactor · limb mass · limb speed. The
	// arm or leg behind the limb adds to its own mass: honest bot fights
	// peak at 4.3 times the limb's momentum over the same span (69 hits,
	// TestHonestMotion's calibration). Honest damage is unchanged for a
	// hit below the factor; above it, it is capped. So is a hit's impulse
	// above its move's honest peak (Tuning.MaxPunchImpulse,
	// MaxKickImpulse), whatever the limb's speed.
	impulseFactor = 5.0
)

// verifiedImpulse caps a hit's reported impulse (a hint) by what the
// victim's peer can check: the striking limb's mass and its speed in the
// attacker's own accepted states around the hit's game time g (see
// impulseFactor). An attacker without any accepted state deals the least
// damage a hit can deal.
func verifiedImpulse(att *replicated, strike physics.BodyPart, g clocksync.GameTime, reported float64) float64 {
	i := strike.Index()
	if i < 0 || i >= att.obj.NumBodies() {
		return 0
	}
	v, ok := att.motion.limbSpeed(i, g)
	if !ok {
		return 0
	}
	return min(reported, impulseFactor*att.obj.Bodies()[i].M_mass*v)
}
