package correction

import (
	"fmt"
	"math"
	"time"

	"github.com/ByteArena/box2d"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/angle"
	"github.com/ragsync/ragsync/physics"
)

// historyTicks is how many ticks of its own past a following corrector
// keeps: states older than this (about half a second) are taken as they
// are, without latency compensation.
const historyTicks = 32

// snapshot is one body's kinematic state.
type snapshot struct {
	pos, vel      physics.Vec2
	angle, angVel float64
}

func (s snapshot) add(o snapshot) snapshot {
	return snapshot{s.pos.Add(o.pos), s.vel.Add(o.vel), s.angle + o.angle, s.angVel + o.angVel}
}

func (s snapshot) sub(o snapshot) snapshot {
	return snapshot{s.pos.Sub(o.pos), s.vel.Sub(o.vel), s.angle - o.angle, s.angVel - o.angVel}
}

// lerp returns s + (o − s)·w, the angle the short way round.
func (s snapshot) lerp(o snapshot, w float64) snapshot {
	return snapshot{
		pos:    s.pos.Add(o.pos.Sub(s.pos).Scale(w)),
		vel:    s.vel.Add(o.vel.Sub(s.vel).Scale(w)),
		angle:  s.angle + angle.Diff(o.angle, s.angle)*w,
		angVel: s.angVel + (o.angVel-s.angVel)*w,
	}
}

// history is a ring of a following corrector's past: per tick, the game
// time its bodies' state stands for, each body's state before that tick's
// correction, and the corrections applied before it (running sums).
type history struct {
	n     int                                  // bodies
	label []clocksync.GameTime                 // [historyTicks]
	rows  []histEntry                          // [historyTicks*n], a tick's bodies together
	head  int                                  // next slot
	count int                                  // filled slots
	total [physics.MaxBodiesPerObject]snapshot // corrections so far
	// What the velocity corrections so far still add to the body's
	// velocity (vel, angVel: each fades with Config.VelocityFade) and what
	// they have moved it by (pos, angle: its integral).
	moved [physics.MaxBodiesPerObject]snapshot
	decay float64 // the share of a velocity correction left after a tick
}

// newHistory returns the history of n bodies; a velocity difference fades
// with time constant fade (negative: it is not extrapolated).
func newHistory(n int, fade time.Duration) history {
	h := history{n: n, label: make([]clocksync.GameTime, historyTicks), rows: make([]histEntry, historyTicks*n)}
	if fade > 0 {
		h.decay = math.Exp(-float64(tickTime) / float64(clocksync.GameTimeOf(fade)))
	}
	return h
}

func (h *history) reset() {
	h.head, h.count = 0, 0
	h.total = [physics.MaxBodiesPerObject]snapshot{}
	h.moved = [physics.MaxBodiesPerObject]snapshot{}
}

// histEntry is one body at one tick: its state before that tick's
// correction, the corrections applied to it before (history.total then),
// and what the velocity corrections had moved it by (history.moved then).
type histEntry struct{ state, sum, drift snapshot }

// record appends the bodies' present state, standing for game time label.
func (h *history) record(bodies []*box2d.B2Body, label clocksync.GameTime) {
	k := h.head
	h.label[k] = label
	row := h.rows[k*h.n : (k+1)*h.n]
	const dt = 1.0 / physics.TickRate
	for i, b := range bodies {
		// The velocity corrections so far moved the body for a tick, and
		// fade.
		m := &h.moved[i]
		m.pos = m.pos.Add(m.vel.Scale(dt))
		m.angle += m.angVel * dt
		m.vel = m.vel.Scale(h.decay)
		m.angVel *= h.decay
		row[i] = histEntry{
			state: snapshot{
				pos:    physics.Vec2{X: b.M_xf.P.X, Y: b.M_xf.P.Y},
				vel:    physics.Vec2{X: b.M_linearVelocity.X, Y: b.M_linearVelocity.Y},
				angle:  b.M_sweep.A,
				angVel: b.M_angularVelocity,
			},
			sum:   h.total[i],
			drift: *m,
		}
	}
	h.head = (h.head + 1) % historyTicks
	h.count = min(h.count+1, historyTicks)
}

