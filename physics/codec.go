package physics

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"strconv"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/angle"
)

// Wire format constants. See the package documentation for the layout.
const (
	// snapshotVersion is the first byte of every snapshot.
	snapshotVersion = 1
	// maxPacketSize is the largest snapshot the codec writes or accepts, in
	// bytes (fits one UDP datagram on any path).
	maxPacketSize = 1200
	// maxSnapshotObjects is the most objects one snapshot may carry.
	maxSnapshotObjects = 64
	// maxSnapshotBodies is the most bodies one snapshot may carry.
	maxSnapshotBodies = 512
)

// Quantization steps. Positions are quantized to posQuantum (root bodies over
// the bounds, child bodies as residuals), angles to 2π/2^rootAngleBits (roots)
// and 2π/2^childAngleBits (children), linear velocities to velQuantum and
// angular velocities to angVelQuantum.
const (
	posQuantum     = 0.001    // m
	velQuantum     = 1.0 / 64 // m/s
	angVelQuantum  = 1.0 / 32 // rad/s
	rootAngleBits  = 14       // bits per root angle
	childAngleBits = 11       // bits per child angle
	rootAngleStep  = 2 * math.Pi / (1 << rootAngleBits)
	childAngleStep = 2 * math.Pi / (1 << childAngleBits)
)

// Worst-case quantization errors of a snapshot round trip at level
// (ObjectState.VelShift) 0, for states inside the limits by at least one step.
// At level s, child bodies' velocity and angular velocity errors are 2^s times
// these, and at level 3 child position errors are 2·maxPosError (1 mm). At the
// very edge of the bounds or the speed limits the encoder moves a value one
// more step inward so that the decoded state still validates; the error there
// is at most twice these, except for a linear velocity at the speed limit:
// both of its components step toward zero, so a component's error is at most
// three times maxVelError (times 2^s for a child). A few 1e-12 of float
// rounding come on top.
const (
	maxPosError        = posQuantum / 2     // 0.5 mm
	maxRootAngleError  = rootAngleStep / 2  // 0.011°
	maxChildAngleError = childAngleStep / 2 // 0.088°
	maxAngleError      = maxChildAngleError // the larger of the two
	maxVelError        = velQuantum / 2     // 7.8 mm/s
	maxAngVelError     = angVelQuantum / 2  // 0.016 rad/s (0.9°/s)
)

// Wire widths of the object header. The Exp-Golomb orders are chosen per
// object by the encoder (whichever makes the object shortest) and sent in the
// object header: kRoot for root velocities, kVel for child velocity
// residuals, kAngVel for child angular velocity residuals, kPos for child
// position residuals.
const (
	egID          = 0
	egCount       = 0
	hpBits        = 10
	actionBits    = 4
	phaseBits     = 2
	strikeBits    = 3
	attackSeqBits = 2
	fighterBits   = hpBits + actionBits + 1 + phaseBits + strikeBits + attackSeqBits
	kRootBits     = 3 // order 0..7
	kVelBits      = 2 // order 0..3
	kAngBits      = 3 // order 0..7
	kPosBits      = 2 // order 0..3

	velShiftBits = 2
	maxVelShift  = 3
)

// snapshotTarget is the size the encoder aims at for a snapshot of one
// object, in bytes. Each object gets the bits a lone object would have in a
// snapshotTarget-byte snapshot with the same header. When an object would
// take more (violent motion: fast limbs, large solver errors), the encoder
// sends its child bodies' velocity residuals with quanta 2, 4 or 8 times
// coarser (ObjectState.VelShift 1..3), and at level 3 also child position
// residuals in 2 mm quanta, until it fits. Angles and root bodies are never
// coarsened. At level 3 the budget is not enforced further, so the target is
// not a hard limit (maxPacketSize is).
const snapshotTarget = 64

// Codec errors. Every codec error is a *CodecError wrapping one of these or
// one of ErrNotFinite, ErrOutOfRange, ErrBodyCount, ErrUnknownObject,
// ErrInvalidID. ErrVersion and ErrConfigMismatch say the peer runs another
// wire version or another arena; the others that its packet is damaged.
var (
	errTruncated      = errors.New("truncated")
	errTooLarge       = errors.New("too large")
	ErrVersion        = errors.New("unsupported version")
	ErrConfigMismatch = errors.New("codec configuration mismatch")
	errTrailingData   = errors.New("trailing data")
	errOrder          = errors.New("object ids not strictly increasing")
)

// CodecError reports a bad snapshot: what was wrong (Err), where (byte
// Offset in the packet when decoding, 0 when encoding; Object and Body when
// known, Body -1 otherwise), which Field, and the offending Value.
type CodecError struct {
	Op     string // "encode" or "decode"
	Offset int
	Object ObjectID
	Body   int
	Field  string
	Value  float64
	Err    error
}

