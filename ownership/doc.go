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
// With the default correction (correction.MethodFollow) the local copy
// predicts its owner: remote objects keep gravity, and a remote fighter holds
// its owner's reported action with its own muscles and walks by its owner's
// input (physics.Fighter.SetFollowing), so the correction only removes what
// the prediction got wrong. With the other correction methods the bodies of
// remote objects have gravity scale 0 (unless Config.RemoteGravity): a limp
// remote ragdoll is a puppet, moved by the correction toward its owner's
// states and by collisions in the local world.
//
// # Wire format (version 2)
//
// A state packet is
//
//	byte     KindState (0x53, 'S'); clocksync's messages start with
//	         clocksync.Magic instead, so both can share one link
//	uvarint  n, the number of ownership claims (≤ 64)
//	n ×      uvarint object id (1..65535), uvarint epoch (< 2³²): the
//	         ownership epoch of each shared object the sender owns
//	uvarint  m, the number of inputs (≤ 16)
//	m ×      uvarint object id (1..65535, increasing), byte input: the
//	         controls (physics.Input) the sender's fighter had this tick
//	...      a physics snapshot (see package physics): the sender's game
//	         time, a sequence number and the states of every object it owns
//
// Version 1 had no inputs. A packet from one fighter costs 3 bytes of inputs.
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
