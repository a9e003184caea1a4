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
// The Registry records owners, checks the authority of incoming states
// (a state for an object the sender does not own is refused and counted:
// ErrNotOwner), and moves shared props between peers when a fighter touches
// them, with an epoch per object, a deterministic tie-break when both claim at
// once and a cooldown against ping-pong.
//
// The Replicator ties the registry to a physics.World: it turns owned objects
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
// peer's states, so both screens agree on who won. A hit this peer's fighter
// lands on the rival is only counted.
//
// By default the bodies of remote objects have gravity scale 0 (see
// Config.RemoteGravity): a limp remote ragdoll is a puppet, moved by the
// correction toward its owner's states and by collisions in the local world.
//
// # Wire format (version 1)
//
// A state packet is
//
//	byte     KindState (0x53, 'S'); clocksync's messages start with
//	         clocksync.Magic instead, so both can share one link
//	uvarint  n, the number of ownership claims (≤ 64)
//	n ×      uvarint object id (1..65535), uvarint epoch (< 2³²): the
//	         ownership epoch of each shared object the sender owns
//	...      a physics snapshot (see package physics): the sender's game
//	         time, a sequence number and the states of every object it owns
//
// A shared object present in the snapshot without a claim is treated as a
// claim of epoch 0. A claim is at most one epoch ahead of the receiver's
// epoch of the object (a peer claims what it sees the other own, at their
// shared epoch plus one); one further ahead is refused (ErrBadClaim). The
// receiver rejects the whole packet for a bad kind byte, a bad claim list or
// a snapshot the physics codec refuses (ErrMalformed, a *PacketError with
// the byte offset), and drops it for a stale timestamp (counted by
// clocksync.Reason; not an error). It then judges each object on its own, in
// the order above: objects the sender does not own or with claims that skip
// epochs (unauthorized), with stale claims (claims lost), or with invalid
// states are skipped and counted, the others applied. A state both
// unauthorized and invalid counts as unauthorized.
package ownership
