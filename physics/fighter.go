package physics

import (
	"math"
	"time"

	"github.com/ByteArena/box2d"

	"github.com/ragsync/ragsync/internal/angle"
)

// Fighter is an active ragdoll: ten bodies held together by motorised
// revolute joints, kept upright by a balance controller and moved by its
// input. Everything it does is forces, torques and joint-motor targets, so it
// stays physical: it can be pushed, knocked down, and it gets back up.
//
// Its controller runs inside World.Step, before box2d steps. A fighter whose
// peer does not own it (a remote fighter being corrected toward received
// states) should be switched off with SetControlled(false), and may then
// follow its owner's decisions (SetFollowing).
type Fighter struct {
	obj    *Object
	world  *World
	tuning Tuning

	joints        [numJoints]*box2d.B2RevoluteJoint
	limits        [numJoints][2]float64 // limits for the current facing
	limitsPending [numJoints]bool       // limits still widened after a turn

	facing     Facing
	hp, maxHP  int
	controlled bool
	following  bool
	noHits     bool // SetHitsEnabled(false)

	input, prevInput Input
	buffered         [3]int // ticks left for a pressed jump, punch, kick

	action      Action
	actionTicks int
	grounded    bool
	fallTicks   int

	attack     Action // ActionPunch, ActionKick or ActionUnknown
	phase      AttackPhase
	phaseTicks int
	cooldown   int
	attackSeq  uint8 // attacks started (wraps)
	doneSeq    int   // following: AttackSeq&3 of the last attack played out here, or -1
	strikeBody int   // body index of the striking limb
	punches    int   // punches thrown (alternates the arm)
	hitVictims []ObjectID

	gait float64 // walking cycle phase, radians (from the world's clock)
}

const (
	bufJump = iota
	bufPunch
	bufKick
)

// Pose targets (joint angles, facing right) per situation.
var (
	poseStance = [numJoints]float64{jNeck: 0, jShoulderL: 0.6, jElbowL: 1.9, jShoulderR: 0.9, jElbowR: 1.7,
		jHipL: 0.35, jKneeL: -0.4, jHipR: -0.25, jKneeR: -0.2}
	poseBlock = [numJoints]float64{jNeck: 0, jShoulderL: 1.4, jElbowL: 2.5, jShoulderR: 1.6, jElbowR: 2.4,
		jHipL: 0.9, jKneeL: -1.3, jHipR: 0.2, jKneeR: -1.0}
	poseAir = [numJoints]float64{jNeck: 0, jShoulderL: 1.0, jElbowL: 1.2, jShoulderR: 1.2, jElbowR: 1.0,
		jHipL: 0.8, jKneeL: -1.4, jHipR: 0.4, jKneeR: -1.2}
	poseGetUp = [numJoints]float64{jNeck: 0, jShoulderL: 0.5, jElbowL: 1.0, jShoulderR: 0.5, jElbowR: 1.0,
		jHipL: 0.6, jKneeL: -0.9, jHipR: 0.3, jKneeR: -0.6}
)

// ID returns the fighter's object id.
func (f *Fighter) ID() ObjectID { return f.obj.id }

// Object returns the fighter's object (bodies, state, layout, shapes).
func (f *Fighter) Object() *Object { return f.obj }

// tuningOf returns the fighter's tuning (defaults filled in).
func (f *Fighter) tuningOf() Tuning { return f.tuning }

// SetInput sets the controls for the next steps (until changed). Bits
// outside InputMask are dropped.
func (f *Fighter) SetInput(in Input) { f.input = in & InputMask }

// Input returns the controls set with SetInput (or, for a fighter that
// follows its owner, its owner's).
func (f *Fighter) Input() Input { return f.input }

// Action returns what the fighter is doing.
func (f *Fighter) Action() Action { return f.action }

// strikingPart returns the limb that hits during the active phase of the
// attack in progress (a lower arm for a punch, the right lower leg for a
// kick), or PartUnknown.
func (f *Fighter) strikingPart() BodyPart {
	if f.phase == PhaseNone {
		return PartUnknown
	}
	return PartOf(f.strikeBody)
}

// cooldownLeft returns the ticks left before the fighter may attack again.
func (f *Fighter) cooldownLeft() int { return f.cooldown }

// Facing returns the direction the fighter faces.
func (f *Fighter) Facing() Facing { return f.facing }

// Grounded reports whether a foot touched something below it at the last
// update.
func (f *Fighter) Grounded() bool { return f.grounded }

