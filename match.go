// Package ragsync is netcode for peer-to-peer physics fighting games: two
// peers each simulate the whole Box2D world, each is the authority for the
// objects it owns, sends timestamped states of them over an unreliable link,
// and steers its copy of the rival's objects toward the received states.
//
// This package is the glue a game uses: a Match ties a physics.World, an
// ownership.Replicator and a Link (a p2p.Session, or any transport with a
// synced game clock) into one fixed-rate tick. A game connects, builds the
// same world on both peers, names the match's objects in a MatchConfig, and
// calls Tick at 60 Hz:
//
//	sess, err := p2p.Connect(ctx, signalURL, p2p.QuickMatch, p2p.Config{})
//	world, err := physics.NewWorld(physics.WorldConfig{})
//	// ... the same fighters and props, with the same ids, on both peers
//	m, err := ragsync.NewMatch(world, sess, ragsync.MatchConfig{
//		Fighters: [2]physics.ObjectID{1, 2}, // by side: the offerer's, the answerer's
//		Props:    []physics.ObjectID{3},     // shared; side 1 starts with them
//	})
//	for range ticker.C {
//		m.Fighter().SetInput(keys()) // your game's input
//		switch err := m.Tick(); {
//		case err == ragsync.ErrNotSynced:
//			continue // the clock is still calibrating: a second at most
//		case err != nil:
//			log.Fatal(err) // an object of the world nobody registered
//		}
//	}
//
// Each Tick, in this order:
//
//	receive ─▶ decode ─▶ timestamp filter ─▶ authorize ─▶ validate ─▶ commit (transfer, correction target)
//	correct remote objects ─▶ world.Step ─▶ hits (the victim's owner applies damage)
//	owned objects, hits to report ─▶ snapshot ─▶ encode ─▶ send (unreliable)
//
// Authorizing a state (does its sender own the object, or does its claim on
// a shared prop win?) changes nothing; a state is then validated as a whole
// (finite, in bounds, a consistent fighter state), and only a state that
// passes both commits anything: the change of owner its claim wins, and the
// correction target. A refused state is counted (MatchStats.Replicator) and
// moves nothing; one both unauthorized and invalid counts as unauthorized.
//
// Damage is the victim's owner's: a hit on this peer's fighter counts if
// this peer's world detected it, or if the rival reports that its world saw
// it and this peer confirms it against its own recorded poses at the hit's
// game time (lag compensation); each attack deals damage once
// (Match.Damaged). The rival is held to the rules of its own fighter: its
// attacks' pace, its damage rate, its HP (which rises only in a round reset
// both peers declare with Match.ResetRound) and its reach for props; what
// breaks them is refused and counted (ownership.Stats.Refused). See package
// ownership.
//
// The subpackages do the work: physics (world, ragdolls, snapshot codec),
// clocksync (peer clock calibration, timestamp filter), correction (moving a
// body toward a remote state), ownership (authority, transfers, the
// replicator), p2p (sessions over WebRTC with a TCP fallback, link
// statistics), signaling (pairing server and client). The demo and the
// cmd/ragsim simulator are both built on Match. docs/ARCHITECTURE.md at the
// repository's root maps them: the tick through every package and back,
// the goroutines, the lock order, the wire formats and the policies.
package ragsync

import (
	"errors"
	"fmt"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
	"github.com/ragsync/ragsync/signaling"
)

// Link is what a Match needs from the network: unreliable packets both ways,
// the shared game clock, and which side of the match this peer is.
// *p2p.Session implements it; so does any transport that runs a
// clocksync.Calibrator beside its packets.
type Link interface {
	// Send sends one packet, unreliably, without blocking. It may copy p
	// or not, but must not keep it after returning.
	Send(p []byte) error
	// Poll hands every packet received since the last Poll to fn, without
	// blocking; p is valid only during fn.
	Poll(fn func(p []byte)) int
	// GameTime is the shared game time now, and whether the clock is
	// synced with the peer's yet.
	GameTime() (clocksync.GameTime, bool)
	// Role is this peer's role, assigned by the pairing: the offerer
	// plays side 1, the answerer side 2.
	Role() signaling.Role
	// StartMatch tells the link the match has begun (a clock calibrator
	// then pings less often and its game clock never runs backwards).
	// The Match calls it on its first synced tick.
	StartMatch()
}

