// Package ownership decides who is the authority for each object of a shared
// physics world, and replicates the objects between the two peers of a match.
//
// Each peer simulates the whole world (physics.World) but owns only some of
// it: its own fighter for the whole match, and the shared props its fighter
// touched last. It sends the states of what it owns; for everything the rival
// owns, it steers its own copy toward the rival's states with a
// correction.Corrector. Objects that do not matter to the outcome (debris,
// effects) are local-only and never synced.
//
// The Replicator records owners (Replicator.Owner, Replicator.Mode), checks
// the authority of incoming states (a state for an object the sender does
// not own is refused and counted: ErrNotOwner), and moves shared props
// between peers when a fighter touches them, with an epoch per object, a
// deterministic tie-break when both claim at once and a cooldown against
// ping-pong (see Ownership transfer below).
//
// The Replicator works on a physics.World: it turns owned objects
// into outgoing packets, and incoming packets into correction targets: parse,
// timestamp filter, then per object authorize (a pure check), validate, and
// only then commit (an ownership transfer the state's claim wins, and the
// state itself), so a state that is refused at any step changes nothing.
// It works for any box2d bodies wrapped as a physics.Object: fighters, props,
// or a game's own bodies (physics.World.AddBodies). It knows nothing of
// sockets: the caller carries the packets, unreliably, and gives it the
// shared game time (clocksync). Package ragsync's Match does all of that for
// a game; the Replicator is what it drives.
//
// The victim's owner decides damage: a hit on a fighter this peer owns is
// applied here (physics.Fighter.ApplyHit) and the new HP travels in this
// peer's states, so both screens agree on who won.
//
// # Ownership transfer
//
// Fighters are owned by their player for the whole match; shared props
// change owner when a fighter touches them. Every shared object has an
// epoch, a counter of ownership changes that both peers keep. When this
// peer's fighter touches a shared object the rival owns, this peer claims
// it: epoch+1, owner = this peer, effective at once (so the toucher sees no
// delay), and from then on its states carry the claim (id, epoch). The
// rival accepts a claim whose epoch is newer than its own and hands the
// object over (a claim more than one epoch ahead cannot happen and is
// refused: ErrBadClaim). If both peers claim the same epoch at once, both
// resolve the tie with the same rule, so they end up agreeing: the lower
// peer id keeps the object when the object id plus the epoch is even, the
// higher one when it is odd (so neither peer always wins). The loser's claim
// is refused (ErrClaimLost) and the loser reverts. After a change, the local
// peer does not claim the object again for a cooldown (Config.ClaimCooldown,
// half a second by default), so two fighters pressed against one crate do
// not bounce it back and forth every tick.
//
// # Hits both players agree on
//
// A hit can be seen on one screen only: the attacker's real fist hits its
// copy of the victim, but in the victim's world the attacker's copy misses
// the real victim (or the other way round). So each hit counts from either
// side, once:
//
//   - The attacker's peer reports every hit its world saw its fighter land
//     (HitsDealt) in its state stream: the attack (its AttackSeq), the
//     striking limb and its pose as the attacker's state of that tick has
//     it, the victim's body part, the hit's game time, its impulse, the
//     attacker's view age (how old its newest state of the victim was) and
//     its copy error (how far its copy of the struck body was from that
//     state's pose of it, any point of the body). Each report rides in
//     every packet for 250 ms, so it survives the loss of 14 packets in a
//     row.
//   - The victim's owner records the poses of every object after each step
//     (its own fighter as it really was), for as long as a report can be
//     late: the largest accepted delay (Config.MaxDelay, 500 ms) plus the
//     250 ms a report is repeated plus a view age of up to the largest
//     delay again, 79 ticks (1.3 s) by default. It confirms a report (lag
//     compensation, as Valve's servers rewind their players to what the
//     shooter saw) if the striking limb, placed where the report and the
//     attacker's state of the same game time put it, was within
//     0.25 m (the hit tolerance, shape to shape) plus the report's copy
//     error of the reported body of its fighter at some moment of the span the
//     attacker saw: from the hit's time less the view age, to the hit's
//     time (two ticks wider each way, as the peers' ticks are not in
//     phase).
//   - Hits the victim's world detects itself (the attacker's copy struck
//     the real victim) count too.
//   - Each attack deals damage at most once, whichever way its hit came
//     first; the other is a duplicate.
//   - A copy that is only a guess lands and takes no hits: while no state
//     of a remote fighter sent within the largest accepted delay
//     (Config.MaxDelay) has arrived (an outage), BeforeStep switches its
//     hits off (physics.Fighter.SetHitsEnabled), so neither world reports
//     a hit between it and this peer's fighter. A report of a hit on it
//     would be stale on the victim's side (below), and a hit by it would
//     come from a fist its owner never threw there: either way one screen
//     would show a hit the other never agrees to. The first state after
//     the outage switches them back on.
//
// Everything is counted in Stats.Hits: Confirmed reports, Detected hits,
// Duplicate, Repeats (a report's later copies), Stale (see below), Reported
// (sent), and MaxMiss, the largest distance of a confirmed report less its
// copy error. A report whose view age is above the largest accepted delay,
// or whose copy error is above 0.5 m (the largest judged), was a hit on a copy
// that did not show this peer's fighter (a blackout, a correction still
// catching up): the attacker's screen showed a guess, so it is counted as
// Stale and neither confirmed nor refused.
//
// Why 0.25 m plus the copy error: the victim's pose at the time of the
// newest state the attacker had is in the span judged (this peer recorded
// it when it sent that state), the attacker's copy of the struck body was
// within the copy error of it, and the limb touched the copy. So an honest
// report is within the copy error of the victim's body, whatever the
// correction method does, up to the contact's own slop and the wire's
// quantization (millimetres); a fixed tolerance would have to cover the
// copy's whole error instead (honest reports reach 1.0 m through cmd/ragsim's
// blackouts). 0.25 m is a margin for what that argument leaves out; with
// the largest copy error judged, a report's slack is at most 0.75 m, less
// than a forearm and an upper arm, and a fist 3 m away is refused. A
// modified client that understates its copy error is refused more often;
// one that overstates it gains at most that slack, or makes its reports
// stale.
//
// # A rival held to the rules of its own fighter
//
// The rival owns its fighter, so nothing stops a modified client from
// sending well-formed states that break the rules of the game. Each state,
// report, claim and hit of the rival is checked by small policies driven by
// the states' game times and sequence numbers (no clock, no goroutine); one that breaks a rule
// is refused, counted in Stats.Refused by its Refusal, returned as a
// *RefusedError, and changes nothing:
//
//   - RefusedAttackRate: an attack that starts before the rival's previous
//     attack could have ended. The rule counts in the rival's own ticks,
//     not in game time: a state's game time is when its tick ran, and a
//     peer that falls behind runs ticks in bursts to catch up, so an
//     attack's phases can span any game time. Each packet's sequence
//     number counts its sender's ticks (one packet per tick); the count
//     may run ahead of the packets' game times by at most 3.5 s of ticks
//     (210, a token bucket), so a peer that numbers its packets faster
//     than its clock runs gains at most 3.5 s of ticks, once. Each state bounds
//     the start of the attack it shows by its phase (it has entered that
//     phase and not left it), a hit report by the ticks of the packets
//     stamped around its game time, so a lost packet only widens the
//     bounds. An attack is refused only if the bounds prove it: whichever
//     of it and a remembered attack came first, its latest start is before
//     the other's earliest end (the move table's wind-up, active and
//     recovery, physics.Tuning, less a slack of two ticks). A state
//     that shows an attack held in a phase longer than the move table
//     allows is judged as a new attack. Attacks cut short (a knock-down)
//     need no exception: a fighter is down for longer than any attack.
//   - RefusedDamageRate: more damage than the move table allows per second:
//     a token bucket in game time holding two of the table's strongest
//     hits (Tuning.MaxHitDamage), refilled at one per shortest attack.
//   - RefusedHealing: the rival's fighter's HP rising, or a knocked-out
//     fighter getting up, except in the rival's first packet of a new
//     round (each packet carries its sender's round) that pairs with a
//     reset the game declared here through ResetRound
//     (ragsync.Match.ResetRound). A new round's packets that arrive before
//     the declaration are held back, not applied and not counted, for as
//     long as it takes, so an outage cannot split a reset; a declared
//     reset lapses after 4 s of the rival's stream in the old round.
//   - RefusedPropReach: a claim on a prop (a transfer to the rival) when no
//     body of the claimer's fighter came within 1 m (shape to shape) of
//     the prop in this peer's world over the last second, nor in the
//     claim's own packet (the claimer's fighter and the claimed prop as
//     its states place them: an honest
//     claim made on a copy a blackout left behind). A claim that arrives
//     within 250 ms of the end of a silence of the rival's
//     stream longer than 250 ms is not judged: it was made while nothing
//     came through, and its fighter may have left the prop since. In
//     cmd/ragsim honest claims come within 0.11 m in this world on lan,
//     broadband, mobile and asym; on awful (up to 2.1 m) and through
//     blackouts the claim's own packet or the silence rule accepts them.
//   - RefusedHitTolerance: a hit report outside the hit tolerance
//     (0.25 m plus its copy error, above).
//   - RefusedHitAttack: a hit report (or a hit in this world) of no attack
//     the attacker's states show in its active phase then, with a limb that
//     is not that attack's, with a limb pose that contradicts the
//     attacker's state of the same time, or with a time this peer's history
//     does not cover.
//   - RefusedMotion: a state of a rival's object beyond what its body can
//     do since the rival's last accepted state of it, counted in the
//     rival's ticks (so loss and blackouts only widen the bounds): a body
//     faster than 16 m/s (a crate: 20), a velocity change above 14 m/s per
//     elapsed tick, a displacement beyond the speed limit over the elapsed
//     ticks plus 0.3 m, a joint pulled 0.35 m apart; and a claim whose
//     prop lies more than 1 m from everywhere this peer's world had it in
//     the last second (a teleport, then a claim). A refused state moves
//     nothing: the copy stays where the last accepted state put it.
//   - RefusedAir: a fighter off the ground (its lowest body 1.2 m above
//     the floor) higher above its last accepted state on the ground than a
//     launch at 8 m/s rises under gravity in the time since, plus 0.3 m.
//   - RefusedRound: ResetRound while no fighter is knocked out at 0 HP in
//     its owner's states and the round's time (Config.RoundLength) is not
//     up: a reset on one side's word heals nothing.
//
// A confirmed hit report's damage is the victim's to derive: its impulse
// (the report's is a hint) is capped at 5 times the striking limb's mass
// times its largest speed in the attacker's accepted states over the 100
// ms before the hit (the speed limit if they were lost). Honest hits stay
// under it (at most 4.3 times in bot fights, TestHonestMotion), so honest
// damage is unchanged. It is also capped at its move's honest peak with a
// margin (physics.Tuning.MaxPunchImpulse 30 N·s, MaxKickImpulse 60 N·s;
// honest bot fights peak at 21.7 and 42.6), so a report at the wire's
// 1000 N·s takes what a hard honest hit takes, not MaxHitDamage. A hit
// this world detects keeps its own impulse.
//
// Honest play trips none of them: cmd/ragsim counts refused = 0 on every
// link, correction method and seed 1-5. A rival that breaks them gets no
// more than honest play could: at most one attack per move, one hit per
// attack, no healing, and props only within reach.
//
// With the default correction (correction.MethodFollow) the local copy
// predicts its owner: remote objects keep gravity, and a remote fighter holds
// its owner's reported action with its own muscles and walks by its owner's
// input (physics.Fighter.SetFollowing), so the correction only removes what
// the prediction got wrong. With the other correction methods the bodies of
// remote objects have gravity scale 0 (unless Config.RemoteGravity): a limp
// remote ragdoll is a puppet, moved by the correction toward its owner's
// states and by collisions in the local world.
//
// # Wire format (version 4)
//
// A state packet is
//
//	byte     KindState (0x53, 'S'); clocksync's messages start with
//	         clocksync.Magic instead, so both can share one link
//	byte     0xC4, the version (4): read as a uvarint, as a version-2 peer
//	         reads its claim count, it is above 64, so each version rejects
//	         the other's packets as malformed rather than misreading them
//	uvarint  round: the round resets the sender declared (< 2³²;
//	         Replicator.ResetRound), so resets pair up across outages
//	uvarint  n, the number of ownership claims (≤ 64)
//	n ×      uvarint object id (1..65535), uvarint epoch (< 2³²): the
//	         ownership epoch of each shared object the sender owns
//	uvarint  m, the number of inputs (≤ 16)
//	m ×      uvarint object id (1..65535, increasing), byte input: the
//	         controls (physics.Input) the sender's fighter had this tick
//	uvarint  k, the number of hit reports (≤ 8)
//	k ×      a hit report:
//	  uvarint  attacker id, uvarint victim id (1..65535)
//	  byte     bits 0-1 the attack's AttackSeq, bits 2-4 the striking limb
//	           (1 lower arm L, 2 lower arm R, 3 lower leg L, 4 lower leg
//	           R), bits 5-7 zero
//	  byte     the victim's body part (physics.BodyPart, 1..10)
//	  uvarint  age: the packet's game time less the hit's, µs (≤ 4 s)
//	  uvarint  view: how old the attacker's newest state of the victim was
//	           at the hit, µs (≤ 10 s)
//	  uvarint  copy error: how far the attacker's copy of the struck body
//	           was from the victim's state it had then, mm (≤ 100 m)
//	  uvarint  impulse, mN·s (≤ 1000 N·s)
//	  varint   limb x, varint limb y: the striking limb's position, mm
//	           (within ±1000 m)
//	  uvarint  limb angle, 2π/65536 (< 65536)
//	...      a physics snapshot (see package physics): the sender's game
//	         time, a sequence number (one per tick: it counts the sender's
//	         ticks) and the states of every object it owns
//
// Version 1 had no inputs, version 2 no version byte and no hit reports,
// version 3 no round. A
// packet from one fighter costs 3 bytes of inputs, and 1 byte of hit list
// plus about 16 bytes per hit report while a hit is repeated.
// A fighter's input is judged as part of its state: it is valid if only bits
// of physics.InputMask are set and it belongs to a fighter whose state the
// same packet carries, and it reaches the fighter only with that state, once
// the state passed every check below. It drives the local copy when remote
// fighters follow their owners.
//
// A shared object present in the snapshot without a claim is treated as a
// claim of epoch 0. A claim is at most one epoch ahead of the receiver's
// epoch of the object (a peer claims what it sees the other own, at their
// shared epoch plus one); one further ahead is refused (ErrBadClaim). The
// receiver rejects the whole packet for a bad kind byte, a bad claim or
// input list (a count out of range, a zero id, input ids not increasing, a
// truncated list) or a snapshot the physics codec refuses (ErrMalformed, a
// *PacketError with the byte offset), and drops it for a stale timestamp
// (counted by clocksync.Reason; not an error). It then judges each object on
// its own, in the order above: objects the sender does not own or with
// claims that skip epochs (unauthorized), with stale claims (claims lost),
// or with invalid states, an invalid input included, are skipped and
// counted, the others applied. A state both unauthorized and invalid counts
// as unauthorized. An input for an object whose state the packet does not
// carry is invalid too, and changes nothing.
package ownership