// HP returns the fighter's health; MaxHP its full health.
func (f *Fighter) HP() int    { return f.hp }
func (f *Fighter) MaxHP() int { return f.maxHP }

// isControlled reports whether the fighter's controller runs (see
// SetControlled).
func (f *Fighter) isControlled() bool { return f.controlled }

// SetControlled switches the controller on or off. Off, the fighter is a limp
// ragdoll (its joints keep their limits and a little friction) whose state
// comes from elsewhere, e.g. correction toward a remote peer's snapshots; its
// HP, action, facing and attack are then set with SetRemoteState.
func (f *Fighter) SetControlled(on bool) {
	if on == f.controlled {
		return
	}
	f.controlled = on
	f.endAttack()
	f.fallTicks = 0
	if on && f.action != ActionKO {
		f.setAction(ActionGettingUp)
	}
}

// isFollowing reports whether an uncontrolled fighter follows its owner's
// decisions (see SetFollowing).
func (f *Fighter) isFollowing() bool { return f.following }

// SetFollowing makes a fighter whose controller is off (SetControlled(false))
// move its muscles as its owner's do, instead of lying limp: each step it
// holds the pose, balance and walking of the action, attack and facing its
// owner last reported (FollowRemoteState), walking as the input set with
// SetInput says, but it decides nothing itself: it starts no attack, jump or
// fall and does not turn; an attack begins only with its owner's report and
// runs on its owner's timers. The local copy of a remote fighter then moves between two of its
// owner's states as the owner's own fighter does, which a correction can use
// as its prediction. It has no effect on a controlled fighter.
func (f *Fighter) SetFollowing(on bool) { f.following = on }

// SetHitsEnabled switches the fighter's hits on (the default) or off. Off,
// the world reports no hit (HitEvent) that names the fighter, as attacker or
// as victim: its bodies still collide and push as before, but nothing it
// strikes, and nothing that strikes it, counts as a hit, and an attack that
// touches it stays free to hit it once hits are on again. A game switches
// off the copy of a remote fighter that is only a guess (no state of it for
// longer than the rival would judge a hit on it by: ownership.Replicator
// does this), so that neither screen shows a hit the victim's owner cannot
// apply.
func (f *Fighter) SetHitsEnabled(on bool) { f.noHits = !on }

// HitsEnabled reports whether the fighter's hits are on (SetHitsEnabled).
func (f *Fighter) HitsEnabled() bool { return !f.noHits }

// FighterState is what a fighter is besides its bodies: what snapshots carry
// for fighters, and what SetRemoteState applies to a fighter whose owner is
// elsewhere. The zero value is invalid (Action and Facing must be set).
type FighterState struct {
	HP     int
	Action Action
	Facing Facing
	// Phase and Strike describe the attack in progress: its phase and the
	// striking limb (PartLowerArmL or R for a punch, PartLowerLegL or R
	// for a kick). Both are zero when not attacking.
	Phase  AttackPhase
	Strike BodyPart
	// AttackSeq counts attacks (mod 4), so a peer can tell one attack from
	// the next and count each attack's hits once.
	AttackSeq uint8
}

// validate checks s for a fighter with the given full health (0: maxWireHP)
// and returns the first bad field, or "".
func (s *FighterState) validate(maxHP int) (field string, value float64) {
	if maxHP == 0 {
		maxHP = maxWireHP
	}
	switch {
	case s.HP < 0 || s.HP > maxHP:
		return "hp", float64(s.HP)
	case !s.Action.isValid():
		return "action", float64(s.Action)
	case s.Facing != FacingLeft && s.Facing != FacingRight:
		return "facing", float64(s.Facing)
	case s.Phase > PhaseRecovery:
		return "phase", float64(s.Phase)
	case s.AttackSeq > 3:
		return "attackseq", float64(s.AttackSeq)
	case s.Phase == PhaseNone && s.Strike != PartUnknown:
		return "strike", float64(s.Strike)
	case s.Phase != PhaseNone && s.Action == ActionPunch && s.Strike != PartLowerArmL && s.Strike != PartLowerArmR:
		return "strike", float64(s.Strike)
	case s.Phase != PhaseNone && s.Action == ActionKick && s.Strike != PartLowerLegL && s.Strike != PartLowerLegR:
		return "strike", float64(s.Strike)
	case s.Phase != PhaseNone && s.Action != ActionPunch && s.Action != ActionKick:
		return "phase", float64(s.Phase)
	}
	return "", 0
}

