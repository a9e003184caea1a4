package ownership

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/correction"
	"github.com/ragsync/ragsync/physics"
)

// Config configures a Replicator. The zero value is the default; every
// field documents its zero-value default.
type Config struct {
	// Correction configures the correctors of remote objects. Zero:
	// correction.MethodFollow with its defaults.
	Correction correction.Config

	// MaxDelay is the timestamp filter's largest accepted age of a state.
	// Zero: 500 ms (clocksync.Filter's default). Negative: no limit.
	MaxDelay time.Duration

	// ClaimCooldown is the cooldown in world ticks after an ownership
	// change of a shared object before this peer claims it again. Zero: 30
	// (half a second).
	ClaimCooldown int

	// Divergence configures the position-disconnect monitor of every
	// remote object. Zero: correction's defaults (1.5 m, 30 ticks).
	Divergence correction.Monitor

	// RemoteGravity keeps gravity on for remote objects. By default (false)
	// the bodies of objects the rival owns have gravity scale 0: they are
	// puppets moved by collisions and the correction only, so a limp remote
	// ragdoll does not sag between states. Set it to let remote objects
	// fall under gravity as well. With correction.MethodFollow remote
	// objects always keep gravity: its remote fighters stand on their own
	// muscles.
	RemoteGravity bool

	// RoundLength is the longest a round lasts: ResetRound is accepted
	// once it has passed since the last reset (or the first tick), and
	// otherwise only after a knock-out. Zero: 60 s. Negative: rounds end
	// only on a knock-out.
	RoundLength time.Duration
}

// Stats are a Replicator's counters. Reading them allocates nothing.
type Stats struct {
	// PacketsOut and BytesOut count packets built by AppendPacket.
	PacketsOut, BytesOut uint64
	// PacketsIn and BytesIn count packets given to HandlePacket.
	PacketsIn, BytesIn uint64
	// Malformed counts packets that could not be parsed.
	Malformed uint64
	// Filter counts the timestamp filter's verdicts on parseable packets.
	Filter clocksync.FilterCounts
	// Unauthorized counts object states refused because the sender does
	// not own the object (or it is local-only or unknown, or its claim
	// skips epochs): a bug or a cheat.
	Unauthorized uint64
	// ClaimsLost counts states of shared objects refused because the
	// sender's ownership claim is stale or lost a tie: normal for a few
	// ticks after a transfer.
	ClaimsLost uint64
	// Invalid counts object states refused by validation (out of bounds,
	// inconsistent fighter state, an invalid input with them), and inputs
	// without their fighter's state.
	Invalid uint64
	// Applied counts object states that became correction targets.
	Applied uint64
	// Claims counts shared objects this peer claimed; Transfers counts
	// every ownership change (either way); Ties counts simultaneous claims
	// this peer's claim lost (each tie is counted once, by the peer that
	// gives the object up).
	Claims, Transfers, Ties uint64
	// HitsTaken counts hits on this peer's fighters, whose damage this peer
	// applied; Damage is the total damage applied.
	HitsTaken, Damage uint64
	// HitsDealt counts hits this peer's fighters landed on remote fighters
	// in the local world (their owner decides the damage; each is reported
	// to it).
	HitsDealt uint64
	// Hits counts the hits on this peer's fighters by verdict (confirmed
	// reports, hits detected here, duplicates), and the reports sent.
	Hits HitStats
	// Refused counts, by reason, the rival's states, hit reports, hits and
	// claims a rule of its own fighter refused (see RefusedError). None of
	// them changed anything.
	Refused Refusals
	// Correction sums the correctors of remote objects with
	// correction.Stats.Add: the counters added, MaxError and MaxPop the
	// largest of the last tick; the per-body Error, AngleError and Pop
	// are left zero (they are per object: Corrector(id).Stats()).
	Correction correction.Stats
	// PositionDisconnects counts runs of critical position gaps longer than
	// the monitor allows (see correction.Monitor).
	PositionDisconnects uint64
	// Diverged reports that some remote object is in such a run now.
	Diverged bool
}