// ErrNotSynced is returned by Match.Tick while the link's game clock is not
// yet synced with the peer's: the tick then only drains the link.
var ErrNotSynced = errors.New("ragsync: game clock not synced yet")

// Setup errors, wrapped by *SetupError (besides physics.ErrInvalidID for a
// zero id, physics.ErrUnknownObject for an id the world does not have and
// physics.ErrDuplicateObject for an id listed twice).
var (
	// ErrNotAFighter: an id in MatchConfig.Fighters is an object of the
	// world that is not a fighter.
	ErrNotAFighter = errors.New("not a fighter")
	// ErrMissingObject: an object of the world that nobody registered
	// (neither MatchConfig nor the game, through Match.Replicator), found
	// by the match's first synced tick. Every object must be synced or
	// local-only, or the two worlds would silently differ.
	ErrMissingObject = errors.New("object not registered with the match")
)

// SetupError is returned by NewMatch, and by the first synced Tick, for a
// match that cannot run as set up. It names the offending MatchConfig field
// and object id; Err says what is wrong (one of the errors listed with
// ErrNotAFighter, or a description).
type SetupError struct {
	// Field is the MatchConfig field ("Fighters[1]", "Props[0]",
	// "MaxPacket", "Replicator"), or "world" or "link" for NewMatch's
	// other arguments. Empty for an unregistered object found by Tick.
	Field string
	// Object is the offending object's id (0 if the error is not about
	// one object).
	Object physics.ObjectID
	Err    error
}

func (e *SetupError) Error() string {
	s := "ragsync: match setup: "
	if e.Field != "" {
		s += e.Field + ": "
	}
	if e.Object != 0 {
		s += e.Object.String() + ": "
	}
	return s + e.Err.Error()
}

func (e *SetupError) Unwrap() error { return e.Err }

// MatchConfig names the objects of a match and tunes it. Fighters is
// required; every other field documents its zero-value default.
//
// Both peers build the same world (the same objects under the same ids) and
// use the same MatchConfig: which fighter is whose is decided by the link's
// role, not by the config.
type MatchConfig struct {
	// Fighters are the two players' fighters, by side: Fighters[0] is side
	// 1's (the offerer's), Fighters[1] side 2's (the answerer's). Each
	// peer owns its own fighter for the whole match and corrects its copy
	// of the other.
	Fighters [2]physics.ObjectID
	// Props are the shared objects (crates, balls, a game's own bodies
	// wrapped with physics.World.AddBodies): each starts owned by side 1
	// and changes owner when a fighter touches it. Nil: none.
	//
	// Objects that are neither (a side's own custom bodies, or local-only
	// debris and effects that are never synced) are registered through
	// Match.Replicator (Track, LocalOnly) before the first Tick.
	Props []physics.ObjectID
	// Replicator configures correction, the timestamp filter, ownership
	// transfer and divergence detection. Zero: the defaults documented in
	// ownership.Config.
	Replicator ownership.Config
	// MaxPacket is the size of the send buffer, in bytes (at least 64).
	// Zero: 1500 (a state packet of two fighters and a few props is well
	// under 200).
	MaxPacket int
	// OnMessage receives, during Tick, every packet that is not a state
	// packet: the game's own messages sent with Match.SendMessage (round
	// over, rematch, chat). p is valid only during the call. Nil: such
	// packets are counted as rejected.
	OnMessage func(p []byte)
	// ResumeState, if set, appends the game's own state a returning peer
	// needs (its round, its timer) to the resume snapshot this peer sends
	// when the rival comes back after a crash (see Match.Rejoined); at
	// most 256 bytes. Nil: none.
	ResumeState func(dst []byte) []byte
	// OnResume receives that state on the returning peer, during the Tick
	// that adopts the resume snapshot; an error refuses the snapshot (the
	// match waits for the next). Nil: the state is ignored.
	OnResume func(state []byte) error
}