// State returns the fighter's non-body state.
func (f *Fighter) State() FighterState {
	s := FighterState{HP: f.hp, Action: f.action, Facing: f.facing, Phase: f.phase, AttackSeq: f.attackSeq & 3}
	if f.phase != PhaseNone {
		s.Strike = PartOf(f.strikeBody)
	}
	return s
}

// validate checks s as a state of f (see SetRemoteState).
func (f *Fighter) validate(s *FighterState) error {
	if field, v := s.validate(f.maxHP); field != "" {
		return &StateError{Object: f.obj.id, Body: -1, Field: field, Value: v, Err: ErrOutOfRange}
	}
	return nil
}

// SetRemoteState applies s (from the owner's snapshot) to a fighter whose
// controller is off: HP, action, facing (turning the joint limits around) and
// the attack in progress, so that its striking limb produces hit events here
// too (each attack, told apart by AttackSeq, hits each victim once). It
// returns an error wrapping ErrOutOfRange, and changes nothing, for an
// invalid or inconsistent s.
func (f *Fighter) SetRemoteState(s FighterState) error {
	if err := f.validate(&s); err != nil {
		return err
	}
	f.hp = s.HP
	f.setAction(s.Action)
	f.setFacing(s.Facing)
	if s.AttackSeq != f.attackSeq&3 || (s.Phase != PhaseNone && f.phase == PhaseNone) {
		f.hitVictims = f.hitVictims[:0] // a new attack
	}
	f.attackSeq = s.AttackSeq
	f.phase = s.Phase
	f.attack = ActionUnknown
	if s.Phase != PhaseNone {
		f.attack, f.strikeBody = s.Action, s.Strike.Index()
	}
	return nil
}

// setHP sets the fighter's health, clamped to [0, MaxHP]. At 0 the fighter is
// knocked out.
func (f *Fighter) setHP(hp int) {
	f.hp = max(0, min(hp, f.maxHP))
	if f.hp == 0 && f.controlled {
		f.endAttack()
		f.setAction(ActionKO)
	}
}

// Revive restores hp (clamped to 1..MaxHP) to a knocked-out or fallen
// fighter and makes it get up.
func (f *Fighter) Revive(hp int) {
	f.hp = max(1, min(hp, f.maxHP))
	f.endAttack()
	f.setAction(ActionGettingUp)
}

// knockDown makes the fighter fall limp (then get up), as a strong hit does.
// It does nothing to a knocked-out fighter.
func (f *Fighter) knockDown() {
	if f.action == ActionKO {
		return
	}
	f.endAttack()
	f.setAction(ActionDown)
}

// Damage returns how much HP hit h takes from this fighter, without applying
// it:
//
//	damage = round(Impulse · DamagePerImpulse · part multiplier · block factor)
//
// clamped to [1, MaxHitDamage], where the part multiplier is HeadMultiplier
// for the head, TorsoMultiplier for the torso and LimbMultiplier otherwise,
// and the block factor is BlockFactor if the fighter was blocking when hit
// (h.Blocked) and 1 otherwise. A hit on another fighter takes 0.
func (f *Fighter) Damage(h HitEvent) int {
	if h.Victim != f.obj.id || !(h.Impulse > 0) || !isFinite(h.Impulse) {
		return 0
	}
	t := &f.tuning
	m := t.LimbMultiplier
	switch h.Part {
	case PartHead:
		m = t.HeadMultiplier
	case PartTorso:
		m = t.TorsoMultiplier
	}
	if h.Blocked {
		m *= t.BlockFactor
	}
	d := math.Round(h.Impulse * t.DamagePerImpulse * m)
	return int(max(1, min(d, float64(t.MaxHitDamage))))
}

// ApplyHit applies hit h to this fighter, the victim, and returns the damage
// taken (see Damage). The victim's owner calls it: the sync layer decides
// which peer that is. An unblocked hit of at least KnockdownImpulse knocks
// the fighter down; HP reaching 0 knocks it out.
func (f *Fighter) ApplyHit(h HitEvent) int {
	d := f.Damage(h)
	if d == 0 || f.hp == 0 {
		return 0
	}
	f.setHP(f.hp - d)
	if f.hp > 0 && !h.Blocked && h.Impulse >= f.tuning.KnockdownImpulse {
		f.knockDown()
		f.knockback(h.Attacker)
	}
	return d
}

