package physics

import (
	"fmt"
	"sort"

	"github.com/ByteArena/box2d"
)

// MaxBodiesPerObject is the largest number of bodies one object may have.
const MaxBodiesPerObject = 32

// Layout describes the bodies of an object and how they hang together, in a
// form both peers agree on. The snapshot codec uses it to send each child body
// as a small residual from what its joint predicts given the already decoded
// parent (see the package documentation). A layout with every Parent = -1 (a
// crate, a ball, any set of free bodies) is valid: each body is then sent
// absolutely.
type Layout struct {
	// Fighter is set for fighters: their snapshots also carry HP, action
	// and facing.
	Fighter bool
	// Bodies has one entry per body, in body index order.
	Bodies []LayoutBody
}

// LayoutBody is one body of a Layout. All vectors are in the body's (or the
// parent's) local frame, relative to the body origin.
type LayoutBody struct {
	// Parent is the index of the body this one is jointed to; it must be
	// smaller than this body's own index. -1 marks a root.
	Parent int
	// AnchorParent is the joint point in the parent's frame.
	AnchorParent Vec2
	// AnchorSelf is the joint point in this body's frame.
	AnchorSelf Vec2
	// LocalCenter is this body's centre of mass in its own frame (box2d's
	// velocities are those of the centre of mass).
	LocalCenter Vec2
}

// validate checks that l is usable by the codec: 1..MaxBodiesPerObject
// bodies, parents before children, finite anchors of sane size (≤ 100 m).
func (l *Layout) validate() error {
	n := len(l.Bodies)
	if n == 0 || n > MaxBodiesPerObject {
		return fmt.Errorf("%w: layout has %d bodies, want 1..%d", ErrInvalidConfig, n, MaxBodiesPerObject)
	}
	for i, b := range l.Bodies {
		if b.Parent < -1 || b.Parent >= i {
			return fmt.Errorf("%w: layout body %d has parent %d, want -1 or 0..%d", ErrInvalidConfig, i, b.Parent, i-1)
		}
		for _, v := range [...]Vec2{b.AnchorParent, b.AnchorSelf, b.LocalCenter} {
			if !v.IsFinite() || v.Len() > 100 {
				return fmt.Errorf("%w: layout body %d has anchor or centre %v", ErrInvalidConfig, i, v)
			}
		}
		if b.Parent < 0 && (b.AnchorParent != Vec2{} || b.AnchorSelf != Vec2{}) {
			return fmt.Errorf("%w: layout body %d is a root but has joint anchors", ErrInvalidConfig, i)
		}
	}
	return nil
}

// clone returns a deep copy of l.
func (l *Layout) clone() Layout {
	return Layout{Fighter: l.Fighter, Bodies: append([]LayoutBody(nil), l.Bodies...)}
}

// layoutOf derives a layout from box2d bodies: body i becomes the child of the
// lowest-index body j < i it shares a revolute or weld joint with (anchors
// from that joint), or a root if there is none. Order the slice so that
// parents come first (e.g. torso, then upper limbs, then lower limbs).
func layoutOf(bodies []*box2d.B2Body) Layout {
	l := Layout{Bodies: make([]LayoutBody, len(bodies))}
	for i, b := range bodies {
		lb := LayoutBody{Parent: -1, LocalCenter: fromB2(b.M_sweep.LocalCenter)}
		for je := b.M_jointList; je != nil; je = je.Next {
			j := indexOfBody(bodies[:i], je.Other)
			if j < 0 || (lb.Parent >= 0 && j >= lb.Parent) {
				continue
			}
			var bodyA *box2d.B2Body
			var anchorA, anchorB box2d.B2Vec2
			switch jt := je.Joint.(type) {
			case *box2d.B2RevoluteJoint:
				bodyA, anchorA, anchorB = jt.M_bodyA, jt.M_localAnchorA, jt.M_localAnchorB
			case *box2d.B2WeldJoint:
				bodyA, anchorA, anchorB = jt.M_bodyA, jt.M_localAnchorA, jt.M_localAnchorB
			default:
				continue
			}
			lb.Parent = j
			if bodyA == b { // this body is A, the parent is B
				anchorA, anchorB = anchorB, anchorA
			}
			lb.AnchorParent, lb.AnchorSelf = fromB2(anchorA), fromB2(anchorB)
		}
		l.Bodies[i] = lb
	}
	return l
}

