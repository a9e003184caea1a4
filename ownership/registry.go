package ownership

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ragsync/ragsync/physics"
)

// PeerID names one of the peers of a match. The zero value is invalid. Both
// peers must use the same two ids (for example 1 for the session's offerer and
// 2 for the answerer): ownership tie-breaks depend on them.
type PeerID uint8

func (p PeerID) String() string {
	if p == 0 {
		return "peer(invalid)"
	}
	return fmt.Sprintf("peer%d", uint8(p))
}

// Mode says how the local peer treats an object.
type Mode uint8

// Modes. The zero value is invalid.
const (
	ModeUnknown Mode = iota
	// ModeOwned: this peer owns the object; it simulates it freely and sends
	// its state.
	ModeOwned
	// ModeRemote: the rival owns it; this peer corrects its copy toward the
	// rival's states.
	ModeRemote
	// ModeLocalOnly: never synced (debris, effects). Each peer simulates its
	// own, and states for it are rejected.
	ModeLocalOnly
)

func (m Mode) String() string {
	switch m {
	case ModeOwned:
		return "owned"
	case ModeRemote:
		return "remote"
	case ModeLocalOnly:
		return "local-only"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Sentinel errors of the registry. Errors wrap one of them, or
// physics.ErrUnknownObject, physics.ErrDuplicateObject or
// physics.ErrInvalidID, and name the object and peer (see AuthorityError).
var (
	// ErrNotOwner: a state for an object the sender does not own.
	ErrNotOwner = errors.New("sender does not own the object")
	// ErrLocalOnly: a state for an object that is never synced.
	ErrLocalOnly = errors.New("object is local-only")
	// ErrClaimLost: a state of a shared object whose ownership claim lost
	// against a newer or simultaneous claim (normal for a few ticks while
	// claims cross the network).
	ErrClaimLost = errors.New("ownership claim lost")
	// ErrBadClaim: a claim more than one epoch ahead of this peer's epoch
	// of the object. A peer claims an object it sees the other own, at
	// their shared epoch plus one, so a claim can never skip epochs: this
	// is a bug or a cheat, and it moves nothing.
	ErrBadClaim = errors.New("ownership claim skips epochs")
	// ErrInvalidPeer: a zero PeerID, or one that is neither peer of the match.
	ErrInvalidPeer = errors.New("invalid peer id")
)

// AuthorityError is returned when a peer's state for an object is refused. It
// carries the offending object and sender.
type AuthorityError struct {
	Object physics.ObjectID
	Sender PeerID
	Owner  PeerID // the owner as this peer sees it (0: local-only / unknown)
	Epoch  uint32 // the claim's epoch, if the state carried a claim
	Err    error
}

func (e *AuthorityError) Error() string {
	s := fmt.Sprintf("ownership: %v from %v: %v", e.Object, e.Sender, e.Err)
	if e.Owner != 0 {
		s += fmt.Sprintf(" (owner %v)", e.Owner)
	}
	if e.Epoch != 0 {
		s += fmt.Sprintf(" (claim epoch %d)", e.Epoch)
	}
	return s
}

func (e *AuthorityError) Unwrap() error { return e.Err }

// entry is the registry's record of one object.
type entry struct {
	id     physics.ObjectID
	owner  PeerID // 0 for local-only
	shared bool   // ownership can move (a prop)
	// epoch counts ownership changes of a shared object. Both peers agree
	// on (epoch, owner) once the claims have crossed.
	epoch uint32
	// cooldownUntil is the world tick before which the local peer will not
	// claim the object again.
	cooldownUntil uint64
}

// registry records who owns which object, for the Replicator (see the
// package documentation, "Ownership transfer"). Shared props change owner
// when a fighter touches them (claim) or when the rival's claim wins
// (authorize, commit). It is a plain value driven by the world's tick
// (physics.World.Tick), not safe for concurrent use, and allocates only when
// objects are added.
//
// A state from the rival is judged in two steps, so that a state that turns
// out to be invalid moves nothing: authorize decides, without changing
// anything, whether the rival may send it (it owns the object, or its claim
// wins) and what accepting it would change; the caller then validates the
// state, and only then calls commit to record the change of owner, if any.
type registry struct {
	local, remote PeerID
	cooldown      uint64
	entries       []entry // sorted by id

	transfers uint64 // ownership changes, either way
	ties      uint64 // simultaneous claims this peer's claim lost
}

// defaultClaimCooldown is the default cooldown, in ticks, after an ownership
// change before the local peer claims the same object again (30 ticks: 0.5 s
// at 60 Hz).
const defaultClaimCooldown = 30

// newRegistry returns an empty registry for the local peer and its rival.
// cooldownTicks is the claim cooldown in world ticks (0: 30, half a second).
func newRegistry(local, remote PeerID, cooldownTicks int) (*registry, error) {
	if local == 0 || remote == 0 || local == remote {
		return nil, fmt.Errorf("ownership: %w: local %v, remote %v", ErrInvalidPeer, local, remote)
	}
	if cooldownTicks < 0 {
		return nil, fmt.Errorf("ownership: negative claim cooldown %d", cooldownTicks)
	}
	if cooldownTicks == 0 {
		cooldownTicks = defaultClaimCooldown
	}
	return &registry{local: local, remote: remote, cooldown: uint64(cooldownTicks)}, nil
}

func (r *registry) find(id physics.ObjectID) (int, bool) {
	return slices.BinarySearchFunc(r.entries, id, func(e entry, id physics.ObjectID) int {
		return int(e.id) - int(id)
	})
}

func (r *registry) get(id physics.ObjectID) *entry {
	if i, ok := r.find(id); ok {
		return &r.entries[i]
	}
	return nil
}

// add registers an object owned by owner (the local or the remote peer). A
// shared object's ownership can change (claim); a fighter's should not.
func (r *registry) add(id physics.ObjectID, owner PeerID, shared bool) error {
	if owner != r.local && owner != r.remote {
		return fmt.Errorf("ownership: %v: %w %v", id, ErrInvalidPeer, owner)
	}
	return r.insert(entry{id: id, owner: owner, shared: shared})
}

// addLocalOnly registers an object that is never synced.
func (r *registry) addLocalOnly(id physics.ObjectID) error {
	return r.insert(entry{id: id})
}

func (r *registry) insert(e entry) error {
	if e.id == 0 {
		return fmt.Errorf("ownership: %w", physics.ErrInvalidID)
	}
	i, ok := r.find(e.id)
	if ok {
		return fmt.Errorf("ownership: %v already registered: %w", e.id, physics.ErrDuplicateObject)
	}
	r.entries = slices.Insert(r.entries, i, e)
	return nil
}

// remove forgets an object.
func (r *registry) remove(id physics.ObjectID) {
	if i, ok := r.find(id); ok {
		r.entries = slices.Delete(r.entries, i, i+1)
	}
}

// mode returns how the local peer treats the object (ModeUnknown if it is not
// registered).
func (r *registry) mode(id physics.ObjectID) Mode {
	e := r.get(id)
	switch {
	case e == nil:
		return ModeUnknown
	case e.owner == 0:
		return ModeLocalOnly
	case e.owner == r.local:
		return ModeOwned
	}
	return ModeRemote
}

// owner returns the object's owner and its ownership epoch (0, 0 for
// local-only or unknown objects).
func (r *registry) owner(id physics.ObjectID) (PeerID, uint32) {
	if e := r.get(id); e != nil {
		return e.owner, e.epoch
	}
	return 0, 0
}

// tieWinner is the peer that keeps object id when both peers claimed it at the
// same epoch. It alternates with the epoch (and the object id), so neither
// peer always wins, and both peers compute the same answer.
func tieWinner(id physics.ObjectID, epoch uint32, a, b PeerID) PeerID {
	lo, hi := min(a, b), max(a, b)
	if (uint32(id)+epoch)%2 == 0 {
		return lo
	}
	return hi
}

// claim makes the local peer the owner of shared object id at world tick
// tick, if the rival owns it and the cooldown since its last change has
// passed. It reports whether the claim was made (the object is then
// ModeOwned with a new epoch, and the caller's states carry the claim).
func (r *registry) claim(id physics.ObjectID, tick uint64) bool {
	e := r.get(id)
	if e == nil || !e.shared || e.owner != r.remote || tick < e.cooldownUntil {
		return false
	}
	e.epoch++
	e.owner = r.local
	e.cooldownUntil = tick + r.cooldown
	r.transfers++
	return true
}

// A decision is what authorize decided about a state it accepts: the owner
// and epoch the object has once the state is committed (see commit). The
// zero decision commits nothing.
type decision struct {
	id physics.ObjectID
	// The object's owner and epoch when authorize decided (commit does
	// nothing if they changed since), and after commit.
	fromOwner, owner PeerID
	fromEpoch, epoch uint32
	tie              bool // the sender won a simultaneous claim
}

// authorize decides whether sender's state for object id is authoritative:
// the sender owns the object, or the ownership claim the state carries
// (claimEpoch: the epoch the sender claims for a shared object it says it
// owns; 0 if the state carries no claim) takes the object over. It is a pure
// check and changes nothing: accepting the state is commit's job, once the
// caller has validated the state. It returns the decision to commit, or an
// *AuthorityError wrapping physics.ErrUnknownObject, ErrLocalOnly,
// ErrNotOwner (a state for an object the sender does not own, or a claim on
// one that never changes hands), ErrBadClaim (a claim more than one epoch
// ahead), ErrClaimLost (a stale claim, or one that lost a tie: normal for a
// few ticks while claims cross) or ErrInvalidPeer (a sender that is not the
// rival).
func (r *registry) authorize(sender PeerID, id physics.ObjectID, claimEpoch uint32) (decision, error) {
	if sender != r.remote {
		return decision{}, &AuthorityError{Object: id, Sender: sender, Err: ErrInvalidPeer}
	}
	e := r.get(id)
	if e == nil {
		return decision{}, &AuthorityError{Object: id, Sender: sender, Err: physics.ErrUnknownObject}
	}
	if e.owner == 0 {
		return decision{}, &AuthorityError{Object: id, Sender: sender, Err: ErrLocalOnly}
	}
	d := decision{id: id, fromOwner: e.owner, owner: sender, fromEpoch: e.epoch, epoch: e.epoch}
	if !e.shared {
		if e.owner != sender || claimEpoch != 0 {
			return decision{}, &AuthorityError{Object: id, Sender: sender, Owner: e.owner, Epoch: claimEpoch, Err: ErrNotOwner}
		}
		return d, nil
	}
	switch {
	case uint64(claimEpoch) > uint64(e.epoch)+1:
		return decision{}, &AuthorityError{Object: id, Sender: sender, Owner: e.owner, Epoch: claimEpoch, Err: ErrBadClaim}
	case claimEpoch > e.epoch:
		// A newer claim: the sender takes the object over (or, if it
		// owns it already, moves on to the epoch it claims).
		d.epoch = claimEpoch
		return d, nil
	case claimEpoch == e.epoch && e.owner == sender:
		return d, nil
	case claimEpoch == e.epoch && claimEpoch != 0 && tieWinner(id, e.epoch, r.local, sender) == sender:
		// Both claimed this epoch at once, and the rule both peers
		// share says the sender keeps it: this peer's claim is undone.
		d.tie = true
		return d, nil
	}
	// A stale claim (the sender has not yet seen the newer owner), or a
	// tie the sender lost: normal while claims cross the network.
	return decision{}, &AuthorityError{Object: id, Sender: sender, Owner: e.owner, Epoch: claimEpoch, Err: ErrClaimLost}
}

// commit records decision d, which authorize returned for a state the caller
// has since validated, at world tick tick: the object's new epoch and, if
// its owner changes, the new owner (the local peer then does not claim it
// back for the cooldown). It reports whether the owner changed: the caller
// then treats the object as the rival's (and resets its correction). A
// decision that no longer matches the registry (the object changed owner or
// epoch since authorize, or was removed) commits nothing.
func (r *registry) commit(d decision, tick uint64) bool {
	e := r.get(d.id)
	if e == nil || d.owner == 0 || e.owner != d.fromOwner || e.epoch != d.fromEpoch {
		return false
	}
	e.epoch = d.epoch
	if d.tie {
		r.ties++
	}
	if e.owner == d.owner {
		return false
	}
	e.owner = d.owner
	e.cooldownUntil = tick + r.cooldown
	r.transfers++
	return true
}
