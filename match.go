// Package ragsync is netcode for peer-to-peer physics fighting games: two
// peers each simulate the whole Box2D world, each is the authority for the
// objects it owns, sends timestamped states of them over an unreliable link,
// and steers its copy of the rival's objects toward the received states.
//
// This package is the glue a game uses every tick: a Match ties a
// physics.World, an ownership.Replicator and a Link (a p2p.Session, or any
// transport with a synced game clock) into one fixed-rate tick:
//
//	receive ─▶ decode ─▶ timestamp filter ─▶ authorize ─▶ validate ─▶ correction targets
//	correct remote objects ─▶ world.Step ─▶ hits (the victim's owner applies damage)
//	owned objects ─▶ snapshot ─▶ encode ─▶ send (unreliable)
//
// The subpackages do the work: physics (world, ragdolls, snapshot codec),
// clocksync (peer clock calibration, timestamp filter), correction (moving a
// body toward a remote state), ownership (authority, transfers, the
// replicator), p2p (sessions over WebRTC with a TCP fallback, link
// statistics), signaling (pairing server and client). The demo and the
// cmd/ragsim simulator are both built on Match.
package ragsync

import (
	"errors"
	"fmt"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/correction"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
)

// Link is what a Match needs from the network: unreliable packets both ways,
// and the shared game clock. *p2p.Session implements it; so does any transport
// that runs a clocksync.Calibrator beside its packets.
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
}

// ClassSender is implemented by links whose TCP fallback keeps only the
// newest unsent message of each class (*p2p.Session): Match sends its states
// as class 0 and game messages as class 1, so a game message is never
// replaced by the state that follows it in the same tick.
type ClassSender interface {
	SendClass(class int, p []byte) error
}

// Message classes Match uses on a ClassSender.
const (
	ClassState   = 0
	ClassMessage = 1
)

// ErrNotSynced is returned by Match.Tick while the link's game clock is not
// yet synced with the peer's: the tick then only drains the link.
var ErrNotSynced = errors.New("ragsync: game clock not synced yet")

// MatchConfig configures a Match. Local and Remote are required; the
// replicator's settings default as documented in ownership.Config.
type MatchConfig struct {
	// Local and Remote are the two peers' ids, the same on both sides
	// (e.g. 1 for the session's offerer, 2 for the answerer).
	Local, Remote ownership.PeerID
	// Replicator configures correction, the timestamp filter, ownership
	// transfer and divergence detection. Its Local and Remote fields are
	// set from the ones above.
	Replicator ownership.Config
	// MaxPacket is the size of the send buffer. Zero: 1500 bytes (a state
	// packet of two fighters and a few props is well under 200).
	MaxPacket int
	// OnMessage receives, during Tick, every packet that is not a state
	// packet: the game's own messages sent with Match.SendMessage (round
	// over, rematch, chat). p is valid only during the call. Nil: such
	// packets are counted as rejected.
	OnMessage func(p []byte)
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
	// Rejected counts packets or object states HandlePacket refused
	// (malformed, unauthorized, invalid); details in Replicator.
	Rejected uint64
	// LastError is the last error of a received packet or a send, for
	// diagnostics (nil if none).
	LastError error
	// GameTime is the game time of the last tick.
	GameTime clocksync.GameTime
	// Replicator holds the replication, correction and ownership counters.
	Replicator ownership.Stats
}

// Match runs one peer's side of a match. Create the world and its objects
// (with the same ids on both peers), register who owns what through
// Replicator (Own, Track, LocalOnly), then call Tick at the world's fixed rate
// (60 Hz), after setting the local fighters' inputs. Tick allocates nothing
// of its own; box2d allocates inside world.Step.
//
// A Match is not safe for concurrent use: drive it from the game loop (in
// Ebiten, from Update).
type Match struct {
	world *physics.World
	rep   *ownership.Replicator
	link  Link
	buf   []byte
	stats MatchStats
	now   clocksync.GameTime

	handle    func(p []byte) // m.handlePacket, bound once (no allocation per tick)
	onMessage func(p []byte)
}

// NewMatch returns a match for world over link.
func NewMatch(world *physics.World, link Link, cfg MatchConfig) (*Match, error) {
	if link == nil {
		return nil, errors.New("ragsync: nil link")
	}
	rep, err := ownership.New(world, cfg.Local, cfg.Remote, cfg.Replicator)
	if err != nil {
		return nil, err
	}
	size := cfg.MaxPacket
	if size == 0 {
		size = 1500
	}
	if size < 64 {
		return nil, fmt.Errorf("ragsync: MaxPacket %d is too small", size)
	}
	m := &Match{world: world, rep: rep, link: link, buf: make([]byte, 0, size), onMessage: cfg.OnMessage}
	m.handle = m.handlePacket
	return m, nil
}

// World returns the match's world. Replicator its replicator (ownership,
// per-object correction statistics).
func (m *Match) World() *physics.World                               { return m.world }
func (m *Match) Replicator() *ownership.Replicator                   { return m.rep }
func (m *Match) Registry() *ownership.Registry                       { return m.rep.Registry() }
func (m *Match) Corrector(id physics.ObjectID) *correction.Corrector { return m.rep.Corrector(id) }

// Tick runs one fixed tick: it hands every received packet to the
// replicator, corrects remote objects, steps the world, applies hits on owned
// fighters, claims touched props, and sends the states of what this peer
// owns. Set the local fighters' inputs (physics.Fighter.SetInput) before.
//
// Until the link's clock is synced, Tick returns ErrNotSynced and only
// drains the link (states are dropped: they cannot be judged without a
// clock); the world does not move. Errors of received packets are counted
// in Stats, not returned: one bad packet must not stop the game.
func (m *Match) Tick() error {
	now, ok := m.link.GameTime()
	if !ok {
		m.stats.Unsynced++
		m.link.Poll(discard)
		return ErrNotSynced
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
	return nil
}

func (m *Match) handlePacket(p []byte) {
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
// MatchConfig.OnMessage during its Tick. Like states, it may be lost,
// duplicated or reordered: repeat what matters until the peer shows it got
// it (for example in its next states). On a ClassSender it goes as
// ClassMessage, so the tick's state cannot replace it. At most one message
// per tick: on a TCP fallback a second one sent in the same tick may replace
// the first. Its first byte must not be ownership.KindState or
// clocksync.Magic.
func (m *Match) SendMessage(p []byte) error {
	if len(p) == 0 {
		return fmt.Errorf("%w: empty message", ErrReservedKind)
	}
	if p[0] == ownership.KindState || p[0] == clocksync.Magic {
		return fmt.Errorf("%w: %#x", ErrReservedKind, p[0])
	}
	if cs, ok := m.link.(ClassSender); ok {
		return cs.SendClass(ClassMessage, p)
	}
	return m.link.Send(p)
}

// Stats returns the match's counters.
func (m *Match) Stats() MatchStats {
	s := m.stats
	s.GameTime = m.now
	s.Replicator = m.rep.Stats()
	return s
}