func (e *CodecError) Error() string {
	s := "physics: " + e.Op + " snapshot"
	if e.Object != 0 {
		s += " " + e.Object.String()
		if e.Body >= 0 {
			s += " body " + strconv.Itoa(e.Body)
		}
	}
	s += " at byte " + strconv.Itoa(e.Offset)
	if e.Field != "" {
		s += ": " + e.Field + " = " + strconv.FormatFloat(e.Value, 'g', -1, 64)
	}
	return s + ": " + e.Err.Error()
}

func (e *CodecError) Unwrap() error { return e.Err }

// Snapshot is the state of some objects at one moment of the sender's game
// time. Decoding into a Snapshot reuses its slices, so a Snapshot kept and
// decoded into again allocates nothing once it has grown.
type Snapshot struct {
	// Time is the sender's game time: the clock both peers share (package
	// clocksync keeps it; physics only carries it).
	Time clocksync.GameTime
	// Seq is the sender's sequence number.
	Seq uint32
	// Objects in strictly increasing ID order.
	Objects []ObjectState
}

// ObjectState is one object of a Snapshot. Fighter is set for fighters only
// (zero for other objects).
type ObjectState struct {
	ID      ObjectID
	Fighter FighterState
	Bodies  []BodyState
	// VelShift is the precision level, set by AppendSnapshot and
	// DecodeSnapshot: child bodies' velocities and angular velocities were
	// sent with quanta 2^VelShift times 1/64 m/s and 1/32 rad/s, and at
	// level 3 child positions with 2 mm quanta (0 normally; see the package
	// documentation).
	// Their error bounds scale alike.
	VelShift uint8
}

// Reset empties s for reuse, keeping its capacity.
func (s *Snapshot) Reset(time clocksync.GameTime, seq uint32) {
	s.Time, s.Seq = time, seq
	s.Objects = s.Objects[:0]
}

// next appends an object slot, reusing an old one's body slice.
func (s *Snapshot) next() *ObjectState {
	n := len(s.Objects)
	if n < cap(s.Objects) {
		s.Objects = s.Objects[:n+1]
	} else {
		s.Objects = append(s.Objects, ObjectState{})
	}
	os := &s.Objects[n]
	os.Bodies = os.Bodies[:0]
	os.Fighter, os.VelShift = FighterState{}, 0
	return os
}

// Add appends the current state of o (its bodies, and for a fighter its
// FighterState). Add objects in increasing id order (World.Objects is).
// Allocation-free once s has grown.
func (s *Snapshot) Add(o *Object) {
	os := s.next()
	os.ID = o.id
	os.Bodies = o.ReadState(os.Bodies)
	if f := o.fighter; f != nil {
		os.Fighter = f.State()
	}
}

// layoutSource finds the layout of an object by id (nil if unknown). A World
// and a *layoutTable are layoutSources.
type layoutSource interface {
	layout(id ObjectID) *Layout
}

// snapshotCodec encodes and decodes snapshots. Both peers must use the same
// limits (the arena bounds and speed limits: a one-byte fingerprint in every
// packet catches a mismatch) and the same layouts for the same ids. A codec
// holds no per-call state: it is safe for concurrent use if its layoutSource
// is.
type snapshotCodec struct {
	limits  bodyLimits
	layouts layoutSource
	tag     byte

	nx, ny uint64 // root position quantum counts over the bounds
	bx, by uint   // bits of root positions
	nv, nw int64  // largest |q| of root linear / angular velocity
}

// newCodec returns a codec quantizing over limits (defaults filled in; Bounds
// must be set) and finding layouts in layouts.
func newCodec(limits bodyLimits, layouts layoutSource) (*snapshotCodec, error) {
	limits = limits.withDefaults()
	if err := limits.check(); err != nil {
		return nil, err
	}
	if layouts == nil {
		return nil, fmt.Errorf("%w: codec needs a layout source", ErrInvalidConfig)
	}
	c := &snapshotCodec{limits: limits, layouts: layouts}
	size := limits.Bounds.Size()
	c.nx = uint64(math.Floor(size.X / posQuantum))
	c.ny = uint64(math.Floor(size.Y / posQuantum))
	c.bx, c.by = uint(bits.Len64(c.nx)), uint(bits.Len64(c.ny))
	c.nv = int64(math.Floor(limits.MaxSpeed / velQuantum))
	c.nw = int64(math.Floor(limits.MaxAngularSpeed / angVelQuantum))
	h := fnv.New32a()
	var b [8]byte
	for _, v := range [...]float64{limits.Bounds.Min.X, limits.Bounds.Min.Y, limits.Bounds.Max.X,
		limits.Bounds.Max.Y, limits.MaxSpeed, limits.MaxAngularSpeed, limits.MaxAngle} {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		h.Write(b[:])
	}
	s := h.Sum32()
	c.tag = byte(s ^ s>>8 ^ s>>16 ^ s>>24)
	return c, nil
}