// newest returns the bodies recorded last.
func (h *history) newest() []histEntry {
	k := (h.head - 1 + historyTicks) % historyTicks
	return h.rows[k*h.n : (k+1)*h.n]
}

// at finds the recorded ticks around game time t: slots k0 (at or before
// t) and k1 (after it) and the weight of k1, or k0 == k1 for the newest
// tick when t is not older than it. ok is false if t is older than the
// whole history.
func (h *history) at(t clocksync.GameTime) (k0, k1 int, w float64, ok bool) {
	if h.count == 0 {
		return 0, 0, 0, false
	}
	newer := (h.head - 1 + historyTicks) % historyTicks
	if t >= h.label[newer] {
		return newer, newer, 0, true
	}
	for j := 1; j < h.count; j++ {
		k := (h.head - 1 - j + 2*historyTicks) % historyTicks
		if h.label[k] <= t {
			span := h.label[newer] - h.label[k]
			if span > 0 {
				w = float64(t-h.label[k]) / float64(span)
			}
			return k, newer, w, true
		}
		newer = k
	}
	return 0, 0, 0, false
}

// estimate returns the owner's state of body i now (present is the body's
// state now, recorded last), from its state target sent at game time t:
//
//	owner now = target + (body now − body at t − corrections since t)
//	          + (target velocity − body velocity at t)·(now − t)
//
// the target, plus what the local body did since t by itself (its motion
// less the corrections applied since: the local simulation predicts the
// owner's), plus what the difference of velocities at t has moved the owner
// by since, less what the velocity corrections since t moved the body by
// (they took some of that difference away). Likewise for angles. It
// returns the target as it is (no latency compensation) if t is older than
// the history.
func (h *history) estimate(i int, target *physics.BodyState, t clocksync.GameTime, present snapshot, innovate bool) snapshot {
	tgt := snapshot{pos: target.Pos, vel: target.Vel, angle: target.Angle, angVel: target.AngVel}
	k0, k1, w, ok := h.at(t)
	if !ok {
		return tgt
	}
	e0, e1 := &h.rows[k0*h.n+i], &h.rows[k1*h.n+i]
	past := e0.state.lerp(e1.state, w)
	sumThen := e0.sum.lerp(e1.sum, w)
	driftThen := e0.drift.lerp(e1.drift, w)
	// The body's own motion since t: present − past − (corrections since t).
	own := present.sub(past).sub(h.total[i].sub(sumThen))
	own.angle = angle.Diff(present.angle, past.angle) - (h.total[i].angle - sumThen.angle)
	est := tgt.add(own)
	newest := (h.head - 1 + historyTicks) % historyTicks
	if n := float64(h.label[newest]-t) / float64(tickTime); innovate && n > 0 && h.decay > 0 {
		// A velocity difference fades like a velocity correction: over
		// n ticks it moves the body by f times itself.
		const dt = 1.0 / physics.TickRate
		f := dt * n
		if h.decay < 1 {
			f = dt * (1 - math.Pow(h.decay, n)) / (1 - h.decay)
		}
		dv := tgt.vel.Sub(past.vel)
		dw := tgt.angVel - past.angVel
		m := &h.moved[i]
		est.pos = est.pos.Add(dv.Scale(f)).Sub(m.pos.Sub(driftThen.pos).Sub(driftThen.vel.Scale(f)))
		est.angle += dw*f - (m.angle - driftThen.angle - driftThen.angVel*f)
	}
	return est
}

