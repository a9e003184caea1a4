package ownership

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ragsync/ragsync/clocksync"
)

// Resume snapshot
//
// When a peer comes back after a crash, the survivor's world is the
// source: AppendResume writes everything the returning peer needs of the
// replicated objects, and the returning peer's ApplyResume adopts it, all
// or nothing. The format (ragsync.Match wraps it in its resume packet):
//
//	uvarint  n, the tracked objects (at most 64), in increasing id order
//	n ×      uvarint id, byte owner (PeerID 1 or 2), uvarint epoch
//	...      a physics snapshot (World.AppendSnapshot) of the same n
//	         objects in the same order: bodies, and each fighter's HP,
//	         action, facing and attack
//
// ApplyResume checks it as a whole before it writes anything: the same
// objects as this replicator tracks, valid owners (a fighter's never
// changes), a snapshot the physics codec accepts (finite, in bounds, this
// arena), and each object's state valid for it (physics.Object.Validate).
// A refused snapshot is a *PacketError wrapping ErrBadResume.

// ErrBadResume is wrapped by the *PacketError ApplyResume returns for a
// resume snapshot it refuses.
var ErrBadResume = errors.New("bad resume snapshot")

// maxResumeObjects bounds a resume snapshot's objects (the physics
// snapshot's own limit).
const maxResumeObjects = 64

// AppendResume appends the resume snapshot of every tracked object at game
// time now (see Resume snapshot) to dst. On error dst is returned
// unchanged.
func (r *Replicator) AppendResume(dst []byte, now clocksync.GameTime) ([]byte, error) {
	if len(r.objs) > maxResumeObjects {
		return dst, fmt.Errorf("ownership: resume: %d objects, at most %d", len(r.objs), maxResumeObjects)
	}
	start := len(dst)
	dst = binary.AppendUvarint(dst, uint64(len(r.objs)))
	r.out.Reset(now, r.seq)
	for _, o := range r.objs {
		owner, epoch := r.reg.owner(o.obj.ID())
		dst = binary.AppendUvarint(dst, uint64(o.obj.ID()))
		dst = append(dst, byte(owner))
		dst = binary.AppendUvarint(dst, uint64(epoch))
		r.out.Add(o.obj)
	}
	out, err := r.world.AppendSnapshot(dst, &r.out)
	if err != nil {
		return dst[:start], fmt.Errorf("ownership: resume: %w", err)
	}
	return out, nil
}

// ApplyResume adopts the rival's resume snapshot p (see Resume snapshot):
// every tracked object's state, owner and epoch, and the fighters' HP,
// action and facing. It validates all of p first and changes nothing if
// any of it is refused. It returns the snapshot's game time.
func (r *Replicator) ApplyResume(p []byte) (clocksync.GameTime, error) {
	bad := func(off int, field string, v uint64, why string) error {
		return &PacketError{Offset: off, Field: field, Value: v, Err: fmt.Errorf("%w: %s", ErrBadResume, why)}
	}
	type seat struct {
		owner PeerID
		epoch uint32
	}
	var seats [maxResumeObjects]seat
	off := 0
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(p[off:])
		if n <= 0 {
			return 0, false
		}
		off += n
		return v, true
	}
	n, ok := uv()
	switch {
	case !ok:
		return 0, bad(off, "objects", 0, "truncated")
	case n != uint64(len(r.objs)):
		return 0, bad(0, "objects", n, fmt.Sprintf("this world tracks %d objects", len(r.objs)))
	}
	for i, o := range r.objs {
		at := off
		id, ok := uv()
		if !ok || id != uint64(o.obj.ID()) {
			return 0, bad(at, "id", id, fmt.Sprintf("want object %d", o.obj.ID()))
		}
		if off >= len(p) {
			return 0, bad(off, "owner", 0, "truncated")
		}
		owner := PeerID(p[off])
		off++
		if owner != r.reg.local && owner != r.reg.remote {
			return 0, bad(off-1, "owner", uint64(owner), "not a peer of the match")
		}
		if cur, _ := r.reg.owner(o.obj.ID()); !o.shared && owner != cur {
			return 0, bad(off-1, "owner", uint64(owner), fmt.Sprintf("object %d is not shared: its owner is %v", id, cur))
		}
		epoch, ok := uv()
		if !ok || epoch > 1<<31 {
			return 0, bad(off, "epoch", epoch, "truncated or out of range")
		}
		seats[i] = seat{owner, uint32(epoch)}
	}
	if err := r.world.DecodeSnapshot(p[off:], &r.in); err != nil {
		return 0, &PacketError{Offset: off, Field: "snapshot", Err: fmt.Errorf("%w: %w", ErrBadResume, err)}
	}
	if len(r.in.Objects) != len(r.objs) {
		return 0, bad(off, "snapshot", uint64(len(r.in.Objects)), fmt.Sprintf("want %d objects", len(r.objs)))
	}
	for i, o := range r.objs {
		os := &r.in.Objects[i]
		if os.ID != o.obj.ID() {
			return 0, bad(off, "snapshot id", uint64(os.ID), fmt.Sprintf("want object %d", o.obj.ID()))
		}
		if err := o.obj.Validate(os); err != nil {
			return 0, &PacketError{Offset: off, Field: "snapshot state", Value: uint64(os.ID), Err: fmt.Errorf("%w: %w", ErrBadResume, err)}
		}
	}
	// Everything checked: adopt it.
	for i, o := range r.objs {
		os := &r.in.Objects[i]
		if err := o.obj.WriteState(os.Bodies); err != nil {
			return 0, &PacketError{Offset: off, Field: "snapshot state", Value: uint64(os.ID), Err: fmt.Errorf("%w: %w", ErrBadResume, err)}
		}
		if o.fighter != nil {
			_ = o.fighter.SetRemoteState(os.Fighter) // validated above
			o.health = healthPolicy{hp: os.Fighter.HP, ko: os.Fighter.HP == 0}
		}
		if e := r.reg.get(o.obj.ID()); e != nil {
			e.owner, e.epoch = seats[i].owner, seats[i].epoch
		}
		r.setMode(o, r.reg.mode(o.obj.ID()))
		o.stamp = r.in.Time
	}
	r.RivalRejoined()
	return r.in.Time, nil
}

// RivalRejoined forgets what the replicator knew of the rival's previous
// connection (its packets' numbering, which restarts), when the rival
// comes back after a crash. Its objects' states, owners and HP stay.
func (r *Replicator) RivalRejoined() {
	r.rival.has, r.rival.hasPrev = false, false
	r.heardAny = false
}