// AppendSnapshot appends the encoding of s to dst (see the package
// documentation for the format) and returns the extended slice. The peer
// decodes it with DecodeSnapshot on a world built the same way: the same
// arena and the same objects under the same ids. On error it returns dst
// unchanged and a *CodecError: an object the world does not have
// (ErrUnknownObject), ids not strictly increasing, a body count that does not
// match the object (ErrBodyCount), a NaN/Inf or out-of-limits state
// (ErrNotFinite, ErrOutOfRange), too many objects or bodies, or an encoding
// longer than 1200 bytes. It allocates only if dst lacks capacity.
func (w *World) AppendSnapshot(dst []byte, s *Snapshot) ([]byte, error) {
	return w.codec.appendSnapshot(dst, s)
}

// DecodeSnapshot decodes src, a snapshot the peer's world encoded, into s,
// reusing s's slices. Every decoded body state passes this world's limits
// (the same check as Object.WriteState), so it is safe to write into the
// world. On error s holds partial data and the error is a *CodecError
// saying which field of which object at which byte offset was wrong:
// ErrVersion (another wire version), ErrConfigMismatch (the peer's arena
// differs), ErrUnknownObject (an id this world does not have),
// ErrBodyCount (the peer's object differs), ErrOutOfRange, or a truncated,
// oversized or malformed packet. It never panics, and allocates nothing
// once s has grown.
func (w *World) DecodeSnapshot(src []byte, s *Snapshot) error {
	return w.codec.decodeSnapshot(src, s)
}