// MatchStats is what a Match counted, cheap to read every frame.
type MatchStats struct {
	// Ticks counts Tick calls that stepped the world; Unsynced those that
	// could not because the clock was not synced.
	Ticks, Unsynced uint64
	// SendErrors counts packets the link refused to send (Send errors).
	SendErrors uint64
	// EncodeErrors counts ticks whose state packet could not be built.
	EncodeErrors uint64
	// Rejected counts packets the replicator refused
	// (malformed, or with a state, hit report or claim that was
	// unauthorized, invalid or refused by the rules of the rival's
	// fighter); details in Replicator.
	Rejected uint64
	// LastError is the last error of a received packet or a send, for
	// diagnostics (nil if none).
	LastError error
	// GameTime is the game time of the last tick.
	GameTime clocksync.GameTime
	// Replicator holds the replication, correction and ownership counters.
	Replicator ownership.Stats
}

// Match runs one peer's side of a match. NewMatch registers the fighters and
// props its MatchConfig names; the game registers any other object of the
// world through Replicator (Track, LocalOnly) before the first Tick. Then
// the game calls Tick at the world's fixed rate (60 Hz), after setting the
// local fighter's input (Fighter().SetInput). On its first synced tick the
// match checks that every object of the world is registered and starts
// (Link.StartMatch). Tick allocates nothing of its own; box2d allocates
// inside world.Step.
//
// A Match is not safe for concurrent use: drive it from the game loop (in
// Ebiten, from Update).
type Match struct {
	world   *physics.World
	rep     *ownership.Replicator
	link    Link
	side    int
	fighter [2]*physics.Fighter // by side
	started bool
	buf     []byte
	stats   MatchStats
	now     clocksync.GameTime

	handle    func(p []byte) // m.handlePacket, bound once (no allocation per tick)
	onMessage func(p []byte)

	offset clocksync.GameTime // match time minus the link's game time (see resume.go)
	res    resumeState
}

// NewMatch returns this peer's side of a match in world over link. The
// link's role says which side this peer plays: the offerer is side 1 (peer
// 1 in ownership's terms, Fighters[0]), the answerer side 2 (peer 2,
// Fighters[1]). NewMatch checks the whole setup before anything else, and
// returns a *SetupError naming the first problem: a zero id
// (physics.ErrInvalidID), an id the world does not have
// (physics.ErrUnknownObject), an id listed twice (physics.ErrDuplicateObject),
// a Fighters entry that is not a fighter (ErrNotAFighter) or a Props entry
// that is one, a link without a role yet, or an unusable MaxPacket or
// Replicator config.
func NewMatch(world *physics.World, link Link, cfg MatchConfig) (*Match, error) {
	if world == nil {
		return nil, &SetupError{Field: "world", Err: errors.New("nil world")}
	}
	if link == nil {
		return nil, &SetupError{Field: "link", Err: errors.New("nil link")}
	}
	side := 0
	switch r := link.Role(); r {
	case signaling.RoleOfferer:
		side = 1
	case signaling.RoleAnswerer:
		side = 2
	default:
		return nil, &SetupError{Field: "link", Err: fmt.Errorf("role %v: neither offerer nor answerer (is the link paired?)", r)}
	}
	size := cfg.MaxPacket
	if size == 0 {
		size = 1500
	}
	if size < 64 {
		return nil, &SetupError{Field: "MaxPacket", Err: fmt.Errorf("%d bytes, want at least 64", size)}
	}
	if err := checkObjects(world, &cfg); err != nil {
		return nil, err
	}
	local := ownership.PeerID(side)
	rep, err := ownership.New(world, local, 3-local, cfg.Replicator)
	if err != nil {
		return nil, &SetupError{Field: "Replicator", Err: err}
	}
	for i, id := range cfg.Fighters {
		if err := rep.Track(id, ownership.PeerID(i+1), false); err != nil {
			return nil, &SetupError{Field: fmt.Sprintf("Fighters[%d]", i), Object: id, Err: err}
		}
	}
	for i, id := range cfg.Props {
		if err := rep.Track(id, 1, true); err != nil {
			return nil, &SetupError{Field: fmt.Sprintf("Props[%d]", i), Object: id, Err: err}
		}
	}
	m := &Match{world: world, rep: rep, link: link, side: side, buf: make([]byte, 0, size), onMessage: cfg.OnMessage}
	for i, id := range cfg.Fighters {
		m.fighter[i] = world.Fighter(id)
	}
	m.handle = m.handlePacket
	m.initResume(&cfg)
	return m, nil
}

