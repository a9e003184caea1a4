package ownership

import (
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/physics"
)

// history is a ring of the poses of every replicated object's bodies after
// each step, stamped with the tick's game time, in this peer's world: its
// own fighter as it really was (to confirm a rival's hit report at the
// hit's game time: lag compensation), and the rival's fighter and the
// props as this peer had them (to judge a prop claim). It is allocated once
// (when the objects are registered) and records without allocating.
type history struct {
	slots  int
	bodies int // poses per slot
	t      []clocksync.GameTime
	block  []bool // per slot and object: a fighter blocking
	pose   []physics.Pose
	nobj   int
	head   int // next slot to write
	count  int
}

// historyLen is how much history is kept: a hit report arrives up to the
// largest delay a state may have (Config.MaxDelay) plus how long a report
// is repeated after the hit, and is judged against the victim's poses up to
// its view age (at most the largest delay again) before the hit, plus a
// margin of 4 ticks. With the defaults: 500 + 250 + 500 + 67 ms, 79 ticks.
func historyLen(maxDelay time.Duration) int {
	if maxDelay <= 0 {
		maxDelay = defaultHistoryDelay
	}
	d := 2*maxDelay + reportRepeat
	return int((d+physics.TickDuration-1)/physics.TickDuration) + 4
}

// defaultHistoryDelay is the history kept when Config.MaxDelay sets no
// limit (negative): a hit older than that cannot be confirmed.
const defaultHistoryDelay = 500 * time.Millisecond

func newHistory(slots int, objs []*replicated) *history {
	h := &history{slots: slots, nobj: len(objs)}
	for k, o := range objs {
		o.hist, o.k = h.bodies, k
		h.bodies += o.obj.NumBodies()
	}
	h.t = make([]clocksync.GameTime, slots)
	h.block = make([]bool, slots*len(objs))
	h.pose = make([]physics.Pose, slots*h.bodies)
	return h
}

// record stores every object's poses at game time now.
func (h *history) record(objs []*replicated, now clocksync.GameTime) {
	s := h.head
	h.t[s] = now
	for k, o := range objs {
		base := s*h.bodies + o.hist
		for i := range o.obj.NumBodies() {
			h.pose[base+i] = o.obj.Pose(i)
		}
		h.block[s*h.nobj+k] = o.fighter != nil && o.fighter.Action() == physics.ActionBlock
	}
	h.head = (h.head + 1) % h.slots
	h.count = min(h.count+1, h.slots)
}

// slot returns the ring index of the i-th newest record (0: the newest).
func (h *history) slot(i int) int { return ((h.head-1-i)%h.slots + h.slots) % h.slots }

// at returns body i of object o (index k among the objects) at game time g,
// interpolated between the two records around it, and whether it was
// blocking then (the nearer record's). A time after the newest record gets
// the newest (the rival's game clock may run a little ahead: its packets
// are not older than the timestamp filter allows, and a report is not
// newer than its packet). ok is false if g is older than the oldest
// record.
func (h *history) at(o *replicated, k, i int, g clocksync.GameTime) (p physics.Pose, block, ok bool) {
	if h.count == 0 {
		return p, false, false
	}
	newest := h.slot(0)
	if g >= h.t[newest] {
		return h.pose[newest*h.bodies+o.hist+i], h.block[newest*h.nobj+k], true
	}
	for j := 1; j < h.count; j++ {
		s0, s1 := h.slot(j), h.slot(j-1)
		if h.t[s0] > g {
			continue
		}
		p0, p1 := h.pose[s0*h.bodies+o.hist+i], h.pose[s1*h.bodies+o.hist+i]
		w := 1.0
		if h.t[s1] > h.t[s0] {
			w = float64(g-h.t[s0]) / float64(h.t[s1]-h.t[s0])
		}
		p = physics.Pose{Pos: p0.Pos.Add(p1.Pos.Sub(p0.Pos).Scale(w)), Angle: p0.Angle + (p1.Angle-p0.Angle)*w}
		s := s1
		if w < 0.5 {
			s = s0
		}
		return p, h.block[s*h.nobj+k], true
	}
	return p, false, false
}

// nearest returns the smallest distance between body i of object a at
// pose pa and body j of object b over b's records in [from, to] and at both
// ends (interpolated).
func (h *history) nearest(a *replicated, i int, pa physics.Pose, b *replicated, j int, from, to clocksync.GameTime) float64 {
	best := inf
	for _, g := range [2]clocksync.GameTime{from, to} {
		if p, _, ok := h.at(b, b.k, j, g); ok {
			best = min(best, physics.BodyDistance(a.obj, i, pa, b.obj, j, p))
		}
	}
	for k := range h.count {
		s := h.slot(k)
		if h.t[s] < from {
			break
		}
		if h.t[s] <= to {
			best = min(best, physics.BodyDistance(a.obj, i, pa, b.obj, j, h.pose[s*h.bodies+b.hist+j]))
		}
	}
	return best
}

// within reports whether some body of object a came within reach of some
// body of object b at one of the records of the last d (and returns the
// smallest distance found): the prop-claim check.
func (h *history) within(a, b *replicated, d time.Duration, reach float64, now clocksync.GameTime) (float64, bool) {
	best := inf
	for j := range h.count {
		s := h.slot(j)
		if now.Sub(h.t[s]) > d {
			break
		}
		if dist := closest(a, h.pose[s*h.bodies+a.hist:], b, h.pose[s*h.bodies+b.hist:], reach); dist < best {
			best = dist
			if best <= reach {
				return best, true
			}
		}
	}
	return best, false
}

// closest returns the smallest distance between a body of a and a body of
// b at the given poses, skipping pairs whose origins are farther apart than
// reach plus the objects' sizes (a cheap bound).
func closest(a *replicated, pa []physics.Pose, b *replicated, pb []physics.Pose, reach float64) float64 {
	best := inf
	for i := range a.obj.NumBodies() {
		for j := range b.obj.NumBodies() {
			if pa[i].Pos.Sub(pb[j].Pos).Len() > reach+a.size+b.size {
				continue
			}
			best = min(best, physics.BodyDistance(a.obj, i, pa[i], b.obj, j, pb[j]))
		}
	}
	return best
}

// sizeOf returns the largest distance from a body's origin to a point of
// its shapes: a bound for cheap distance checks.
func sizeOf(o *physics.Object) float64 {
	var s float64
	for _, sh := range o.Shapes() {
		s = max(s, sh.Center.Len()+sh.Radius)
		for _, v := range sh.Vertices {
			s = max(s, v.Len())
		}
	}
	return s
}

// moved returns the smallest distance between pos and body i of object o
// over the records of the last d.
func (h *history) moved(o *replicated, i int, pos physics.Vec2, d time.Duration, now clocksync.GameTime) float64 {
	best := inf
	for j := range h.count {
		s := h.slot(j)
		if now.Sub(h.t[s]) > d {
			break
		}
		best = min(best, h.pose[s*h.bodies+o.hist+i].Pos.Sub(pos).Len())
	}
	return best
}