type replicated struct {
	obj     *physics.Object
	fighter *physics.Fighter
	corr    *correction.Corrector
	mon     correction.Monitor
	mode    Mode                                // cached from the registry by setMode, for the per-tick paths
	shared  bool                                // ownership can change (fixed at Track)
	follow  bool                                // a remote fighter follows its owner (correction.MethodFollow)
	idle    bool                                // a following fighter let go of its controls (no recent state)
	heard   clocksync.GameTime                  // when its last state arrived
	gravity [physics.MaxBodiesPerObject]float64 // gravity scales to restore

	stamp   clocksync.GameTime // the time of its last applied state
	hist, k int                // offset of its poses in a history record; index among the objects
	size    float64            // largest distance from a body's origin to its shapes

	// A remote fighter is held to the rules of its own fighter.
	attacks attackPolicy
	health  healthPolicy
	budget  damageBudget
	motion  motion
}

// Replicator keeps the objects of a physics.World in sync with the rival's
// copy. Each tick the game calls, in this order:
//
//	HandlePacket(p, now)   for every packet received since the last tick
//	BeforeStep(now)        corrects remote objects toward their targets
//	world.Step()
//	AfterStep()            applies hits on owned fighters, claims touched props
//	AppendPacket(dst, now) builds the packet to send (unreliably)
//
// where now is the shared game time (clocksync). A Replicator is not safe for
// concurrent use. After the objects are registered, the per-tick calls
// allocate nothing of their own.
type Replicator struct {
	world *physics.World
	reg   *registry
	cfg   Config

	objs   []*replicated // sorted by object id
	filter clocksync.Filter
	seq    uint32
	out    physics.Snapshot
	in     physics.Snapshot
	claims [maxClaims]claim
	inputs [maxInputs]input
	body   []physics.BodyState // scratch
	stats  Stats

	lastDrop  clocksync.Reason // the filter's verdict on the last parseable packet
	follow    bool             // the correction is correction.MethodFollow
	inputHold time.Duration    // the correction's InputHold

	now               clocksync.GameTime // of the tick (BeforeStep)
	hist              *history           // poses of every object, per tick
	outHits           [maxReports]hitReport
	nout              int // hits this peer's fighters landed, being repeated
	reports           [maxReports]hitReport
	seen              [seenWindow]seenReport
	nseen             int
	lastHeard, gapEnd clocksync.GameTime // the last accepted packet's arrival; the first's after a gap
	rival             rivalClock         // the rival's ticks, from its packets' sequence numbers
	inTick            int64              // the rival's tick of the packet being handled (rival)
	heardAny          bool
	damaged           []physics.HitEvent // hits applied as damage this tick
	sent              bool               // AppendPacket ran: damaged is last tick's
	floor             float64            // the arena's floor (y), for the rival's time in the air
	roundStart        clocksync.GameTime // the last accepted round reset, or the first tick
	round             uint32             // round resets declared here (every packet carries it)
	rounds            roundPolicy        // the rival's rounds, paired with this peer's
	newRound          bool               // the packet being handled is the first of a new round
	bodiesOnly        bool               // ... of a round not declared here yet: only its bodies apply
	placed            bool               // the rival's objects may be anywhere in it (a new round's first packet)
	lastOld           clocksync.GameTime // the arrival of the last packet of a round declared here
	started           bool               // BeforeStep ran
}

// New returns a replicator of world for peer local, whose rival is remote
// (both peers use the same two ids; ragsync.Match uses 1 for the offerer and
// 2 for the answerer). Register the world's objects with Track and LocalOnly
// before the match starts.
func New(world *physics.World, local, remote PeerID, cfg Config) (*Replicator, error) {
	if world == nil {
		return nil, errors.New("ownership: nil world")
	}
	if cfg.Correction.Bounds == (physics.Rect{}) {
		cfg.Correction.Bounds = world.Arena()
	}
	if err := cfg.Correction.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Divergence.Validate(); err != nil {
		return nil, err
	}
	reg, err := newRegistry(local, remote, cfg.ClaimCooldown)
	if err != nil {
		return nil, err
	}
	corr := cfg.Correction.WithDefaults()
	return &Replicator{
		world:     world,
		reg:       reg,
		cfg:       cfg,
		filter:    clocksync.Filter{MaxDelay: cfg.MaxDelay},
		follow:    corr.Method == correction.MethodFollow,
		inputHold: corr.InputHold,
		body:      make([]physics.BodyState, 0, physics.MaxBodiesPerObject),
		damaged:   make([]physics.HitEvent, 0, 8),
		floor:     world.Arena().Min.Y,
	}, nil
}