// knockback shoves the upper body away from the attacker (a velocity change
// of KnockbackSpeed on torso, head and arms), so a knocked-down fighter topples
// instead of crumpling where it stands.
func (f *Fighter) knockback(attacker ObjectID) {
	if f.world == nil || f.world.b2.IsLocked() {
		return
	}
	dir := -f.facing.sign() // backward
	if a := f.world.Fighter(attacker); a != nil && a != f {
		if a.obj.bodies[0].M_sweep.C.X < f.obj.bodies[0].M_sweep.C.X {
			dir = 1
		} else {
			dir = -1
		}
	}
	// The whole upper body gets the same velocity change, so no joint is
	// yanked apart.
	for i := PartTorso.Index(); i <= PartLowerArmR.Index(); i++ {
		b := f.obj.bodies[i]
		b.ApplyLinearImpulseToCenter(box2d.B2Vec2{X: dir * f.tuning.KnockbackSpeed * b.M_mass, Y: 0}, true)
	}
}

// striking reports whether body index i is the striking limb of an attack in
// its active phase (for a fighter without control, as last set by
// SetRemoteState).
func (f *Fighter) striking(i int) bool {
	return f.phase == PhaseActive && i == f.strikeBody
}

func (f *Fighter) hasHit(id ObjectID) bool {
	for _, v := range f.hitVictims {
		if v == id {
			return true
		}
	}
	return false
}

func (f *Fighter) setAction(a Action) {
	if a != f.action {
		f.action = a
		f.actionTicks = 0
	}
}

func (f *Fighter) endAttack() {
	f.attack, f.phase, f.phaseTicks = ActionUnknown, PhaseNone, 0
}

// afterWrite runs after WriteState teleported the fighter.
func (f *Fighter) afterWrite() { f.fallTicks = 0 }

// setFacing turns the fighter around: joint limits are mirrored. So that no
// joint is snapped across, a joint whose angle is outside its new limits gets
// the union of old and new limits until its motor has brought it inside.
func (f *Fighter) setFacing(to Facing) {
	if to == f.facing {
		return
	}
	f.facing = to
	for j, rj := range f.joints {
		lo, hi := mirrorLimits(jointLimits[j], to)
		f.limits[j] = [2]float64{lo, hi}
		a := jointAngle(rj)
		if a >= lo && a <= hi {
			rj.SetLimits(lo, hi)
			f.limitsPending[j] = false
			continue
		}
		rj.SetLimits(min(lo, rj.M_lowerAngle, a), max(hi, rj.M_upperAngle, a))
		f.limitsPending[j] = true
	}
}

// settleLimits narrows widened limits once the joint is inside its own.
func (f *Fighter) settleLimits() {
	for j, rj := range f.joints {
		if !f.limitsPending[j] {
			continue
		}
		lo, hi := f.limits[j][0], f.limits[j][1]
		if a := jointAngle(rj); a >= lo && a <= hi {
			rj.SetLimits(lo, hi)
			f.limitsPending[j] = false
		}
	}
}

func jointAngle(rj *box2d.B2RevoluteJoint) float64 {
	return rj.M_bodyB.M_sweep.A - rj.M_bodyA.M_sweep.A - rj.M_referenceAngle
}

// footDown reports whether lower leg body i touches something that is static
// or lower than it.
func (f *Fighter) footDown(i int) bool {
	b := f.obj.bodies[i]
	for ce := b.M_contactList; ce != nil; ce = ce.Next {
		if ce.Contact.GetFlags()&box2d.B2Contact_Flag.E_touchingFlag == 0 {
			continue
		}
		if ce.Other.M_type == box2d.B2BodyType.B2_staticBody || ce.Other.M_sweep.C.Y < b.M_sweep.C.Y {
			return true
		}
	}
	return false
}

// nearestRival returns the torso x of the nearest other fighter, if any.
func (f *Fighter) nearestRival(x float64) (float64, bool) {
	best, found := 0.0, false
	for _, r := range f.world.fighters {
		if r == f {
			continue
		}
		rx := r.obj.bodies[0].M_sweep.C.X
		if !found || math.Abs(rx-x) < math.Abs(best-x) {
			best, found = rx, true
		}
	}
	return best, found
}

