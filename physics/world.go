package physics

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/ByteArena/box2d"

	"github.com/ragsync/ragsync/clocksync"
)

// The world steps at a fixed rate.
const (
	TickRate     = 60                      // steps per second
	TickDuration = time.Second / TickRate  // wall time one step simulates
	dt           = 1.0 / float64(TickRate) // seconds per step
)

// Collision categories of the bodies this package creates. Bodies a game wraps
// with AddBodies keep whatever filter the game gave them.
const (
	CategoryArena   uint16 = 0x0001
	CategoryFighter uint16 = 0x0002
	CategoryProp    uint16 = 0x0004
)

// ArenaConfig describes the arena: a flat ground, two side walls and a
// ceiling, all static. The interior spans x ∈ [-Width/2, Width/2] and
// y ∈ [0, Height]; the ground's top is y = 0. The zero value is a 16 m × 10 m
// arena.
type ArenaConfig struct {
	Width         float64 // interior width in m; zero: 16
	Height        float64 // interior height in m; zero: 10
	WallThickness float64 // thickness of ground, walls and ceiling; zero: 1
	Friction      float64 // friction of ground and walls; zero: 0.9
}

func (a ArenaConfig) withDefaults() ArenaConfig {
	if a.Width == 0 {
		a.Width = 16
	}
	if a.Height == 0 {
		a.Height = 10
	}
	if a.WallThickness == 0 {
		a.WallThickness = 1
	}
	if a.Friction == 0 {
		a.Friction = 0.9
	}
	return a
}

func (a ArenaConfig) check() error {
	switch {
	case !(a.Width >= 4 && a.Width <= 1000):
		return fmt.Errorf("%w: arena width %g, want 4..1000 m", ErrInvalidConfig, a.Width)
	case !(a.Height >= 3 && a.Height <= 1000):
		return fmt.Errorf("%w: arena height %g, want 3..1000 m", ErrInvalidConfig, a.Height)
	case !(a.WallThickness >= 0.1 && a.WallThickness <= 100):
		return fmt.Errorf("%w: arena wall thickness %g, want 0.1..100 m", ErrInvalidConfig, a.WallThickness)
	case !(a.Friction >= 0 && a.Friction <= 10):
		return fmt.Errorf("%w: arena friction %g, want 0..10", ErrInvalidConfig, a.Friction)
	}
	return nil
}

// interior returns the arena's inside as a rectangle (zero fields defaulted).
func (a ArenaConfig) interior() Rect {
	a = a.withDefaults()
	return Rect{Min: Vec2{-a.Width / 2, 0}, Max: Vec2{a.Width / 2, a.Height}}
}

// limits returns the limits states in this arena are validated against: the
// interior grown by boundsMargin on each side, and the default speed and
// angle limits.
func (a ArenaConfig) limits() bodyLimits {
	in := a.interior()
	m := Vec2{boundsMargin, boundsMargin}
	return bodyLimits{Bounds: Rect{in.Min.Sub(m), in.Max.Add(m)}}.withDefaults()
}

// WorldConfig configures a World. The zero value is a valid default.
type WorldConfig struct {
	Arena ArenaConfig
	// Gravity is the downward acceleration in m/s². Zero: 9.81. Use a
	// tiny positive value for "no gravity".
	Gravity float64
	// VelocityIterations and PositionIterations are box2d's solver
	// iterations per step. Zero: 8 and 3 (box2d's recommendation). More
	// make joints stiffer at a proportional cost.
	VelocityIterations int
	PositionIterations int
}

func (c WorldConfig) withDefaults() WorldConfig {
	c.Arena = c.Arena.withDefaults()
	if c.Gravity == 0 {
		c.Gravity = 9.81
	}
	if c.VelocityIterations == 0 {
		c.VelocityIterations = 8
	}
	if c.PositionIterations == 0 {
		c.PositionIterations = 3
	}
	return c
}

// validate checks c (after filling defaults) and returns an error wrapping
// ErrInvalidConfig describing the first problem.
func (c WorldConfig) validate() error {
	c = c.withDefaults()
	if err := c.Arena.check(); err != nil {
		return err
	}
	if !(c.Gravity > 0 && c.Gravity <= 100) {
		return fmt.Errorf("%w: gravity %g, want (0, 100] m/s²", ErrInvalidConfig, c.Gravity)
	}
	if c.VelocityIterations < 1 || c.VelocityIterations > 100 || c.PositionIterations < 1 || c.PositionIterations > 100 {
		return fmt.Errorf("%w: solver iterations %d/%d, want 1..100", ErrInvalidConfig, c.VelocityIterations, c.PositionIterations)
	}
	return nil
}