// Owner returns the owner of object id and its ownership epoch (0, 0 for
// local-only or unknown objects), e.g. to colour props by owner.
func (r *Replicator) Owner(id physics.ObjectID) (PeerID, uint32) { return r.reg.owner(id) }

// Track registers an object of the world owned by owner (this peer or the
// rival). A shared object (a prop) changes owner when a fighter touches it;
// the owner of one that is not shared never changes (a fighter).
func (r *Replicator) Track(id physics.ObjectID, owner PeerID, shared bool) error {
	obj := r.world.Object(id)
	if obj == nil {
		return fmt.Errorf("ownership: %v: %w", id, physics.ErrUnknownObject)
	}
	if err := r.reg.add(id, owner, shared); err != nil {
		return err
	}
	corr, err := correction.New(r.cfg.Correction, obj.NumBodies())
	if err == nil {
		err = corr.SetLayout(obj.Layout())
	}
	if err != nil {
		r.reg.remove(id)
		return err
	}
	o := &replicated{obj: obj, fighter: obj.Fighter(), corr: corr, mon: r.cfg.Divergence, shared: shared, size: sizeOf(obj)}
	for i, b := range obj.Bodies() {
		o.gravity[i] = b.M_gravityScale
	}
	o.initRival()
	r.insert(o)
	r.hist = nil // rebuilt for the new set of objects
	r.setMode(o, r.reg.mode(id))
	return nil
}

// LocalOnly registers an object of the world that is never synced.
func (r *Replicator) LocalOnly(id physics.ObjectID) error {
	if r.world.Object(id) == nil {
		return fmt.Errorf("ownership: %v: %w", id, physics.ErrUnknownObject)
	}
	return r.reg.addLocalOnly(id)
}

func (r *Replicator) insert(o *replicated) {
	i, _ := slices.BinarySearchFunc(r.objs, o.obj.ID(), cmpObj)
	r.objs = slices.Insert(r.objs, i, o)
}

func cmpObj(o *replicated, id physics.ObjectID) int { return int(o.obj.ID()) - int(id) }

func (r *Replicator) lookup(id physics.ObjectID) *replicated {
	if i, ok := slices.BinarySearchFunc(r.objs, id, cmpObj); ok {
		return r.objs[i]
	}
	return nil
}

// setMode makes o owned (simulated freely, controller on) or remote
// (corrected; with MethodFollow fighters follow their owners, otherwise
// they are limp and weightless unless RemoteGravity).
func (r *Replicator) setMode(o *replicated, m Mode) {
	o.mode = m
	o.motion.forget()
	o.corr.Reset()
	o.mon.Reset()
	o.idle = false
	remote := m == ModeRemote
	o.follow = remote && r.follow && o.fighter != nil
	for i, b := range o.obj.Bodies() {
		g := o.gravity[i]
		if remote && !r.cfg.RemoteGravity && !r.follow {
			g = 0
		}
		b.SetGravityScale(g)
		b.SetAwake(true)
	}
	if o.fighter != nil {
		o.fighter.SetControlled(!remote)
		o.fighter.SetFollowing(o.follow)
	}
}

// Mode returns how this peer treats object id now.
func (r *Replicator) Mode(id physics.ObjectID) Mode { return r.reg.mode(id) }