// update is the controller: sense, decide, act. Called by World.Step.
func (f *Fighter) update() {
	t := &f.tuning
	f.settleLimits()
	if !f.controlled {
		if f.following {
			f.follow()
			return
		}
		for j := range f.joints {
			f.limp(j)
		}
		return
	}
	torso := f.obj.bodies[0]
	theta := angle.Wrap(torso.M_sweep.A)
	x := torso.M_sweep.C.X
	f.grounded = f.footDown(PartLowerLegL.Index()) || f.footDown(PartLowerLegR.Index())

	// Input edges and buffering.
	pressed := f.input &^ f.prevInput
	f.prevInput = f.input
	for k, bit := range [...]Input{InputJump, InputPunch, InputKick} {
		if pressed&bit != 0 {
			f.buffered[k] = t.InputBufferTicks + 1
		}
	}

	// Face the nearest rival (not mid-strike, not while down).
	// With no rival, face the way it walks.
	if f.canTurn() {
		if rx, ok := f.nearestRival(x); ok {
			if rx > x+0.1 {
				f.setFacing(FacingRight)
			} else if rx < x-0.1 {
				f.setFacing(FacingLeft)
			}
		} else if d := f.walkDir(); d != 0 && f.action != ActionJump {
			f.setFacing(Facing(d))
		}
	}

	f.actionTicks++
	if f.cooldown > 0 {
		f.cooldown--
	}
	switch f.action {
	case ActionKO:
	case ActionDown:
		if f.hp > 0 && f.actionTicks >= t.DownTicks {
			f.setAction(ActionGettingUp)
		}
	case ActionGettingUp:
		if math.Abs(theta) < 0.35 && torso.M_sweep.C.Y > 0.85*t.StandHeight && f.grounded {
			f.setAction(ActionIdle)
		} else if f.actionTicks > t.GetUpMaxTicks {
			f.setAction(ActionDown) // lie down briefly and try again
			f.actionTicks = t.DownTicks * 3 / 4
		}
	default:
		if math.Abs(theta) > t.FallAngle {
			f.fallTicks++
		} else {
			f.fallTicks = 0
		}
		if f.fallTicks >= t.FallTicks {
			f.fallTicks = 0
			f.endAttack()
			f.setAction(ActionDown)
			break
		}
		f.decide()
	}
	for k := range f.buffered {
		if f.buffered[k] > 0 {
			f.buffered[k]--
		}
	}
	f.act(theta)
}

// follow is the controller of an uncontrolled fighter that follows its
// owner (SetFollowing): sense, run the reported attack's phases on, then act.
func (f *Fighter) follow() {
	f.grounded = f.footDown(PartLowerLegL.Index()) || f.footDown(PartLowerLegR.Index())
	f.actionTicks++
	if f.phase != PhaseNone {
		f.phaseTicks++
		f.followAttack()
	}
	f.act(angle.Wrap(f.obj.bodies[0].M_sweep.A))
}

// followAttack advances a following fighter's attack on its own timers;
// when it ends, the fighter does what its owner's input then says (block,
// walk or stand), as its owner's controller would.
func (f *Fighter) followAttack() {
	seq := f.attackSeq & 3
	f.advanceAttack()
	if f.phase != PhaseNone {
		return
	}
	f.doneSeq = int(seq)
	if f.action == ActionJump || !f.grounded {
		return
	}
	switch {
	case f.input&InputBlock != 0:
		f.setAction(ActionBlock)
	case (f.input&InputLeft != 0) != (f.input&InputRight != 0):
		f.setAction(ActionWalk)
	default:
		f.setAction(ActionIdle)
	}
}