// World is a box2d world with an arena, fighters and props, stepped at a fixed
// 60 Hz. It is not safe for concurrent use.
//
// Each Step runs every fighter's controller, steps box2d once, then collects
// the step's hit events (Hits) and object contacts (Contacts,
// FighterPropContacts). Those slices are reused by the next step.
type World struct {
	cfg    WorldConfig
	limits bodyLimits
	codec  *snapshotCodec
	b2     box2d.B2World

	arenaBodies []*box2d.B2Body
	arenaShapes []Shape // in world coordinates (Body = index into arenaBodies)

	objects  []*Object  // sorted by id
	fighters []*Fighter // sorted by id
	refs     map[*box2d.B2Body]bodyRef

	tick      uint64
	nextGroup int16

	// The shared clock fighters' cycles follow (SetClock): its value at
	// step clockTick.
	clock     clocksync.GameTime
	clockTick uint64

	pending    []HitEvent
	hits       []HitEvent
	contacts   []Contact
	fpContacts []Contact
}

type bodyRef struct {
	obj   *Object
	index int
}

// NewWorld creates a world with the arena described by cfg.
func NewWorld(cfg WorldConfig) (*World, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	w := &World{
		cfg:       cfg,
		limits:    cfg.Arena.limits(),
		b2:        box2d.MakeB2World(box2d.B2Vec2{X: 0, Y: -cfg.Gravity}),
		refs:      make(map[*box2d.B2Body]bodyRef),
		nextGroup: -1,
	}
	// Filtering is off in this box2d port until a filter is installed. No
	// contact listener: hits and contacts are read from box2d's contact
	// list after each step (a listener would make box2d allocate a
	// B2ContactImpulse per contact per step for PostSolve).
	w.b2.SetContactFilter(&box2d.B2ContactFilter{})
	w.buildArena()
	c, err := newCodec(w.limits, w)
	if err != nil {
		return nil, err // cannot happen: the limits passed Validate
	}
	w.codec = c
	return w, nil
}

func (w *World) buildArena() {
	a := w.cfg.Arena
	t := a.WallThickness
	hw, h := a.Width/2, a.Height
	boxes := [...]struct{ cx, cy, hx, hy float64 }{
		{0, -t / 2, hw + t, t / 2},         // ground
		{-hw - t/2, h / 2, t / 2, h/2 + t}, // left wall
		{hw + t/2, h / 2, t / 2, h/2 + t},  // right wall
		{0, h + t/2, hw + t, t / 2},        // ceiling
	}
	for i, bx := range boxes {
		bd := box2d.MakeB2BodyDef()
		bd.Type = box2d.B2BodyType.B2_staticBody
		bd.Position = box2d.B2Vec2{X: bx.cx, Y: bx.cy}
		b := w.b2.CreateBody(&bd)
		shape := box2d.MakeB2PolygonShape()
		shape.SetAsBox(bx.hx, bx.hy)
		fd := box2d.MakeB2FixtureDef()
		fd.Shape = &shape
		fd.Friction = a.Friction
		fd.Filter = box2d.MakeB2Filter()
		fd.Filter.CategoryBits = CategoryArena
		b.CreateFixtureFromDef(&fd)
		w.arenaBodies = append(w.arenaBodies, b)
		w.arenaShapes = append(w.arenaShapes, Shape{Body: i, Kind: ShapeBox,
			Center: Vec2{bx.cx, bx.cy}, HalfExtents: Vec2{bx.hx, bx.hy},
			Vertices: []Vec2{{bx.cx - bx.hx, bx.cy - bx.hy}, {bx.cx + bx.hx, bx.cy - bx.hy},
				{bx.cx + bx.hx, bx.cy + bx.hy}, {bx.cx - bx.hx, bx.cy + bx.hy}}})
	}
}