// SetLayout tells the corrector how the object's bodies hang together (the
// object's physics.Layout: parents and joint anchors). MethodFollow then
// corrects a jointed object toward a pose its joints can hold: the root
// body toward its estimated position, every body toward its estimated
// angle, and each child to where its joint puts it on its corrected parent,
// so a correction never pulls a limb off its joint. Without a layout every
// body is corrected on its own. The layout must have as many bodies as the
// corrector (else the error wraps physics.ErrBodyCount), each body's parent
// before it and finite anchors (else it wraps ErrInvalidConfig), as
// physics.Object.Layout's are; it is copied.
func (c *Corrector) SetLayout(l *physics.Layout) error {
	if len(l.Bodies) != c.n {
		return fmt.Errorf("correction: layout: %w: got %d, want %d", physics.ErrBodyCount, len(l.Bodies), c.n)
	}
	for i, b := range l.Bodies {
		if b.Parent < -1 || b.Parent >= i {
			return fmt.Errorf("%w: layout body %d has parent %d, want -1 or 0..%d", ErrInvalidConfig, i, b.Parent, i-1)
		}
		for _, v := range [...]physics.Vec2{b.AnchorParent, b.AnchorSelf, b.LocalCenter} {
			if !v.IsFinite() {
				return fmt.Errorf("%w: layout body %d has anchor or centre %v", ErrInvalidConfig, i, v)
			}
		}
	}
	copy(c.layout[:], l.Bodies)
	c.hasLayout = true
	return nil
}

// applyFollow is MethodFollow; see the package documentation.
func (c *Corrector) applyFollow(bodies []*box2d.B2Body, age time.Duration, quiet bool) {
	c.beginApply()
	// The owner's state of every body now, as estimated, and the bodies'.
	est, present, rot := &c.scratch.est, &c.scratch.present, &c.scratch.rot
	recorded := c.hist.newest() // the bodies now (Apply recorded them)
	for i := range bodies {
		present[i] = recorded[i].state
		switch {
		case quiet && c.frozen:
			// No state for a while (an outage): predicting on would
			// take the copy wherever the local fight pushes it. Hold
			// it, at rest, where it was predicted to be then.
			est[i] = c.hold[i]
		default:
			est[i] = c.hist.estimate(i, &c.target[i], c.targetTime, present[i], !c.hasLayout || c.layout[i].Parent < 0)
			if quiet {
				c.hold[i] = snapshot{pos: est[i].pos, angle: est[i].angle}
			}
		}
		rot[i].s, rot[i].c = math.Sincos(est[i].angle)
		if p := c.layout[i].Parent; c.hasLayout && p >= 0 {
			est[i].pos, est[i].vel = c.onJoint(i, &est[p], rot[p], rot[i], est[i].angVel)
		} else {
			est[i].pos = c.clamp(est[i].pos)
		}
	}
	c.frozen = quiet
	gp, gv := c.cfg.PositionGain, c.cfg.VelocityGain
	if ref := c.cfg.GainAge; ref > 0 && age > ref && !quiet {
		// An old state brings a noisier estimate: correct less per tick
		// (an outage's hold is no estimate).
		k := float64(ref) / float64(age)
		gp, gv = gp*k, gv*k
	}
	hard := false
	for i := range bodies {
		d := c.recordError(i, est[i].pos.Sub(present[i].pos), angle.Diff(est[i].angle, present[i].angle))
		hard = hard || d > c.cfg.MaxSoftError || c.stats.AngleError[i] > c.cfg.MaxSoftAngle
	}
	if hard {
		// A large error or a violent event: the whole object takes its
		// estimated state at once (a drawn pose smooths the jump).
		gp, gv = 1, 1
		c.stats.HardSnaps += uint64(len(bodies))
	} else {
		c.stats.SoftCorrections += uint64(len(bodies))
	}
	for i, b := range bodies {
		now := present[i]
		corr := snapshot{
			pos:    est[i].pos.Sub(now.pos).Scale(gp),
			angle:  angle.Diff(est[i].angle, now.angle) * gp,
			vel:    est[i].vel.Sub(now.vel).Scale(gv),
			angVel: (est[i].angVel - now.angVel) * gv,
		}
		if hard {
			setTransform(b, now.pos.Add(corr.pos), now.angle+corr.angle)
		} else {
			shift(b, corr.pos, corr.angle)
		}
		b.M_linearVelocity = box2d.B2Vec2{X: now.vel.X + corr.vel.X, Y: now.vel.Y + corr.vel.Y}
		b.M_angularVelocity = now.angVel + corr.angVel
		b.SetAwake(true)
		// What this moves the body by over the coming step (Stats.Pop).
		const h = 1.0 / physics.TickRate
		c.moved[i] = snapshot{pos: corr.pos.Add(corr.vel.Scale(h)), angle: corr.angle + corr.angVel*h}
		c.hist.total[i] = c.hist.total[i].add(corr)
		c.hist.moved[i].vel = c.hist.moved[i].vel.Add(corr.vel)
		c.hist.moved[i].angVel += corr.angVel
	}
}