// FollowRemoteState is SetRemoteState for a fighter that follows its owner
// (SetFollowing), for a state its owner sent age before the coming step
// (the game time now minus the state's time). Its attack is carried forward by its age: a following fighter runs
// its attacks' phases on the same timers as its owner, from the phase the
// owner reported plus the report's age, so the attack lands here about when
// it does there, not a network delay later. A report that is behind what
// the fighter already predicts (an earlier phase of the same attack, or an
// attack it has already finished) does not set it back; a report of a new
// attack, of a later phase, or of an attack cut short (a knock-down) does.
// Errors are those of SetRemoteState.
func (f *Fighter) FollowRemoteState(s FighterState, age time.Duration) error {
	if err := f.validate(&s); err != nil {
		return err
	}
	// In whole ticks, less the one the coming step counts.
	ticks := max(0, int((age+TickDuration/2)/TickDuration)-1)
	f.hp = s.HP
	f.setFacing(s.Facing)
	same := s.AttackSeq == f.attackSeq&3
	switch {
	case s.Phase != PhaseNone && same && f.phase == PhaseNone && f.doneSeq == int(s.AttackSeq):
		// An attack this fighter has already played out: a stale report.
		return nil
	case s.Phase != PhaseNone && same && f.phase != PhaseNone:
		if s.Phase > f.phase { // behind its owner: catch up
			f.phase, f.phaseTicks = s.Phase, ticks
			f.followAttack()
		}
		return nil
	case s.Phase != PhaseNone:
		// A new attack: start it where the owner was, age ago.
		f.attack, f.strikeBody = s.Action, s.Strike.Index()
		f.phase, f.phaseTicks = s.Phase, ticks
		f.attackSeq = s.AttackSeq
		f.hitVictims = f.hitVictims[:0]
		f.setAction(s.Action)
		f.followAttack()
		return nil
	case f.phase != PhaseNone:
		// The owner's attack is over (or was cut short) as of the report.
		f.doneSeq = int(f.attackSeq & 3)
		f.endAttack()
	case same && f.doneSeq == int(s.AttackSeq) && (s.Action == ActionPunch || s.Action == ActionKick):
		return nil
	}
	f.attackSeq = s.AttackSeq
	f.setAction(s.Action)
	return nil
}

func (f *Fighter) canTurn() bool {
	switch f.action {
	case ActionDown, ActionKO:
		return false
	}
	return f.phase != PhaseWindup && f.phase != PhaseActive
}

// decide advances attacks and picks the action of an upright fighter.
func (f *Fighter) decide() {
	if f.phase != PhaseNone {
		f.phaseTicks++
		f.advanceAttack()
		if f.phase != PhaseNone {
			return
		}
	}
	if f.action == ActionJump && !(f.grounded && f.actionTicks > 8) {
		// Airborne: attacks are allowed, nothing else.
		f.startAttack()
		return
	}
	if f.startAttack() {
		return
	}
	switch {
	case f.buffered[bufJump] > 0 && f.grounded:
		f.buffered[bufJump] = 0
		f.jump()
	case f.input&InputBlock != 0:
		f.setAction(ActionBlock)
	case (f.input&InputLeft != 0) != (f.input&InputRight != 0):
		f.setAction(ActionWalk)
	default:
		f.setAction(ActionIdle)
	}
}

// phaseTicksOf returns how many ticks phase ph of the fighter's attack lasts.
func (f *Fighter) phaseTicksOf(ph AttackPhase) int {
	t := &f.tuning
	switch {
	case f.attack == ActionPunch && ph == PhaseWindup:
		return t.PunchWindup
	case f.attack == ActionPunch && ph == PhaseActive:
		return t.PunchActive
	case f.attack == ActionPunch:
		return t.PunchRecovery
	case ph == PhaseWindup:
		return t.KickWindup
	case ph == PhaseActive:
		return t.KickActive
	}
	return t.KickRecovery
}

// advanceAttack moves the attack in progress on to its next phases while
// phaseTicks has run past their lengths, and ends it after its recovery (a
// fighter in the air then lands as from a jump).
func (f *Fighter) advanceAttack() {
	t := &f.tuning
	for f.phase != PhaseNone && f.phaseTicks >= f.phaseTicksOf(f.phase) {
		f.phaseTicks -= f.phaseTicksOf(f.phase)
		f.phase++
		if f.phase > PhaseRecovery {
			if f.attack == ActionPunch {
				f.cooldown = t.PunchCooldown
			} else {
				f.cooldown = t.KickCooldown
			}
			f.endAttack()
			if !f.grounded {
				f.setAction(ActionJump) // lands as from a jump
			}
		}
	}
}

// startAttack starts a buffered punch or kick if the fighter may attack.
func (f *Fighter) startAttack() bool {
	if f.cooldown > 0 || f.phase != PhaseNone {
		return false
	}
	switch {
	case f.buffered[bufPunch] > 0:
		f.buffered[bufPunch] = 0
		f.attack = ActionPunch
		f.strikeBody = PartLowerArmR.Index()
		if f.punches%2 == 1 {
			f.strikeBody = PartLowerArmL.Index()
		}
		f.punches++
	case f.buffered[bufKick] > 0:
		f.buffered[bufKick] = 0
		f.attack = ActionKick
		f.strikeBody = PartLowerLegR.Index()
	default:
		return false
	}
	f.phase, f.phaseTicks = PhaseWindup, 0
	f.attackSeq++
	f.hitVictims = f.hitVictims[:0]
	f.setAction(f.attack)
	return true
}