// B2 returns the underlying box2d world, for games that add their own bodies
// (then wrap them with AddBodies) or joints. Do not replace its contact filter
// or listener, and do not step it directly: use Step.
func (w *World) B2() *box2d.B2World { return &w.b2 }

// Config returns the world's configuration with defaults filled in.
func (w *World) Config() WorldConfig { return w.cfg }

// Arena returns the arena's interior.
func (w *World) Arena() Rect { return w.cfg.Arena.interior() }

// ArenaShapes returns the static arena boxes (ground, left wall, right wall,
// ceiling) in world coordinates, for drawing. Shared; do not modify.
func (w *World) ArenaShapes() []Shape { return w.arenaShapes }

// Tick returns the number of steps taken so far. Events of the most recent
// step carry Tick() as their tick.
func (w *World) Tick() uint64 { return w.tick }

// SetClock sets the game time that the fighters' cyclic motions (the
// walking gait) follow, from the next step on; it then runs on by
// TickDuration a step until set again. Two peers whose worlds follow the
// same clock (the shared game time: ownership.Replicator sets it every tick)
// see a fighter and its remote copy step in phase. Until it is set, a world
// follows its own step count.
func (w *World) SetClock(t clocksync.GameTime) { w.clock, w.clockTick = t, w.tick }

// cycleTime is the time in seconds the fighters' cycles follow.
func (w *World) cycleTime() float64 {
	return float64(w.clock)*1e-6 + float64(w.tick-w.clockTick)*dt
}

// Objects returns every object, sorted by id. Shared; do not modify.
func (w *World) Objects() []*Object { return w.objects }

// Fighters returns every fighter, sorted by id. Shared; do not modify.
func (w *World) Fighters() []*Fighter { return w.fighters }

// Object returns the object with id, or nil.
func (w *World) Object(id ObjectID) *Object {
	i := w.search(id)
	if i < len(w.objects) && w.objects[i].id == id {
		return w.objects[i]
	}
	return nil
}

// Fighter returns the fighter with id, or nil.
func (w *World) Fighter(id ObjectID) *Fighter {
	if o := w.Object(id); o != nil {
		return o.fighter
	}
	return nil
}

// layout returns the layout of object id, or nil. With it a World is the
// layoutSource of its codec.
func (w *World) layout(id ObjectID) *Layout {
	if o := w.Object(id); o != nil {
		return &o.layout
	}
	return nil
}

// ObjectOf returns the object body b belongs to and its body index, or nil
// and -1 (arena walls, bodies never wrapped).
func (w *World) ObjectOf(b *box2d.B2Body) (*Object, int) {
	if r, ok := w.refs[b]; ok {
		return r.obj, r.index
	}
	return nil, -1
}