// onJoint returns where body i is, and how fast its centre of mass moves,
// when its joint holds it to its parent in state parent and it has the given
// angle and angular velocity:
//
//	a  = p_parent + R(θ_parent)·AnchorParent          (joint point)
//	p  = a − R(θ)·AnchorSelf
//	v  = v_parent + ω_parent × (a − c_parent) + ω × (c − a)
//
// where c_parent and c are the centres of mass.
// The rotations are those of the parent's angle and of the body's.
func (c *Corrector) onJoint(i int, parent *snapshot, rp, r rotation, angVel float64) (pos, vel physics.Vec2) {
	lb := &c.layout[i]
	pl := &c.layout[lb.Parent]
	a := parent.pos.Add(rp.apply(lb.AnchorParent))
	pos = a.Sub(r.apply(lb.AnchorSelf))
	parentCOM := parent.pos.Add(rp.apply(pl.LocalCenter))
	com := pos.Add(r.apply(lb.LocalCenter))
	vel = parent.vel.Add(cross(parent.angVel, a.Sub(parentCOM))).Add(cross(angVel, com.Sub(a)))
	return pos, vel
}

// rotation is the sine and cosine of an angle.
type rotation struct{ s, c float64 }

func (r rotation) apply(v physics.Vec2) physics.Vec2 {
	return physics.Vec2{X: r.c*v.X - r.s*v.Y, Y: r.s*v.X + r.c*v.Y}
}

// cross is ω × r for an angular velocity ω (about z) and a vector r.
func cross(w float64, r physics.Vec2) physics.Vec2 { return physics.Vec2{X: -w * r.Y, Y: w * r.X} }

// shift moves b by dp and turns it by da, as SetTransform would, but leaves
// its fixtures' broad-phase boxes to the coming step (which moves them at
// its end): for the small moves of a soft correction, box2d's fattened boxes
// still hold the shapes, and the step's narrow phase uses the new
// transform.
func shift(b *box2d.B2Body, dp physics.Vec2, da float64) {
	a := b.M_sweep.A + da
	// Turn the body's rotation by da (box2d keeps it in step with the
	// angle, and sets it from the angle again after the step); a small
	// turn needs no sine and cosine.
	var sd, cd float64
	if math.Abs(da) < 0.02 {
		d2 := da * da
		sd, cd = da*(1-d2/6), 1-d2/2+d2*d2/24 // errors below 3e-11
	} else {
		sd, cd = math.Sincos(da)
	}
	q := b.M_xf.Q
	b.M_xf.Q.S, b.M_xf.Q.C = q.S*cd+q.C*sd, q.C*cd-q.S*sd
	b.M_xf.P.X += dp.X
	b.M_xf.P.Y += dp.Y
	b.M_sweep.C = box2d.B2TransformVec2Mul(b.M_xf, b.M_sweep.LocalCenter)
	b.M_sweep.A = a
	b.M_sweep.C0 = b.M_sweep.C
	b.M_sweep.A0 = a
}
