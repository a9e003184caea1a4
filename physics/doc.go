// Package physics is ragsync's simulation layer: a Box2D world
// (github.com/ByteArena/box2d v1.0.2) stepped at a fixed 60 Hz with an arena,
// active-ragdoll fighters, props, hit events, body state read/write with
// validation, and the compact snapshot codec peers send each other. It knows
// nothing about networking or clocks.
//
// # World, objects and ids
//
// NewWorld builds a static arena (ground at y = 0, side walls, ceiling; 16 m ×
// 10 m by default). Everything else is an Object with an ObjectID (non-zero,
// chosen by the game, identical on both peers): a fighter (AddFighter), a
// crate or ball (AddCrate, AddBall), or box2d bodies the game made itself
// (AddBodies). An object's bodies have fixed indices. A fighter's are
//
//	0 torso (root)      1 head          2 upper arm L   3 lower arm L
//	4 upper arm R       5 lower arm R   6 upper leg L   7 lower leg L (+foot)
//	8 upper leg R       9 lower leg R (+foot)
//
// (BodyPart(i+1) names body i.) Construction is deterministic: the same
// configs and ids, added in the same order, build identical worlds.
//
// World.Step runs every fighter's controller (Fighter.SetInput), steps box2d
// once (1/60 s), then collects the step's hit events (World.Hits) and
// touching object pairs (World.Contacts, World.FighterPropContacts). Our code
// allocates nothing per step; box2d allocates inside.
//
// # Fighters
//
// A fighter is ten boxes and a circle joined by motorised revolute joints with
// human-like limits (mirrored when it turns around). It is an active ragdoll:
// a PD torque keeps the torso upright (fading out past Tuning.FallAngle, so a
// hard push topples it), a clamped "muscle" force holds the hips at standing
// height while a foot is down, joint motors servo toward a pose, and walking
// is a mass-proportional horizontal force plus a gait cycle. Jump, block,
// punch and kick are poses, motor speeds and forces; attacks have wind-up,
// active and recovery phases and a cooldown. A fallen fighter lies limp, then
// gets up with a ramped lift at the shoulders. See Tuning for the numbers.
// The gait follows the world's clock (World.SetClock, the shared game time
// when a replicator sets it), so two worlds walk a fighter in step.
//
// A fighter its peer does not own has its controller off
// (Fighter.SetControlled(false)). It is then either a limp ragdoll whose HP,
// action, facing and attack are set from its owner's states
// (Fighter.SetRemoteState), or it follows its owner (Fighter.SetFollowing):
// its muscles hold the action its owner reported and walk by its owner's
// input, its attacks run on the owner's timers from the reported phase plus
// the report's age (Fighter.FollowRemoteState), and it decides nothing
// itself. Either way its strikes produce hit events where its owner's do.
//
// During an attack's active phase, a contact of the striking limb with another
// fighter is a HitEvent (once per attack and victim). Damage is not applied
// automatically: the victim's owner calls Fighter.ApplyHit.
//
// # Body state and validation
//
// BodyState is position (body origin), angle, centre-of-mass velocity and
// angular velocity. Object.ReadState appends all bodies' states without
// allocating; Object.WriteState validates everything first against the world's
// limits (body count, NaN/Inf, the arena's bounds plus 1 m, speeds up to 120
// m/s and 100 rad/s) and returns a *StateError naming the body and field
// without touching box2d if anything is wrong. Object.Validate checks a whole
// object state from a snapshot, the bodies the same way and a fighter's
// state too, without writing anything: for the network layer.
//
// # Snapshots
//
// A Snapshot is the state of some objects at one moment of the sender's game
// time: Snapshot.Add takes an object's state (its bodies, and a fighter's
// HP, action and attack), World.AppendSnapshot encodes it, and the peer's
// World.DecodeSnapshot, on a world built the same way, decodes it into
// states that pass that world's limits. Object.Validate then judges each
// state against the object it is for.
//
// # Snapshot wire format (version 1)
//
// A snapshot is a few bytes of header, then one bit stream (most significant
// bit first) padded with zero bits to a whole byte:
//
//	byte 0     version (1)
//	byte 1     configuration tag: a hash of the world's limits (bounds,
//	           speed and angle limits), so peers with different arenas
//	           fail loudly: 32-bit FNV-1a of the little-endian float64
//	           bits of Bounds.Min.X, Min.Y, Max.X, Max.Y, MaxSpeed,
//	           MaxAngularSpeed and MaxAngle, its four bytes XORed together
//	varint     game time in µs (zigzag, encoding/binary.AppendVarint)
//	uvarint    sequence number (≤ 2^32−1)
//	bits:
//	  ue(0)    object count (≤ 64)
//	  per object, ids strictly increasing:
//	    ue(0)  id − previous id − 1 (previous id starts at 0)
//	    fighters only (the layout says so), a FighterState:
//	      10   HP (≤ 1000)
//	      4    action (a defined Action)
//	      1    facing (1 right, 0 left)
//	      2    attack phase
//	      3    striking limb: 0 none, 1 lower arm L, 2 lower arm R,
//	           3 lower leg L, 4 lower leg R (consistent with action and phase)
//	      2    attack sequence number (mod 4)
//	    2      level s (ObjectState.VelShift, 0..3)
//	    1      sibling coding on/off
//	    3      order kR of root velocities
//	    2      order kV of child velocity residuals
//	    3      order kW of child angular velocity residuals
//	    2      order kP of child position residuals
//	    per body, in index order (the layout gives the count):
//	      root (layout parent −1):
//	        bx     x: round((x − bounds.min.x)/q), bx = bitlen(width/q)
//	        by     y: likewise over the bounds' height
//	        14     angle: round(wrap(θ)/(2π/2^14)) mod 2^14
//	        se(kR) vx, vy in quanta v, then ω in quanta w
//	      child (jointed to an earlier parent):
//	        11     angle: round(wrap(θ)/(2π/2^11)) mod 2^11
//	        se(kW) ω − ω̂_parent in quanta of w·2^s
//	        se(kP) x − x̃, y − ỹ in quanta of q (2·q at s = 3)
//	        se(kV) vx − ṽx, vy − ṽy in quanta of v·2^s
//
// ue(k) is an Exp-Golomb code of order k (ue(0) of n is bitlen(n+1)−1 zeros,
// then n+1 in binary; order k writes ue(0) of n>>k, then the k low bits of n);
// se(k) is ue(k) of the zigzag mapping 0, 1, −1, 2, −2 … → 0, 1, 2, 3, 4 ….
// Prefixes longer than 40 zeros are rejected.
//
// A child's prediction (x̃, ỹ, ṽ) is where its joint puts it given the
// already decoded parent and its own decoded angle and angular velocity: the
// joint point a = p_parent + R(θ_parent)·AnchorParent, the child's origin
// a − R(θ)·AnchorSelf, and the centre-of-mass velocity of a rigid pin joint
// (see Layout). The encoder predicts from the values the decoder will have
// (closed loop, like DPCM), so quantization errors never add up along a chain,
// and a well-held joint costs a few bits. With sibling coding on, a child's
// position and velocity residuals are sent as differences from those of the
// previous child of the same parent: a hard push on a torso shifts all its
// children's residuals alike. The encoder picks the orders and the sibling
// coding that make each object shortest. The decoder finds each object's
// layout by id in its world; an unknown id is an error.
//
// The quanta are q = 1 mm for positions, v = 1/64 m/s for linear and w = 1/32
// rad/s for angular velocities. Precision (worst case): positions ±0.5 mm;
// root angles ±0.011°, child angles ±0.088°; linear velocities ±7.8 mm/s;
// angular velocities ±0.016 rad/s (0.9°/s). Each object has a bit budget: what
// a lone object has in a 64-byte snapshot with the same header. An object over
// budget is re-encoded at the next level s: child velocity and angular
// velocity quanta double per level, and at s = 3 child position quanta are 2
// mm (error ±1 mm). Positions and angles otherwise never lose precision, and
// root bodies never do. The decoder rejects an object over budget at a level
// below 3, since the encoder never writes one (this keeps decoding and
// re-encoding exact). A standing fighter takes about 41 bytes (with the header
// of a match an hour old), a walking one about 57; in scripted fights the
// average is about 51 bytes, every snapshot ≤ 64, and about 2% of them at a
// level above 0. The 64 bytes are a target, not a cap: at level 3 an object is
// sent whatever its size (in a random brawl, 1 snapshot in 40000 was 65
// bytes).
//
// Decoding checks everything and never panics: a packet longer than
// 1200 bytes, more than 64 objects or 512 bodies, a wrong
// version or configuration tag, a truncated field, an unknown object id, a
// value outside the limits (every decoded body passes the world's limits, so
// it is safe to write into the world), an undefined action, an absurd code, a
// non-canonical over-budget object, or trailing bytes or non-zero padding all
// return a *CodecError saying which field of which object at which byte
// offset, wrapping an errors.Is-able sentinel.
package physics