func indexOfBody(bodies []*box2d.B2Body, b *box2d.B2Body) int {
	for i, x := range bodies {
		if x == b {
			return i
		}
	}
	return -1
}

// predictChild returns where body lb (child of parent, whose layout entry is
// pl) is if its joint holds exactly: its origin position and its centre of
// mass velocity, given its angle and angular velocity.
//
//	a  = p_parent + R(θ_parent)·AnchorParent          (joint point)
//	p  = a − R(θ)·AnchorSelf
//	v  = v_parent + ω_parent × (a − c_parent) + ω × (c − a)
//
// where c_parent and c are the centres of mass.
func predictChild(lb, pl *LayoutBody, parent *BodyState, angle, angVel float64) (pos, vel Vec2) {
	return predictChildRot(lb, pl, parent, rotOf(parent.Angle), rotOf(angle), angVel)
}

// predictChildRot is predictChild given the sine and cosine of the parent's
// angle (pr) and of the child's (r), which the codec works out once per body.
func predictChildRot(lb, pl *LayoutBody, parent *BodyState, pr, r rot, angVel float64) (pos, vel Vec2) {
	a := parent.Pos.Add(rotCS(lb.AnchorParent, pr.s, pr.c))
	pos = a.Sub(rotCS(lb.AnchorSelf, r.s, r.c))
	parentCOM := parent.Pos.Add(rotCS(pl.LocalCenter, pr.s, pr.c))
	com := pos.Add(rotCS(lb.LocalCenter, r.s, r.c))
	vel = parent.Vel.Add(crossSV(parent.AngVel, a.Sub(parentCOM))).Add(crossSV(angVel, com.Sub(a)))
	return pos, vel
}

// rot is the sine and cosine of an angle.
type rot struct{ s, c float64 }

func rotOf(a float64) rot {
	s, c := sincos(a)
	return rot{s, c}
}

// layoutTable maps object ids to layouts for a codec used without a World
// (tests, tools, a relay). It keeps entries sorted by id; lookups are binary
// searches and allocate nothing. The zero value is an empty table.
type layoutTable struct {
	ids     []ObjectID
	layouts []*Layout
}

// set registers (or replaces) the layout of id. The layout is copied.
func (t *layoutTable) set(id ObjectID, l *Layout) error {
	if id == 0 {
		return ErrInvalidID
	}
	if err := l.validate(); err != nil {
		return err
	}
	c := l.clone()
	i := sort.Search(len(t.ids), func(i int) bool { return t.ids[i] >= id })
	if i < len(t.ids) && t.ids[i] == id {
		t.layouts[i] = &c
		return nil
	}
	t.ids = append(t.ids, 0)
	t.layouts = append(t.layouts, nil)
	copy(t.ids[i+1:], t.ids[i:])
	copy(t.layouts[i+1:], t.layouts[i:])
	t.ids[i], t.layouts[i] = id, &c
	return nil
}

// remove removes the layout of id, if any.
func (t *layoutTable) remove(id ObjectID) {
	i := sort.Search(len(t.ids), func(i int) bool { return t.ids[i] >= id })
	if i < len(t.ids) && t.ids[i] == id {
		t.ids = append(t.ids[:i], t.ids[i+1:]...)
		t.layouts = append(t.layouts[:i], t.layouts[i+1:]...)
	}
}

// layout returns the layout of id, or nil.
func (t *layoutTable) layout(id ObjectID) *Layout {
	lo, hi := 0, len(t.ids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.ids[m] < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(t.ids) && t.ids[lo] == id {
		return t.layouts[lo]
	}
	return nil
}