// AppendPacket appends to dst the state packet for this tick: the states of
// every object this peer owns, stamped with game time now, with the claims of
// the shared ones and the input of each fighter. It allocates only if dst
// lacks capacity (a packet is at most a physics snapshot, 1200 bytes, plus
// the claims and inputs). Call it once per tick, every tick: the packets' sequence
// numbers count the sender's ticks, and the rival judges its attacks' pace
// by them (RefusedAttackRate).
func (r *Replicator) AppendPacket(dst []byte, now clocksync.GameTime) ([]byte, error) {
	start := len(dst)
	r.out.Reset(now, r.seq)
	r.seq++
	dst = append(dst, KindState, wireVersion)
	dst = binary.AppendUvarint(dst, uint64(r.round))
	n := 0
	for _, o := range r.objs {
		if o.mode == ModeOwned && o.shared {
			n++
		}
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for _, o := range r.objs {
		if o.mode != ModeOwned {
			continue
		}
		if o.shared {
			_, epoch := r.reg.owner(o.obj.ID())
			dst = binary.AppendUvarint(dst, uint64(o.obj.ID()))
			dst = binary.AppendUvarint(dst, uint64(epoch))
		}
		r.out.Add(o.obj)
	}
	n = 0
	for _, o := range r.objs {
		if o.mode == ModeOwned && o.fighter != nil {
			n++
		}
	}
	dst = binary.AppendUvarint(dst, uint64(min(n, maxInputs)))
	n = 0
	for _, o := range r.objs { // in increasing id order
		if o.mode == ModeOwned && o.fighter != nil && n < maxInputs {
			dst = binary.AppendUvarint(dst, uint64(o.obj.ID()))
			dst = append(dst, byte(o.fighter.Input()))
			n++
		}
	}
	dst = r.appendHits(dst, now)
	dst, err := r.world.AppendSnapshot(dst, &r.out)
	if err != nil {
		return dst[:start], err
	}
	r.stats.PacketsOut++
	r.stats.BytesOut += uint64(len(dst) - start)
	r.sent = true
	return dst, nil
}

// HandlePacket processes one packet from the rival at game time now: parse,
// then the timestamp filter, then for each object of the packet, in this
// order:
//
//  1. authorize: does the rival own the object, or does its ownership claim
//     win? (a pure check: nothing changes yet)
//  2. validate the whole object state: bodies finite, in bounds, at
//     plausible speeds; a fighter's HP, action and attack consistent
//     (physics.Object.Validate); and the input the packet carries with it:
//     defined bits only (physics.InputMask), and only for a fighter
//  3. commit: a winning claim moves the object to the rival, and the
//     state becomes the object's correction target (and, for a fighter,
//     its HP, action and attack, and its input).
//
// A state that fails a step is skipped and counted, and changes nothing;
// one that is both unauthorized and invalid counts as unauthorized. An
// input whose fighter's state the packet does not carry is invalid too and
// reaches no fighter. The packet's other objects are still applied, so one
// bad object loses nothing else. HandlePacket returns a *PacketError (ErrMalformed) for a packet it
// cannot parse, or else the first per-object error (an *AuthorityError, a
// *physics.StateError), or nil. A packet the timestamp filter drops
// (duplicate, out of order, too old, too far ahead) is not an error: it is
// counted in Stats.Filter. Neither is the state of a shared object whose
// claim lost (the rival had not yet seen the object change hands): it is
// skipped and counted in Stats.ClaimsLost. Nothing invalid reaches box2d.
// Well-formed packets allocate nothing.
func (r *Replicator) HandlePacket(p []byte, now clocksync.GameTime) error {
	r.newTick()
	r.stats.PacketsIn++
	r.stats.BytesIn += uint64(len(p))
	h, body, err := r.parseHeader(p)
	if err != nil {
		r.stats.Malformed++
		return err
	}
	if err := r.world.DecodeSnapshot(body, &r.in); err != nil {
		r.stats.Malformed++
		var off int
		var ce *physics.CodecError
		if errors.As(err, &ce) {
			off = ce.Offset
		}
		return &PacketError{Offset: len(p) - len(body) + off, Field: "snapshot", Err: fmt.Errorf("%w: %w", ErrMalformed, err)}
	}
	r.lastDrop = r.filter.Check(r.in.Time, now)
	r.stats.Filter = r.filter.Counts()
	if r.lastDrop != clocksync.Accepted {
		return nil // normal on an unreliable link: counted, not an error
	}
	if r.heardAny && now.Sub(r.lastHeard) > claimGap {
		r.gapEnd = now // the first packet after a gap in the rival's stream
	}
	r.lastHeard, r.heardAny = now, true
	r.inTick = r.rival.advance(r.in.Seq, r.in.Time)
	r.newRound, r.bodiesOnly, r.placed = false, false, false
	switch {
	case !r.rounds.newRound(h.round):
		r.rounds.lapse(now, r.gapEnd)
		r.lastOld = now
	case r.rounds.owed > 0:
		r.newRound, r.placed = true, true // paired with a reset declared here
	case r.roundDecided(now, roundGrace) || r.lastOld < r.gapEnd:
		// The rival started a round this peer has not declared yet,
		// on what this peer sees too, or after an outage that may
		// have hidden its fighter's knock-out: until this peer
		// declares it, the rival's fighters stay as they were (or
		// knocked out, see rivalAhead) while their bodies move as
		// its states say.
		r.bodiesOnly = true
		// Its first packet places the rival's objects anew (the
		// rival's reset moved them to their starts): its bodies are
		// judged from there on.
		r.placed = r.rounds.ahead(h.round)
		for i := range r.in.Objects {
			if o := r.lookup(r.in.Objects[i].ID); o != nil && o.mode == ModeRemote {
				r.rivalAhead(o, now)
			}
		}
	default:
		// A round started on the rival's word alone: its states are
		// judged as the old round's.
		r.rounds.refuse(r, h.round)
	}

	var first error
	fail := func(err error) {
		if first == nil {
			first = err
		}
	}
	tick := r.world.Tick()
	ins := h.inputs // increasing ids, like the objects
	for i := range r.in.Objects {
		os := &r.in.Objects[i]
		var epoch uint32
		for _, c := range h.claims {
			if c.id == os.ID {
				epoch = c.epoch
				break
			}
		}
		for len(ins) > 0 && ins[0].id < os.ID {
			fail(r.strayInput(ins[0]))
			ins = ins[1:]
		}
		var in *input
		if len(ins) > 0 && ins[0].id == os.ID {
			in, ins = &ins[0], ins[1:]
		}
		if err := r.apply(r.lookup(os.ID), os, epoch, in, tick, now); err != nil {
			fail(err)
		}
	}
	for i := range ins {
		fail(r.strayInput(ins[i]))
	}
	if r.newRound {
		r.rounds.commit(h.round)
		r.newRound = false
	}
	r.placed = false
	if r.bodiesOnly {
		return first // its hits belong to a round not declared here
	}
	for i := range h.reports {
		h.reports[i].g += r.in.Time // the wire carries its age
		if err := r.judgeReport(&h.reports[i]); err != nil {
			fail(err)
		}
	}
	return first
}

// errStrayInput is wrapped by the *physics.StateError of an input that
// belongs to no fighter state of its packet.
var errStrayInput = errors.New("input without its fighter's state")

// strayInput counts and reports an input the packet carries no state of a
// fighter for.
func (r *Replicator) strayInput(in input) error {
	r.stats.Invalid++
	return &physics.StateError{Object: in.id, Body: -1, Field: "input", Value: float64(in.in), Err: errStrayInput}
}

// validateInput checks the input (nil: none) that came with state os of
// object o: only the defined bits, and only for a fighter.
func validateInput(o *replicated, os *physics.ObjectState, in *input) error {
	switch {
	case in == nil:
		return nil
	case o.fighter == nil:
		return &physics.StateError{Object: os.ID, Body: -1, Field: "input", Value: float64(in.in), Err: errStrayInput}
	case in.in&^physics.InputMask != 0:
		return &physics.StateError{Object: os.ID, Body: -1, Field: "input", Value: float64(in.in), Err: physics.ErrOutOfRange}
	}
	return nil
}

// apply judges and applies one object state of an accepted packet, with
// its fighter's input if the packet carries one (in, else nil), in one
// pass: authorize (registry.go), validate, the rival's rules (rival.go),
// commit (see HandlePacket). Each step but the last only judges. now is
// the game time.
func (r *Replicator) apply(o *replicated, os *physics.ObjectState, epoch uint32, in *input, tick uint64, now clocksync.GameTime) error {
	// 1. Authorize. Nothing changes yet.
	d, err := r.reg.authorize(r.reg.remote, os.ID, epoch)
	if err != nil {
		if errors.Is(err, ErrClaimLost) {
			// Normal while claims cross: the rival has not yet seen
			// that the object changed hands. Counted, not an error.
			r.stats.ClaimsLost++
			return nil
		}
		r.stats.Unauthorized++
		return err
	}
	if o == nil { // registered but not tracked: cannot happen via Track
		r.stats.Unauthorized++
		return &AuthorityError{Object: os.ID, Sender: r.reg.remote, Err: physics.ErrUnknownObject}
	}
	// 2. Validate everything the state would change, the fighter's input
	// included, so that what follows cannot fail half-way.
	if err := o.obj.Validate(os); err != nil {
		r.stats.Invalid++
		return err
	}
	if err := validateInput(o, os, in); err != nil {
		r.stats.Invalid++
		return err
	}
	// 3. The rival's rules (rival.go): its fighter's body, attacks and
	// HP, a claim's reach. Nothing changes yet, unless the state is held.
	if err := r.judgeRival(o, os, d, now); err != nil {
		return err
	}
	// 4. Commit: the transfer, the rules' record, the state, the input.
	if r.reg.commit(d, tick) {
		r.setMode(o, ModeRemote)
	}
	r.stats.Transfers, r.stats.Ties = r.reg.transfers, r.reg.ties
	r.commitRival(o, os)
	if o.fighter != nil && !r.bodiesOnly {
		var err error
		if o.follow {
			// Its attack runs on from where the owner was, this state's
			// age ago.
			err = o.fighter.FollowRemoteState(os.Fighter, now.Sub(r.in.Time))
		} else {
			err = o.fighter.SetRemoteState(os.Fighter)
		}
		if err != nil {
			r.stats.Invalid++ // cannot happen: validated above
			return err
		}
		if in != nil {
			o.fighter.SetInput(in.in)
		}
		o.idle = false
		o.heard = now
		o.stamp = r.in.Time
	}
	if err := o.corr.SetTarget(os.Bodies, r.in.Time); err != nil {
		r.stats.Invalid++ // cannot happen: validated above
		return err
	}
	r.stats.Applied++
	return nil
}

// BeforeStep corrects every remote object toward its owner's latest state at
// game time now, and feeds the divergence monitors. A remote fighter that
// follows its owner (correction.MethodFollow) and has received no state for
// longer than the correction's InputHold lets go of its controls and stands
// idle until one comes; a remote fighter whose newest state was sent longer
// than MaxDelay ago lands and takes no hits until one comes (see the package
// documentation, "Hits both players agree on"). It sets the world's clock (physics.World.SetClock)
// to now, so both peers' fighters walk in step. Call it after the tick's
// HandlePacket calls and before world.Step.
func (r *Replicator) BeforeStep(now clocksync.GameTime) {
	r.world.SetClock(now) // both peers' fighters walk in step
	r.newTick()
	r.now = now
	if !r.started {
		r.roundStart, r.started = now, true
	}
	r.stats.Correction.MaxError = 0
	r.stats.Diverged = false
	for _, o := range r.objs {
		if o.mode != ModeRemote {
			if o.fighter != nil && !o.fighter.HitsEnabled() {
				o.fighter.SetHitsEnabled(true)
			}
			continue
		}
		if o.fighter != nil {
			o.fighter.SetHitsEnabled(!r.guess(o, now))
		}
		if o.follow && !o.idle && o.corr.HasTarget() && now.Sub(o.heard) > r.inputHold {
			r.letGo(o.fighter)
			o.idle = true
		}
		if o.corr.Apply(o.obj.Bodies(), now) {
			e := o.corr.MaxError()
			r.stats.Correction.MaxError = math.Max(r.stats.Correction.MaxError, e)
			if o.mon.Observe(e) {
				r.stats.PositionDisconnects++
			}
		}
		r.stats.Diverged = r.stats.Diverged || o.mon.Disconnected()
	}
}

// guess reports whether the copy of remote object o is only a guess at game
// time now: no state of it yet, or none sent within the largest view age a
// hit report may have to be judged (viewLimit; an outage). A hit on such a
// copy would be stale on the rival's side (Stats.Hits.Stale: neither
// confirmed nor refused), and a hit by it struck with a fighter its owner
// did not see there, so BeforeStep switches a guessed fighter's hits off
// (physics.Fighter.SetHitsEnabled): neither screen shows a hit that no
// one's damage will follow.
func (r *Replicator) guess(o *replicated, now clocksync.GameTime) bool {
	if !o.corr.HasTarget() {
		return true
	}
	_, at := o.corr.Target(0)
	return now.Sub(at) > r.viewLimit()
}

// letGo makes a following fighter whose owner went quiet stand idle: no
// input, and no walk, block or attack in progress. A fall, a get-up, a
// knockout or a jump goes on.
func (r *Replicator) letGo(f *physics.Fighter) {
	f.SetInput(0)
	switch s := f.State(); s.Action {
	case physics.ActionWalk, physics.ActionBlock, physics.ActionPunch, physics.ActionKick:
		_ = f.SetRemoteState(physics.FighterState{HP: s.HP, Action: physics.ActionIdle, Facing: s.Facing, AttackSeq: s.AttackSeq})
	}
}

// Shown returns where a game should draw body i of object id: the body's
// own position and angle, plus the correction's smoothing offset for a
// remote object whose correction smooths (correction.Corrector.Offset).
func (r *Replicator) Shown(id physics.ObjectID, i int) (pos physics.Vec2, angle float64) {
	obj := r.world.Object(id)
	if obj == nil || i < 0 || i >= obj.NumBodies() {
		return physics.Vec2{}, 0
	}
	pos, angle = obj.Transform(i)
	if o := r.lookup(id); o != nil && o.mode == ModeRemote {
		dp, da := o.corr.Offset(i)
		pos, angle = pos.Add(dp), angle+da
	}
	return pos, angle
}

// AfterStep handles the step's events: hits on this peer's fighters are
// applied (the victim's owner decides damage), and shared props the local
// fighters touch are claimed. Call it right after world.Step.
func (r *Replicator) AfterStep() {
	if r.hist == nil {
		r.hist = newHistory(historyLen(r.cfg.MaxDelay), r.objs)
	}
	r.hist.record(r.objs, r.now)
	hits := r.world.Hits()
	for i := range hits {
		h := &hits[i]
		victim, attacker := r.reg.mode(h.Victim), r.reg.mode(h.Attacker)
		switch {
		case victim == ModeOwned && attacker == ModeRemote:
			r.detected(h)
		case victim == ModeOwned:
			if f := r.world.Fighter(h.Victim); f != nil {
				r.stats.Damage += uint64(f.ApplyHit(*h))
				r.stats.HitsTaken++
			}
		case victim == ModeRemote && attacker == ModeOwned:
			r.stats.HitsDealt++
			r.report(h)
		}
	}
	tick := r.world.Tick()
	for _, c := range r.world.FighterPropContacts() {
		if r.reg.mode(c.A) != ModeOwned || r.reg.mode(c.B) != ModeRemote {
			continue
		}
		if r.reg.claim(c.B, tick) {
			r.stats.Claims++
			r.stats.Transfers = r.reg.transfers
			if o := r.lookup(c.B); o != nil {
				r.setMode(o, ModeOwned)
			}
		}
	}
}

// Stats returns the replicator's counters, with the correction counters summed
// over every remote object.
func (r *Replicator) Stats() Stats {
	s := r.stats
	maxErr := s.Correction.MaxError
	s.Correction = correction.Stats{}
	for _, o := range r.objs {
		s.Correction.Add(o.corr.Stats())
	}
	s.Correction.MaxError = maxErr
	return s
}

// Corrector returns the corrector of object id (nil if it is not tracked),
// for per-body error statistics and the last received state (a ghost).
func (r *Replicator) Corrector(id physics.ObjectID) *correction.Corrector {
	if o := r.lookup(id); o != nil {
		return o.corr
	}
	return nil
}