func (w *World) search(id ObjectID) int {
	lo, hi := 0, len(w.objects)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if w.objects[m].id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (w *World) checkNewID(id ObjectID) error {
	if id == 0 {
		return ErrInvalidID
	}
	if w.Object(id) != nil {
		return fmt.Errorf("%w: %v", ErrDuplicateObject, id)
	}
	if w.b2.IsLocked() {
		return ErrWorldLocked
	}
	return nil
}

// register inserts o, keeping objects (and fighters) sorted by id.
func (w *World) register(o *Object) {
	i := w.search(o.id)
	w.objects = append(w.objects, nil)
	copy(w.objects[i+1:], w.objects[i:])
	w.objects[i] = o
	for k, b := range o.bodies {
		w.refs[b] = bodyRef{obj: o, index: k}
		o.mass += b.M_mass
	}
	o.shapes = shapesOf(o.bodies)
	if o.fighter != nil {
		j := sort.Search(len(w.fighters), func(j int) bool { return w.fighters[j].obj.id >= o.id })
		w.fighters = append(w.fighters, nil)
		copy(w.fighters[j+1:], w.fighters[j:])
		w.fighters[j] = o.fighter
	}
}

// AddBodies wraps bodies the game created in w.B2() as an object, so they get
// an id, state read/write, snapshots and contact events. layout may be nil:
// the layout is then derived from the bodies' revolute and weld joints: body
// i becomes the child of the lowest-index earlier body it shares a revolute or
// weld joint with, or a root if there is none, so list parents first (torso,
// then upper limbs, then lower limbs). The bodies keep their own filters and
// user data. Up to MaxBodiesPerObject bodies; each may belong to one object
// only.
func (w *World) AddBodies(id ObjectID, bodies []*box2d.B2Body, layout *Layout) (*Object, error) {
	if err := w.checkNewID(id); err != nil {
		return nil, err
	}
	if len(bodies) == 0 || len(bodies) > MaxBodiesPerObject {
		return nil, fmt.Errorf("%w: %v: %d bodies, want 1..%d", ErrInvalidConfig, id, len(bodies), MaxBodiesPerObject)
	}
	for i, b := range bodies {
		if b == nil || b.M_world != &w.b2 {
			return nil, fmt.Errorf("%w: %v: body %d is nil or not in this world", ErrInvalidConfig, id, i)
		}
		if o, _ := w.ObjectOf(b); o != nil {
			return nil, fmt.Errorf("%w: %v: body %d already belongs to %v", ErrInvalidConfig, id, i, o.id)
		}
		if indexOfBody(bodies[:i], b) >= 0 {
			return nil, fmt.Errorf("%w: %v: body %d listed twice", ErrInvalidConfig, id, i)
		}
	}
	var l Layout
	if layout != nil {
		l = layout.clone()
	} else {
		l = layoutOf(bodies)
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	if len(l.Bodies) != len(bodies) {
		return nil, fmt.Errorf("%w: %v: layout has %d bodies, object %d", ErrInvalidConfig, id, len(l.Bodies), len(bodies))
	}
	o := &Object{id: id, kind: kindCustom, world: w, bodies: append([]*box2d.B2Body(nil), bodies...), layout: l}
	w.register(o)
	return o, nil
}

// RemoveObject removes object id from the world. Bodies this package created
// (fighters, props) are destroyed; bodies wrapped with AddBodies are only
// forgotten (the game owns them). Removing an unknown id returns
// ErrUnknownObject.
func (w *World) RemoveObject(id ObjectID) error {
	if w.b2.IsLocked() {
		return ErrWorldLocked
	}
	i := w.search(id)
	if i >= len(w.objects) || w.objects[i].id != id {
		return fmt.Errorf("%w: %v", ErrUnknownObject, id)
	}
	o := w.objects[i]
	w.objects = append(w.objects[:i], w.objects[i+1:]...)
	if o.fighter != nil {
		for j, f := range w.fighters {
			if f == o.fighter {
				w.fighters = append(w.fighters[:j], w.fighters[j+1:]...)
				break
			}
		}
	}
	for _, b := range o.bodies {
		delete(w.refs, b)
		if o.created {
			w.b2.DestroyBody(b)
		}
	}
	o.world = nil
	if o.fighter != nil {
		o.fighter.world = nil
	}
	return nil
}

// box2dMu serialises box2d's steps across all worlds. box2d v1.0.2 updates
// package-level state inside Step without synchronisation: the contact
// registers it initialises lazily on the first contact (a concurrent first
// contact can see them half built and silently create no contact), and the
// GJK and time-of-impact call counters it increments on every query. So
// worlds stepped in different goroutines (two peers in one process, a bot,
// parallel simulations) take turns; one world never waits for itself.
var box2dMu sync.Mutex

// Step advances the world by one tick (Dt): fighters' controllers act on
// their inputs, box2d steps once, then hit events and contacts of the step
// are collected. It allocates nothing of its own (box2d allocates inside).
// Worlds may be stepped from different goroutines (each world from one at a
// time): box2d's own step runs under a package-wide lock, since box2d keeps
// unsynchronised package-level state. Do not step box2d yourself (a
// b2World you reach into, another World's internals): only through Step.
func (w *World) Step() {
	w.pending = w.pending[:0]
	w.hits = w.hits[:0]
	w.contacts = w.contacts[:0]
	w.fpContacts = w.fpContacts[:0]
	for _, f := range w.fighters {
		f.update()
	}
	box2dMu.Lock()
	w.b2.Step(dt, w.cfg.VelocityIterations, w.cfg.PositionIterations)
	box2dMu.Unlock()
	w.tick++
	w.collectContacts()
	for i := range w.pending {
		h := &w.pending[i]
		h.Tick = w.tick
		w.hits = append(w.hits, *h)
		if a := w.Fighter(h.Attacker); a != nil {
			a.hitVictims = append(a.hitVictims, h.Victim)
		}
	}
	for _, o := range w.objects {
		o.clampSpeeds(&w.limits)
		o.unwindAngles()
	}
}

// Hits returns the hit events of the last step, in box2d's contact order. The slice
// is reused by the next Step; copy what you keep.
func (w *World) Hits() []HitEvent { return w.hits }

// Contact is a touching pair of objects at the end of a step: the first body
// pair found, and the summed normal impulse (N·s) of every touching body pair
// of the two objects during the step's last solver pass.
type Contact struct {
	A, B         ObjectID
	BodyA, BodyB int
	Impulse      float64
}

// Contacts returns every pair of distinct objects touching at the end of the
// last step, each pair once with A < B, in box2d's contact order
// (deterministic). Arena walls are not objects and are not listed. The slice is
// reused by the next Step.
func (w *World) Contacts() []Contact { return w.contacts }

// FighterPropContacts returns the subset of Contacts between a fighter and a
// non-fighter object (prop or custom), with the fighter as A — what ownership
// transfer of shared props needs. Reused by the next Step.
func (w *World) FighterPropContacts() []Contact { return w.fpContacts }

func (w *World) collectContacts() {
	for c := w.b2.M_contactManager.M_contactList; c != nil; c = c.GetNext() {
		if c.GetFlags()&box2d.B2Contact_Flag.E_touchingFlag == 0 {
			continue
		}
		fa, fb := c.GetFixtureA(), c.GetFixtureB()
		if fa.M_isSensor || fb.M_isSensor {
			continue
		}
		ra, oka := w.refs[fa.M_body]
		rb, okb := w.refs[fb.M_body]
		if !oka || !okb || ra.obj == rb.obj {
			continue
		}
		if ra.obj.id > rb.obj.id {
			ra, rb = rb, ra
		}
		// box2d stores each point's last normal impulse in the manifold.
		m := c.GetManifold()
		var imp float64
		for k := 0; k < m.PointCount && k < len(m.Points); k++ {
			imp += math.Abs(m.Points[k].NormalImpulse)
		}
		if ra.obj.fighter != nil && rb.obj.fighter != nil {
			w.hitCandidate(ra, rb, imp)
			w.hitCandidate(rb, ra, imp)
		}
		found := false
		for k := range w.contacts {
			if w.contacts[k].A == ra.obj.id && w.contacts[k].B == rb.obj.id {
				w.contacts[k].Impulse += imp
				found = true
				break
			}
		}
		if !found {
			w.contacts = append(w.contacts, Contact{A: ra.obj.id, B: rb.obj.id, BodyA: ra.index, BodyB: rb.index, Impulse: imp})
		}
	}
	for _, c := range w.contacts {
		fa, fb := w.Object(c.A).fighter != nil, w.Object(c.B).fighter != nil
		switch {
		case fa && !fb:
			w.fpContacts = append(w.fpContacts, c)
		case fb && !fa:
			w.fpContacts = append(w.fpContacts, Contact{A: c.B, B: c.A, BodyA: c.BodyB, BodyB: c.BodyA, Impulse: c.Impulse})
		}
	}
}

// hitCandidate records a strike of attacker body att on victim body vic with
// the given impulse, if att is the striking limb of an active attack that has
// not hit this victim yet and both fighters' hits are on (SetHitsEnabled).
// One event per attacker and victim per step, keeping the strongest contact.
func (w *World) hitCandidate(att, vic bodyRef, impulse float64) {
	f := att.obj.fighter
	if f.noHits || vic.obj.fighter.noHits || !f.striking(att.index) || impulse < f.tuning.MinHitImpulse || f.hasHit(vic.obj.id) {
		return
	}
	for i := range w.pending {
		p := &w.pending[i]
		if p.Attacker == att.obj.id && p.Victim == vic.obj.id {
			if impulse > p.Impulse {
				p.Impulse, p.Part = impulse, PartOf(vic.index)
			}
			return
		}
	}
	w.pending = append(w.pending, HitEvent{Attacker: att.obj.id, Victim: vic.obj.id,
		Part: PartOf(vic.index), Impulse: impulse, Attack: f.attack, Blocked: vic.obj.fighter.action == ActionBlock,
		AttackSeq: f.attackSeq & 3, Strike: PartOf(att.index)})
}