// checkObjects checks the ids cfg names against world (see NewMatch).
func checkObjects(world *physics.World, cfg *MatchConfig) error {
	seen := make(map[physics.ObjectID]string, 2+len(cfg.Props))
	check := func(field string, id physics.ObjectID, fighter bool) error {
		bad := func(err error) error { return &SetupError{Field: field, Object: id, Err: err} }
		switch o := world.Object(id); {
		case id == 0:
			return bad(physics.ErrInvalidID)
		case seen[id] != "":
			return bad(fmt.Errorf("%w: also %s", physics.ErrDuplicateObject, seen[id]))
		case o == nil:
			return bad(physics.ErrUnknownObject)
		case fighter && o.Fighter() == nil:
			return bad(ErrNotAFighter)
		case !fighter && o.Fighter() != nil:
			return bad(errors.New("a fighter is not a prop: nothing claims it by touch (list it in Fighters, or register it with Replicator().Track)"))
		}
		seen[id] = field
		return nil
	}
	for i, id := range cfg.Fighters {
		if err := check(fmt.Sprintf("Fighters[%d]", i), id, true); err != nil {
			return err
		}
	}
	for i, id := range cfg.Props {
		if err := check(fmt.Sprintf("Props[%d]", i), id, false); err != nil {
			return err
		}
	}
	return nil
}

// World returns the match's world.
func (m *Match) World() *physics.World { return m.world }

// Replicator returns the match's replicator: to register objects the
// MatchConfig does not name (before the first Tick), and for ownership
// (Owner, Mode) and per-object correction statistics (Corrector).
func (m *Match) Replicator() *ownership.Replicator { return m.rep }

// Side returns the side this peer plays: 1 (the offerer) or 2 (the
// answerer). It is also this peer's ownership.PeerID.
func (m *Match) Side() int { return m.side }

// Fighter returns this peer's fighter (MatchConfig.Fighters[Side()-1]),
// whose input the game sets every tick.
func (m *Match) Fighter() *physics.Fighter { return m.fighter[m.side-1] }

// Rival returns the other peer's fighter, whose local copy the match
// corrects toward its owner's states.
func (m *Match) Rival() *physics.Fighter { return m.fighter[2-m.side] }

// Tick runs one fixed tick: it hands every received packet to the
// replicator, corrects remote objects, steps the world, applies hits on
// this peer's fighter, claims touched props, and sends the states of what
// this peer owns. Set the local fighter's input (Fighter().SetInput) before.
//
// Until the link's clock is synced, Tick returns ErrNotSynced and only
// drains the link (states are dropped: they cannot be judged without a
// clock); the world does not move. The first synced tick checks that every
// object of the world is registered (a *SetupError wrapping
// ErrMissingObject names the first that is not; the tick then only drains
// the link, and the match does not start) and calls the link's StartMatch.
// Errors of received packets are counted in Stats, not returned: one bad
// packet must not stop the game.
func (m *Match) Tick() error {
	if m.res.pending() {
		if done, err := m.tickResume(); done {
			return err
		}
	}
	now, ok := m.link.GameTime()
	now += m.offset
	if !ok {
		m.stats.Unsynced++
		m.link.Poll(discard)
		return ErrNotSynced
	}
	if !m.started {
		if err := m.checkRegistered(); err != nil {
			m.link.Poll(discard)
			return err
		}
		m.link.StartMatch()
		m.started = true
	}
	m.now = now
	m.link.Poll(m.handle)
	m.rep.BeforeStep(now)
	m.world.Step()
	m.rep.AfterStep()
	pkt, err := m.rep.AppendPacket(m.buf[:0], now)
	if err != nil {
		m.stats.EncodeErrors++
		m.stats.LastError = err
	} else if err := m.link.Send(pkt); err != nil {
		m.stats.SendErrors++
		m.stats.LastError = err
	}
	m.buf = pkt[:0]
	m.stats.Ticks++
	if m.res.sending {
		m.sendResume(now)
	}
	return nil
}