// appendSnapshot appends the encoding of s to dst and returns the extended
// slice. On error it returns dst unchanged (same length) and a *CodecError:
// an object without a layout (ErrUnknownObject), ids not increasing
// (errOrder), a body count that does not match the layout (ErrBodyCount), a
// NaN/Inf or out-of-limits state, too many objects or bodies, or an encoding
// longer than maxPacketSize (errTooLarge). It allocates only if dst lacks
// capacity.
func (c *snapshotCodec) appendSnapshot(dst []byte, s *Snapshot) ([]byte, error) {
	start := len(dst)
	fail := func(id ObjectID, body int, field string, v float64, err error) ([]byte, error) {
		return dst[:start], &CodecError{Op: "encode", Offset: 0, Object: id, Body: body, Field: field, Value: v, Err: err}
	}
	if len(s.Objects) > maxSnapshotObjects {
		return fail(0, -1, "objects", float64(len(s.Objects)), errTooLarge)
	}
	dst = append(dst, snapshotVersion, c.tag)
	dst = binary.AppendVarint(dst, int64(s.Time))
	dst = binary.AppendUvarint(dst, uint64(s.Seq))
	w := bitWriter{buf: dst}
	w.writeUE(uint64(len(s.Objects)), egCount)
	// Each object may use what one object can in a snapshotTarget-byte
	// snapshot with this header.
	budget := objectBudget(len(dst)-start, uint64(len(s.Objects)))
	var prev ObjectID
	total := 0
	for oi := range s.Objects {
		o := &s.Objects[oi]
		if o.ID == 0 {
			return fail(o.ID, -1, "id", 0, ErrInvalidID)
		}
		if o.ID <= prev {
			return fail(o.ID, -1, "id", float64(o.ID), errOrder)
		}
		l := c.layouts.layout(o.ID)
		if l == nil {
			return fail(o.ID, -1, "id", float64(o.ID), ErrUnknownObject)
		}
		n := len(l.Bodies)
		if len(o.Bodies) != n {
			return fail(o.ID, -1, "count", float64(len(o.Bodies)), ErrBodyCount)
		}
		if total += n; total > maxSnapshotBodies {
			return fail(o.ID, -1, "bodies", float64(total), errTooLarge)
		}
		if err := c.limits.validateState(o.ID, o.Bodies, n); err != nil {
			se := err.(*StateError)
			return fail(o.ID, se.Body, se.Field, se.Value, se.Err)
		}
		w.writeUE(uint64(o.ID-prev-1), egID)
		fixed := ueLen(uint64(o.ID-prev-1), egID) // bits that do not depend on quantization
		prev = o.ID
		if l.Fighter {
			fs := &o.Fighter
			if field, v := fs.validate(maxWireHP); field != "" {
				return fail(o.ID, -1, field, v, ErrOutOfRange)
			}
			w.write(uint64(fs.HP), hpBits)
			w.write(uint64(fs.Action), actionBits)
			w.write(b2u(fs.Facing == FacingRight), 1)
			w.write(uint64(fs.Phase), phaseBits)
			w.write(strikeCode(fs.Strike), strikeBits)
			w.write(uint64(fs.AttackSeq), attackSeqBits)
		}
		// Quantize at full precision; if the object would exceed its
		// size budget, send child velocities coarser (VelShift).
		if l.Fighter {
			fixed += fighterBits
		}
		for i := range l.Bodies {
			if l.Bodies[i].Parent < 0 {
				fixed += int(c.bx + c.by)
			}
		}
		var rec [MaxBodiesPerObject]BodyState // what the decoder will reconstruct
		var rots [MaxBodiesPerObject]rot      // of its angles
		var q [MaxBodiesPerObject]quantBody
		var ks orders
		var shift uint
		var sib bool
		for shift = 0; ; shift++ {
			for i := 0; i < n; i++ {
				if field, v, ok := c.quantizeBody(l, i, &o.Bodies[i], rec[:], &rots, &q[i], shift); !ok {
					return fail(o.ID, i, field, v, ErrOutOfRange)
				}
			}
			// Code residuals plainly or as differences from the previous
			// sibling's, whichever is shorter.
			best := -1
			base, baseBits := chooseRootOrders(l, q[:n]) // sibling coding leaves these alone
			for _, on := range [2]bool{false, true} {
				setSiblingCoding(l, q[:n], on)
				if k, b := chooseChildOrders(l, q[:n], base); best < 0 || baseBits+b < best {
					best, ks, sib = baseBits+b, k, on
				}
			}
			setSiblingCoding(l, q[:n], sib)
			if shift == maxVelShift || fixed+best <= budget {
				break
			}
		}
		w.write(uint64(shift), velShiftBits)
		w.write(b2u(sib), 1)
		w.write(uint64(ks.root), kRootBits)
		w.write(uint64(ks.vel), kVelBits)
		w.write(uint64(ks.ang), kAngBits)
		w.write(uint64(ks.pos), kPosBits)
		for i := 0; i < n; i++ {
			c.writeBody(&w, l, i, &q[i], ks)
		}
		o.VelShift = uint8(shift)
	}
	dst = w.flush()
	if len(dst)-start > maxPacketSize {
		return fail(0, -1, "size", float64(len(dst)-start), errTooLarge)
	}
	return dst, nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// quantBody is one body's quantized values: for a root, the position codes
// (x, y), the angle code and the velocity quanta (vx, vy, w); for a child, the
// angle code and the residuals in quanta.
type quantBody struct {
	x, y, a   uint64
	vx, vy, w int64    // root velocities; child velocity and angular velocity residuals
	rx, ry    int64    // child position residuals
	e         [4]int64 // child residuals as written: rx, ry, vx, vy, maybe minus a sibling's
}

// prevSibling returns the index of the last body before i with the same
// parent, or -1.
func prevSibling(l *Layout, i int) int {
	p := l.Bodies[i].Parent
	for j := i - 1; j > p; j-- {
		if l.Bodies[j].Parent == p {
			return j
		}
	}
	return -1
}

// setSiblingCoding fills the written residuals: the residuals themselves, or
// (sibling coding) their difference from the previous sibling's. A violent
// push on a parent shifts all its children's residuals alike, so the
// differences are small.
func setSiblingCoding(l *Layout, q []quantBody, on bool) {
	for i := range q {
		if l.Bodies[i].Parent < 0 {
			continue
		}
		b := &q[i]
		b.e = [4]int64{b.rx, b.ry, b.vx, b.vy}
		if j := prevSibling(l, i); on && j >= 0 {
			p := &q[j]
			b.e[0] -= p.rx
			b.e[1] -= p.ry
			b.e[2] -= p.vx
			b.e[3] -= p.vy
		}
	}
}

// orders are the Exp-Golomb orders chosen for one object.
type orders struct{ root, vel, ang, pos uint }

// chooseOrders picks, per class of value, the order that makes the object
// shortest, and returns the object's encoded length with those orders (what
// objectBits would return).
func chooseOrders(l *Layout, q []quantBody) (orders, int) {
	base, n := chooseRootOrders(l, q)
	ks, m := chooseChildOrders(l, q, base)
	return ks, n + m
}

// chooseRootOrders picks the orders of root velocities and child angular
// velocities (which sibling coding does not change), and returns them with
// the length of the object's header, angles and those values.
func chooseRootOrders(l *Layout, q []quantBody) (orders, int) {
	var root [1 << kRootBits]int
	var ang [1 << kAngBits]int
	n := velShiftBits + 1 + kRootBits + kVelBits + kAngBits + kPosBits
	for i := range q {
		b := &q[i]
		if l.Bodies[i].Parent < 0 {
			n += rootAngleBits
			x, y, w := zigzag(b.vx), zigzag(b.vy), zigzag(b.w)
			for k := range root {
				root[k] += ueLen(x, k) + ueLen(y, k) + ueLen(w, k)
			}
			continue
		}
		n += childAngleBits
		w := zigzag(b.w)
		for k := range ang {
			ang[k] += ueLen(w, k)
		}
	}
	ks := orders{root: argmin(root[:]), ang: argmin(ang[:])}
	return ks, n + root[ks.root] + ang[ks.ang]
}

// chooseChildOrders adds to ks the orders of child position and velocity
// residuals (as sibling coding left them), and returns the length of those
// residuals.
func chooseChildOrders(l *Layout, q []quantBody, ks orders) (orders, int) {
	var vel [1 << kVelBits]int
	var pos [1 << kPosBits]int
	for i := range q {
		if l.Bodies[i].Parent < 0 {
			continue
		}
		b := &q[i]
		px, py := zigzag(b.e[0]), zigzag(b.e[1])
		for k := range pos {
			pos[k] += ueLen(px, k) + ueLen(py, k)
		}
		vx, vy := zigzag(b.e[2]), zigzag(b.e[3])
		for k := range vel {
			vel[k] += ueLen(vx, k) + ueLen(vy, k)
		}
	}
	ks.vel, ks.pos = argmin(vel[:]), argmin(pos[:])
	return ks, vel[ks.vel] + pos[ks.pos]
}

func argmin(v []int) uint {
	best := 0
	for i := range v {
		if v[i] < v[best] {
			best = i
		}
	}
	return uint(best)
}

// egLen returns the length in bits of writeSE(s, k).
func egLen(s int64, k int) int { return ueLen(zigzag(s), k) }

// ueLen returns the length in bits of writeUE(u, k).
func ueLen(u uint64, k int) int { return 2*bits.Len64(u>>k+1) - 1 + k }

// objectBudget returns how many bits each object of a snapshot may take
// before the encoder coarsens it: what a lone object has in a
// snapshotTarget-byte snapshot with this header (headerBytes before the bit
// stream, count objects), less a byte for padding.
func objectBudget(headerBytes int, count uint64) int {
	return snapshotTarget*8 - 8*headerBytes - ueLen(count, egCount) - 7
}

// quantizeBody quantizes body i of layout l into q and stores what the decoder
// will reconstruct in rec[i] (children are predicted from the reconstructed
// parent, so errors do not add up along a chain). Near the bounds or the
// speed limits it moves a value one or two quanta inward so the
// reconstruction still passes the limits; it fails only if that is not
// enough (which cannot happen for a validated state).
func (c *snapshotCodec) quantizeBody(l *Layout, i int, s *BodyState, rec []BodyState, rots *[MaxBodiesPerObject]rot, q *quantBody, shift uint) (string, float64, bool) {
	lb := &l.Bodies[i]
	r := &rec[i]
	lim := &c.limits
	if lb.Parent < 0 {
		q.x = clampU(math.Round((s.Pos.X-lim.Bounds.Min.X)/posQuantum), c.nx)
		q.y = clampU(math.Round((s.Pos.Y-lim.Bounds.Min.Y)/posQuantum), c.ny)
		q.a = quantAngle(s.Angle, rootAngleStep, rootAngleBits)
		q.vx, q.vy = clampI(math.Round(s.Vel.X/velQuantum), c.nv), clampI(math.Round(s.Vel.Y/velQuantum), c.nv)
		q.w = clampI(math.Round(s.AngVel/angVelQuantum), c.nw)
		// Pull the velocity inside the speed limit if rounding pushed it out.
		for k := 0; k < 4 && float64(q.vx*q.vx+q.vy*q.vy)*velQuantum*velQuantum > lim.MaxSpeed*lim.MaxSpeed; k++ {
			q.vx, q.vy = towardZero(q.vx), towardZero(q.vy)
		}
		c.rootFromQ(r, q)
		rots[i] = rotOf(r.Angle)
		if err := lim.validateBody(0, i, r); err != nil {
			se := err.(*StateError)
			return se.Field, se.Value, false
		}
		return "", 0, true
	}
	parent := &rec[lb.Parent]
	velStep, angVelStep := velQuantum*float64(uint(1)<<shift), angVelQuantum*float64(uint(1)<<shift)
	q.a = quantAngle(s.Angle, childAngleStep, childAngleBits)
	r.Angle = dequantAngle(q.a, childAngleStep, childAngleBits)
	kw := math.Round((s.AngVel - parent.AngVel) / angVelStep)
	r.AngVel = parent.AngVel + kw*angVelStep
	for k := 0; k < 2 && math.Abs(r.AngVel) > lim.MaxAngularSpeed; k++ {
		kw -= math.Copysign(1, r.AngVel)
		r.AngVel = parent.AngVel + kw*angVelStep
	}
	rots[i] = rotOf(r.Angle)
	pp, pv := predictChildRot(lb, &l.Bodies[lb.Parent], parent, rots[lb.Parent], rots[i], r.AngVel)
	posStep := childPosStep(shift)
	kx := math.Round((s.Pos.X - pp.X) / posStep)
	ky := math.Round((s.Pos.Y - pp.Y) / posStep)
	kvx := math.Round((s.Vel.X - pv.X) / velStep)
	kvy := math.Round((s.Vel.Y - pv.Y) / velStep)
	r.Pos = Vec2{pp.X + kx*posStep, pp.Y + ky*posStep}
	r.Vel = Vec2{pv.X + kvx*velStep, pv.Y + kvy*velStep}
	// At the edge of the bounds or speed limit, step back inside.
	for k := 0; k < 2; k++ {
		b := &lim.Bounds
		switch {
		case r.Pos.X < b.Min.X:
			kx++
		case r.Pos.X > b.Max.X:
			kx--
		}
		switch {
		case r.Pos.Y < b.Min.Y:
			ky++
		case r.Pos.Y > b.Max.Y:
			ky--
		}
		if r.Vel.X*r.Vel.X+r.Vel.Y*r.Vel.Y > lim.MaxSpeed*lim.MaxSpeed || math.Abs(r.Vel.X) > lim.MaxSpeed || math.Abs(r.Vel.Y) > lim.MaxSpeed {
			kvx -= math.Copysign(1, r.Vel.X) * b2f(r.Vel.X != 0)
			kvy -= math.Copysign(1, r.Vel.Y) * b2f(r.Vel.Y != 0)
		}
		r.Pos = Vec2{pp.X + kx*posStep, pp.Y + ky*posStep}
		r.Vel = Vec2{pv.X + kvx*velStep, pv.Y + kvy*velStep}
	}
	if err := lim.validateBody(0, i, r); err != nil {
		se := err.(*StateError)
		return se.Field, se.Value, false
	}
	for _, k := range [...]float64{kx, ky, kvx, kvy, kw} {
		if math.Abs(k) > maxResidual {
			return "residual", k, false
		}
	}
	q.w, q.rx, q.ry, q.vx, q.vy = int64(kw), int64(kx), int64(ky), int64(kvx), int64(kvy)
	return "", 0, true
}

// writeBody writes quantized body i.
func (c *snapshotCodec) writeBody(w *bitWriter, l *Layout, i int, q *quantBody, ks orders) {
	if l.Bodies[i].Parent < 0 {
		w.write(q.x, c.bx)
		w.write(q.y, c.by)
		w.write(q.a, rootAngleBits)
		w.writeSE(q.vx, ks.root)
		w.writeSE(q.vy, ks.root)
		w.writeSE(q.w, ks.root)
		return
	}
	w.write(q.a, childAngleBits)
	w.writeSE(q.w, ks.ang)
	w.writeSE(q.e[0], ks.pos)
	w.writeSE(q.e[1], ks.pos)
	w.writeSE(q.e[2], ks.vel)
	w.writeSE(q.e[3], ks.vel)
}

// strikeParts are the striking limbs by wire code.
var strikeParts = [...]BodyPart{PartUnknown, PartLowerArmL, PartLowerArmR, PartLowerLegL, PartLowerLegR}

func strikeCode(p BodyPart) uint64 {
	for i, x := range strikeParts {
		if x == p {
			return uint64(i)
		}
	}
	return 0 // unreachable for a validated state
}

// childPosStep returns the quantum of child position residuals: posQuantum, or
// twice that at the coarsest level (still within the 1 mm target).
func childPosStep(shift uint) float64 {
	if shift >= maxVelShift {
		return 2 * posQuantum
	}
	return posQuantum
}

// maxResidual bounds the magnitude of a child residual (in quanta); larger
// ones are rejected on both sides.
const maxResidual = 1 << 34

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func clampU(q float64, n uint64) uint64 {
	if q <= 0 {
		return 0
	}
	if q >= float64(n) {
		return n
	}
	return uint64(q)
}

func clampI(q float64, n int64) int64 {
	if q <= -float64(n) {
		return -n
	}
	if q >= float64(n) {
		return n
	}
	return int64(q)
}

func towardZero(q int64) int64 {
	switch {
	case q > 0:
		return q - 1
	case q < 0:
		return q + 1
	}
	return 0
}

// quantAngle maps an angle to an n-bit code: round(wrap(a)/step) mod 2^n.
func quantAngle(a, step float64, n uint) uint64 {
	q := int64(math.Round(angle.Wrap(a) / step))
	return uint64(q) & (1<<n - 1)
}

// dequantAngle maps an n-bit code back to an angle in [-π, π).
func dequantAngle(q uint64, step float64, n uint) float64 {
	s := int64(q)
	if s >= 1<<(n-1) {
		s -= 1 << n
	}
	return float64(s) * step
}

func (c *snapshotCodec) rootFromQ(r *BodyState, q *quantBody) {
	r.Pos = Vec2{c.limits.Bounds.Min.X + float64(q.x)*posQuantum, c.limits.Bounds.Min.Y + float64(q.y)*posQuantum}
	r.Angle = dequantAngle(q.a, rootAngleStep, rootAngleBits)
	r.Vel = Vec2{float64(q.vx) * velQuantum, float64(q.vy) * velQuantum}
	r.AngVel = float64(q.w) * angVelQuantum
}

// decodeSnapshot decodes src into s, reusing s's slices. Every decoded body
// state passes the codec's limits (the same check as Object.WriteState). On
// error s holds partial data and the error is a *CodecError: errTruncated,
// errTooLarge (longer than maxPacketSize, too many objects or bodies),
// ErrVersion, ErrConfigMismatch (the sender's limits differ),
// ErrUnknownObject (no layout for an id), ErrBodyCount (the sender's layout
// differs), ErrOutOfRange (a value outside the limits, an undefined action, an
// absurd code), or errTrailingData (bytes or non-zero padding after the last
// object). It never panics, and allocates nothing once s has grown.
func (c *snapshotCodec) decodeSnapshot(src []byte, s *Snapshot) error {
	fail := func(off int, id ObjectID, body int, field string, v float64, err error) error {
		return &CodecError{Op: "decode", Offset: off, Object: id, Body: body, Field: field, Value: v, Err: err}
	}
	s.Objects = s.Objects[:0]
	if len(src) > maxPacketSize {
		return fail(maxPacketSize, 0, -1, "size", float64(len(src)), errTooLarge)
	}
	if len(src) < 2 {
		return fail(len(src), 0, -1, "header", float64(len(src)), errTruncated)
	}
	if src[0] != snapshotVersion {
		return fail(0, 0, -1, "version", float64(src[0]), ErrVersion)
	}
	if src[1] != c.tag {
		return fail(1, 0, -1, "config", float64(src[1]), ErrConfigMismatch)
	}
	off := 2
	t, n := binary.Varint(src[off:])
	if n <= 0 {
		if n == 0 {
			return fail(off, 0, -1, "time", 0, errTruncated)
		}
		return fail(off, 0, -1, "time", 0, ErrOutOfRange)
	}
	off += n
	seq, n := binary.Uvarint(src[off:])
	if n <= 0 {
		if n == 0 {
			return fail(off, 0, -1, "seq", 0, errTruncated)
		}
		return fail(off, 0, -1, "seq", 0, ErrOutOfRange)
	}
	if seq > math.MaxUint32 {
		return fail(off, 0, -1, "seq", float64(seq), ErrOutOfRange)
	}
	off += n
	s.Time, s.Seq = clocksync.GameTime(t), uint32(seq)
	r := bitReader{buf: src[off:]}
	at := func() int { return off + r.bytePos() }
	count := r.readUE(egCount)
	if r.short {
		return fail(at(), 0, -1, "objects", 0, errTruncated)
	}
	if r.long || count > maxSnapshotObjects {
		return fail(at(), 0, -1, "objects", float64(count), errTooLarge)
	}
	var prev ObjectID
	total := 0
	budget := objectBudget(off, count)
	for oi := uint64(0); oi < count; oi++ {
		objStart := r.pos
		delta := r.readUE(egID)
		if r.short {
			return fail(at(), 0, -1, "object header", 0, errTruncated)
		}
		if r.long || delta > math.MaxUint16 || uint64(prev)+delta+1 > math.MaxUint16 {
			return fail(at(), 0, -1, "id", float64(uint64(prev)+delta+1), ErrOutOfRange)
		}
		id := prev + ObjectID(delta) + 1
		prev = id
		l := c.layouts.layout(id)
		if l == nil {
			return fail(at(), id, -1, "id", float64(id), ErrUnknownObject)
		}
		if total += len(l.Bodies); total > maxSnapshotBodies {
			return fail(at(), id, -1, "bodies", float64(total), errTooLarge)
		}
		os := s.next()
		os.ID = id
		if l.Fighter {
			fs := &os.Fighter
			fs.HP = int(r.read(hpBits))
			fs.Action = Action(r.read(actionBits))
			fs.Facing = FacingLeft
			if r.read(1) == 1 {
				fs.Facing = FacingRight
			}
			fs.Phase = AttackPhase(r.read(phaseBits))
			code := r.read(strikeBits)
			fs.AttackSeq = uint8(r.read(attackSeqBits))
			if r.short {
				return fail(at(), id, -1, "fighter", 0, errTruncated)
			}
			if int(code) >= len(strikeParts) {
				return fail(at(), id, -1, "strike", float64(code), ErrOutOfRange)
			}
			fs.Strike = strikeParts[code]
			if field, v := fs.validate(maxWireHP); field != "" {
				return fail(at(), id, -1, field, v, ErrOutOfRange)
			}
		}
		shift := uint(r.read(velShiftBits))
		sib := r.read(1) == 1
		ks := orders{root: uint(r.read(kRootBits)), vel: uint(r.read(kVelBits)), ang: uint(r.read(kAngBits)), pos: uint(r.read(kPosBits))}
		if r.short {
			return fail(at(), id, -1, "orders", 0, errTruncated)
		}
		os.VelShift = uint8(shift)
		var raw [MaxBodiesPerObject][4]int64 // decoded child residuals
		var rots [MaxBodiesPerObject]rot     // of the decoded angles
		for i := range l.Bodies {
			os.Bodies = append(os.Bodies, BodyState{})
			if err := c.decodeBody(&r, l, i, os.Bodies, ks, shift, sib, &raw, &rots); err != nil {
				if se, ok := err.(*StateError); ok {
					return fail(at(), id, i, se.Field, se.Value, se.Err)
				}
				return fail(at(), id, i, "body", 0, err)
			}
		}
		// The encoder coarsens an object that does not fit its budget, so a
		// longer object at a finer level is not canonical.
		if n := int(r.pos - objStart); n > budget && shift < maxVelShift {
			return fail(at(), id, -1, "object bits", float64(n), errTooLarge)
		}
	}
	// Only zero padding may follow, up to the end of the byte.
	if pad := (8 - r.pos&7) & 7; pad > 0 {
		if v := r.read(pad); v != 0 {
			return fail(at(), 0, -1, "padding", float64(v), errTrailingData)
		}
	}
	if rest := len(r.buf) - r.bytePos(); rest > 0 {
		return fail(at(), 0, -1, "trailing bytes", float64(rest), errTrailingData)
	}
	return nil
}

func (c *snapshotCodec) decodeBody(r *bitReader, l *Layout, i int, bodies []BodyState, ks orders, shift uint, sib bool, raw *[MaxBodiesPerObject][4]int64, rots *[MaxBodiesPerObject]rot) error {
	lb := &l.Bodies[i]
	b := &bodies[i]
	if lb.Parent < 0 {
		var q quantBody
		q.x, q.y, q.a = r.read(c.bx), r.read(c.by), r.read(rootAngleBits)
		q.vx, q.vy, q.w = r.readSE(ks.root), r.readSE(ks.root), r.readSE(ks.root)
		if r.long {
			return &StateError{Body: i, Field: "velocity code", Value: maxEGBits, Err: ErrOutOfRange}
		}
		if r.short {
			return errTruncated
		}
		switch {
		case q.x > c.nx:
			return &StateError{Body: i, Field: "pos.x", Value: float64(q.x), Err: ErrOutOfRange}
		case q.y > c.ny:
			return &StateError{Body: i, Field: "pos.y", Value: float64(q.y), Err: ErrOutOfRange}
		case q.vx > c.nv || q.vx < -c.nv:
			return &StateError{Body: i, Field: "vel.x", Value: float64(q.vx) * velQuantum, Err: ErrOutOfRange}
		case q.vy > c.nv || q.vy < -c.nv:
			return &StateError{Body: i, Field: "vel.y", Value: float64(q.vy) * velQuantum, Err: ErrOutOfRange}
		case q.w > c.nw || q.w < -c.nw:
			return &StateError{Body: i, Field: "angvel", Value: float64(q.w) * angVelQuantum, Err: ErrOutOfRange}
		}
		c.rootFromQ(b, &q)
		rots[i] = rotOf(b.Angle)
		return c.limits.validateBody(0, i, b)
	}
	parent := &bodies[lb.Parent]
	qa := r.read(childAngleBits)
	kw := r.readSE(ks.ang)
	kx, ky := r.readSE(ks.pos), r.readSE(ks.pos)
	kvx, kvy := r.readSE(ks.vel), r.readSE(ks.vel)
	if r.long {
		return &StateError{Body: i, Field: "residual", Value: maxEGBits, Err: ErrOutOfRange}
	}
	if r.short {
		return errTruncated
	}
	for _, k := range [...]int64{kw, kx, ky, kvx, kvy} {
		if k > maxResidual || k < -maxResidual {
			return &StateError{Body: i, Field: "residual", Value: float64(k), Err: ErrOutOfRange}
		}
	}
	if j := prevSibling(l, i); sib && j >= 0 {
		kx, ky, kvx, kvy = kx+raw[j][0], ky+raw[j][1], kvx+raw[j][2], kvy+raw[j][3]
		for _, k := range [...]int64{kx, ky, kvx, kvy} {
			if k > maxResidual || k < -maxResidual {
				return &StateError{Body: i, Field: "residual", Value: float64(k), Err: ErrOutOfRange}
			}
		}
	}
	raw[i] = [4]int64{kx, ky, kvx, kvy}
	velStep, angVelStep := velQuantum*float64(uint(1)<<shift), angVelQuantum*float64(uint(1)<<shift)
	b.Angle = dequantAngle(qa, childAngleStep, childAngleBits)
	b.AngVel = parent.AngVel + float64(kw)*angVelStep
	rots[i] = rotOf(b.Angle)
	pp, pv := predictChildRot(lb, &l.Bodies[lb.Parent], parent, rots[lb.Parent], rots[i], b.AngVel)
	posStep := childPosStep(shift)
	b.Pos = Vec2{pp.X + float64(kx)*posStep, pp.Y + float64(ky)*posStep}
	b.Vel = Vec2{pv.X + float64(kvx)*velStep, pv.Y + float64(kvy)*velStep}
	return c.limits.validateBody(0, i, b)
}
