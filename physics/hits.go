package physics

// HitEvent is a strike that landed: during the active phase of an attack, the
// attacker's striking limb (a lower arm for a punch, the right lower leg for a
// kick) touched another fighter with at least Tuning.MinHitImpulse. Each
// attack hits each victim at most once (the strongest contact of the first
// step it touches). Damage is not applied automatically: the victim's owner
// calls Fighter.ApplyHit.
type HitEvent struct {
	Attacker, Victim ObjectID
	// Part is the victim's body part that was hit.
	Part BodyPart
	// Impulse is the contact's normal impulse in N·s over the step (the
	// solver's accumulated impulse, summed over the contact points).
	Impulse float64
	// Tick is the world tick (World.Tick) of the step the hit happened in.
	Tick uint64
	// Attack is ActionPunch or ActionKick.
	Attack Action
	// Blocked reports whether the victim was blocking when hit.
	Blocked bool
	// AttackSeq is the attacker's FighterState.AttackSeq during the attack
	// (the count of its attacks, mod 4): with Attacker and the hit's time,
	// it tells one attack from the next.
	AttackSeq uint8
	// Strike is the attacker's striking limb (PartLowerArmL or R for a
	// punch, PartLowerLegL or R for a kick).
	Strike BodyPart
}