func (f *Fighter) jump() {
	t := &f.tuning
	dir := f.walkDir()
	for _, b := range f.obj.bodies {
		m := b.M_mass
		b.ApplyLinearImpulseToCenter(box2d.B2Vec2{X: m * dir * 0.5 * t.WalkSpeed, Y: m * t.JumpSpeed}, true)
	}
	f.setAction(ActionJump)
}

// walkDir returns -1, 0 or +1 from the left/right input.
func (f *Fighter) walkDir() float64 {
	l, r := f.input&InputLeft != 0, f.input&InputRight != 0
	switch {
	case r && !l:
		return 1
	case l && !r:
		return -1
	}
	return 0
}

// act sets joint motors and applies the balance and movement forces for the
// current action.
func (f *Fighter) act(theta float64) {
	t := &f.tuning
	s := f.facing.sign()
	var pose [numJoints]float64
	strength := 1.0
	lean := -0.05 * s // a slight forward lean

	switch f.action {
	case ActionDown, ActionKO:
		for j := range f.joints {
			f.limp(j)
		}
		return
	case ActionGettingUp:
		pose = poseGetUp
		if math.Abs(theta) < 0.6 {
			pose = poseStance
		}
		lean = 0
	case ActionBlock:
		pose = poseBlock
	case ActionJump:
		pose = poseAir
	case ActionWalk:
		pose = poseStance
		// The cycle follows the world's clock (World.SetClock), so a
		// following copy steps in phase with its owner.
		f.gait = math.Mod(2*math.Pi*t.StepRate*f.world.cycleTime(), 2*math.Pi)
		sn, cs := math.Sincos(f.gait)
		// Walking backward runs the cycle backward.
		if f.walkDir()*s < 0 {
			cs = -cs
		}
		pose[jHipL] = 0.05 + t.StepHipAmp*sn
		pose[jHipR] = 0.05 - t.StepHipAmp*sn
		pose[jKneeL] = -0.15 - t.StepKneeLift*max(0, cs)
		pose[jKneeR] = -0.15 - t.StepKneeLift*max(0, -cs)
		lean = -0.1 * f.walkDir()
	default:
		pose = poseStance
	}

	// Attack overrides.
	torques := f.jointTorques()
	var fast [numJoints]bool
	if f.phase != PhaseNone {
		if f.attack == ActionPunch {
			js, je := jShoulderR, jElbowR
			if f.strikeBody == PartLowerArmL.Index() {
				js, je = jShoulderL, jElbowL
			}
			switch f.phase {
			case PhaseWindup:
				pose[js], pose[je] = 0.4, 2.3
			case PhaseActive:
				pose[js], pose[je] = 1.55, 0.05
				fast[js], fast[je] = true, true
				lean = -0.2 * s
			}
		} else {
			switch f.phase {
			case PhaseWindup:
				pose[jHipR], pose[jKneeR] = 1.3, -2.0
				pose[jHipL], pose[jKneeL] = 0.0, -0.2
				lean = 0.2 * s
			case PhaseActive:
				pose[jHipR], pose[jKneeR] = 1.45, -0.05
				pose[jHipL], pose[jKneeL] = 0.0, -0.1
				fast[jHipR], fast[jKneeR] = true, true
				lean = 0.3 * s
			}
		}
	}
	// Hip targets are thigh angles from the vertical (world frame) once the
	// torso is roughly upright, so the legs stay under the fighter whatever
	// the torso's lean; the upright torque alone then straightens the torso.
	worldHips := math.Abs(theta) < 0.6
	for j := range f.joints {
		maxSpeed, torque := t.MotorMaxSpeed, torques[j]*strength
		if fast[j] {
			maxSpeed, torque = t.StrikeMotorSpeed, torque*t.StrikeTorqueScale
		}
		target := s * pose[j]
		if worldHips && (j == jHipL || j == jHipR) {
			target -= theta
		}
		f.drive(j, target, torque, maxSpeed)
	}

	// Balance and movement.
	torso := f.obj.bodies[0]
	mass := f.obj.mass
	weight := mass * f.world.cfg.Gravity
	w := torso.M_angularVelocity
	torque := t.UprightKp*angle.Diff(lean, theta) - t.UprightKd*w
	if f.action != ActionGettingUp {
		// Balance gives out with the lean: full up to half of FallAngle,
		// nothing beyond FallAngle, so a hard enough push makes it fall.
		torque *= max(0, min(1, 2*(t.FallAngle-math.Abs(theta))/t.FallAngle))
	}
	c := torso.M_sweep.C
	v := torso.M_linearVelocity
	var force Vec2
	var accel float64
	point := Vec2{c.X, c.Y}
	switch {
	case f.action == ActionGettingUp:
		r := min(1, float64(f.actionTicks)/float64(max(1, t.GetUpRampTicks)))
		torque = r * max(-t.GetUpMaxTorque, min(t.GetUpMaxTorque, torque))
		// Lift at the shoulders, keep the torso over the feet.
		sn, cs := math.Sincos(torso.M_sweep.A)
		point = Vec2{torso.M_xf.P.X, torso.M_xf.P.Y}.Add(rotCS(Vec2{0, shoulderY}, sn, cs))
		lift := t.GetUpLiftK*(t.StandHeight-c.Y) - t.GetUpLiftC*v.Y
		force.Y = r * max(0, min(lift, t.GetUpMaxLift*weight))
		feet := (f.obj.bodies[PartLowerLegL.Index()].M_sweep.C.X + f.obj.bodies[PartLowerLegR.Index()].M_sweep.C.X) / 2
		force.X = r * mass * max(-5, min(5, 6*(feet-c.X)-4*v.X))
	case f.grounded && f.action != ActionJump:
		h := t.StandHeight
		if f.action == ActionBlock {
			h = t.CrouchHeight
		}
		force.Y = max(0, min(t.SupportK*(h-c.Y)-t.SupportC*v.Y, t.SupportMax*weight))
		target := 0.0
		if f.action == ActionWalk {
			target = f.walkDir() * t.WalkSpeed
		}
		accel = max(-t.WalkAccel, min(t.WalkAccel, 10*(target-v.X)))
	default: // in the air
		torque *= t.AirUprightScale
		accel = t.AirAccel * f.walkDir()
	}
	// Horizontal assist acts on every body in proportion to its mass, so
	// it moves the fighter without tipping it.
	if accel != 0 {
		for _, b := range f.obj.bodies {
			b.ApplyForceToCenter(box2d.B2Vec2{X: b.M_mass * accel, Y: 0}, true)
		}
	}
	if f.phase == PhaseActive {
		push := t.PunchForce
		if f.attack == ActionKick {
			push = t.KickForce
		}
		b := f.obj.bodies[f.strikeBody]
		b.ApplyForceToCenter(box2d.B2Vec2{X: s * push, Y: 0}, true)
	}
	torso.ApplyTorque(torque, true)
	if f.action == ActionGettingUp && force != (Vec2{}) {
		// Share the lift with head and arms in proportion to their mass,
		// so it raises the upper body without stretching its joints; the
		// torso's share acts at the shoulders and rights it.
		var upper float64
		for i := PartTorso.Index(); i <= PartLowerArmR.Index(); i++ {
			upper += f.obj.bodies[i].M_mass
		}
		for i := PartHead.Index(); i <= PartLowerArmR.Index(); i++ {
			b := f.obj.bodies[i]
			k := b.M_mass / upper
			b.ApplyForceToCenter(box2d.B2Vec2{X: force.X * k, Y: force.Y * k}, true)
		}
		force = force.Scale(torso.M_mass / upper)
	}
	torso.ApplyForce(box2d.B2Vec2{X: force.X, Y: force.Y}, box2d.B2Vec2{X: point.X, Y: point.Y}, true)
}

// drive sets joint j's motor to move toward target (a joint angle).
func (f *Fighter) drive(j int, target, torque, maxSpeed float64) {
	rj := f.joints[j]
	speed := f.tuning.MotorGain * (target - jointAngle(rj))
	speed = max(-maxSpeed, min(maxSpeed, speed))
	rj.SetMotorSpeed(speed)
	rj.SetMaxMotorTorque(torque)
}

// limp makes joint j a weak friction joint.
func (f *Fighter) limp(j int) {
	f.joints[j].SetMotorSpeed(0)
	f.joints[j].SetMaxMotorTorque(f.tuning.LimpTorque)
}

// Tuning returns the fighter's tuning, defaults filled in: its move table
// (the phases of a punch and a kick), damage and body. The sync layer holds
// a remote fighter to it (an attack may not start before the previous one
// could have ended, nor deal more damage than the table allows).
func (f *Fighter) Tuning() Tuning { return f.tuning }