// checkRegistered returns a *SetupError for the first object of the world
// the replicator does not know.
func (m *Match) checkRegistered() error {
	for _, o := range m.world.Objects() {
		if m.rep.Mode(o.ID()) == ownership.ModeUnknown {
			return &SetupError{Object: o.ID(), Err: ErrMissingObject}
		}
	}
	return nil
}

func (m *Match) handlePacket(p []byte) {
	if len(p) > 0 && p[0] == kindResume {
		return // a repeat of a resume snapshot already adopted
	}
	if m.res.sending && len(p) > 0 && p[0] == ownership.KindState {
		m.res.sending = false // the returning peer adopted the snapshot: it runs again
	}
	if len(p) > 0 && p[0] != ownership.KindState && m.onMessage != nil {
		m.onMessage(p)
		return
	}
	if err := m.rep.HandlePacket(p, m.now); err != nil {
		m.stats.Rejected++
		m.stats.LastError = err
	}
}

func discard([]byte) {}

// ErrReservedKind is returned by SendMessage for a message whose first byte
// is reserved for the library's own packets.
var ErrReservedKind = errors.New("ragsync: first byte of a game message is reserved")

// SendMessage sends a game message to the peer, delivered to its
// MatchConfig.OnMessage during its Tick. Its first byte is its kind, chosen
// by the game; it must not be ownership.KindState, clocksync.Magic or 0xAE
// (the resume snapshot, see Match.Rejoined). Like
// states, a message may be lost, duplicated or reordered: repeat what
// matters until the peer shows it got it (for example in its next states).
// On a TCP fallback whose socket is busy, a message replaces an unsent one
// of the same kind (first byte), never one of another kind and never a
// state: send at most one message of each kind per tick.
func (m *Match) SendMessage(p []byte) error {
	if len(p) == 0 {
		return fmt.Errorf("%w: empty message", ErrReservedKind)
	}
	if p[0] == ownership.KindState || p[0] == clocksync.Magic || p[0] == kindResume {
		return fmt.Errorf("%w: %#x", ErrReservedKind, p[0])
	}
	return m.link.Send(p)
}

// ResetRound declares a new round, the only way a fighter's HP may rise:
// this peer's fighter gets up with full HP now, and the rival's may come
// back to full HP (or get up from a knock-out) in its states that arrive
// within 2 s of this call; its HP rising at any other
// time is refused and counted (ownership.RefusedHealing). Both peers declare
// the same round, when the game's own round protocol says a new round
// begins (the demo: when a round is set; cmd/ragsim: 2 s after a
// knock-out); the rival's first states of the new round may arrive before
// the declaration here, and are held back, not applied, until it comes.
// Call it between ticks.
//
// This is the match's round protocol: a round ends only on a state both
// worlds can check, a fighter knocked out at 0 HP in its owner's states or
// the round's time (MatchConfig.Replicator.RoundLength, 60 s by default)
// being up. A reset declared otherwise, on one side's word, is refused:
// nothing heals, it is counted (ownership.RefusedRound) and the
// *ownership.RefusedError is returned. The rival's fighter then cannot
// heal either: its risen HP is refused (ownership.RefusedHealing).
func (m *Match) ResetRound() error { return m.rep.ResetRound(m.now) }

// Damaged returns the hits on this peer's fighter whose damage was applied
// during the last Tick: the rival's hit reports this peer confirmed against
// its own history (lag-compensated), and the hits this peer's world
// detected, each attack's at most once (see package ownership). The slice
// is reused by the next Tick.
func (m *Match) Damaged() []physics.HitEvent { return m.rep.Damaged() }

// Stats returns the match's counters.
func (m *Match) Stats() MatchStats {
	s := m.stats
	s.GameTime = m.now
	s.Replicator = m.rep.Stats()
	return s
}
