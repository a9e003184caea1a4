package ragsync

import (
	"encoding/binary"
	"fmt"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/correction"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
)

// Resuming a match after a crash
//
// When the rival's process dies (or its tab reloads), its p2p session ends
// with p2p.ErrPeerAway, and the signaling server keeps both seats for its
// RejoinGrace. The survivor calls Match.RivalAway: the match pauses (the
// game time, so a round timer derived from it, stands still; nothing is
// sent) and the rival's fighter goes limp, while the world keeps stepping.
// Both players then p2p.Connect again with p2p.Config.Resume set to their
// own seat token. The survivor hands its new session to Match.Rejoined;
// the returning process builds its world and calls NewMatch as on any
// start: its session reports Resumed, so its Match waits (Tick returns
// ErrNotSynced) until the survivor's resume snapshot arrives, adopts it,
// and runs on. The survivor's world is the source: the snapshot carries
// every tracked object's state, owner and epoch, the fighters' HP, the
// match time and the game's own state (MatchConfig.ResumeState). The
// survivor repeats it every 6 ticks until the first state of the returning
// peer arrives.
//
// The resume packet:
//
//	byte     0xAE (kindResume)
//	byte     resumeVersion (1)
//	varint   the match time minus the link's game time, in µs: the
//	         returning peer adopts it, so both peers' match times agree
//	uvarint  n, then n bytes: the game's state (at most 256)
//	...      the ownership resume snapshot (ownership.Replicator.AppendResume)
//
// It is validated on arrival as a whole (ownership.Replicator.ApplyResume);
// a refused one changes nothing, is counted in MatchStats.Rejected, and the
// match waits for the next.

const (
	kindResume      byte = 0xAE
	resumeVersion   byte = 1
	maxResumeApp         = 256
	resumeEvery          = 6                           // ticks between two resume snapshots
	maxResumeOffset      = clocksync.GameTime(1 << 46) // µs, about 2 years
)

// resumeState is a Match's side of resuming.
type resumeState struct {
	follow   bool // the rival's fighter follows its owner (restored on Rejoined)
	away     bool // the rival is away: paused
	waiting  bool // returning: waiting for the rival's snapshot
	rejoined bool // survivor: a new link, its match time not set yet
	sending  bool // survivor: repeating the snapshot until the rival runs
	ticks    int
	err      error // the last refused snapshot
	state    func(dst []byte) []byte
	onResume func([]byte) error
	link     clocksync.GameTime // the link's game time of the waiting tick
	handle   func(p []byte)
}

func (r *resumeState) pending() bool { return r.away || r.waiting || r.rejoined }

// resumable is a Link that can say it took back a seat (*p2p.Session).
type resumable interface{ Resumed() bool }

func (m *Match) initResume(cfg *MatchConfig) {
	m.res.state, m.res.onResume = cfg.ResumeState, cfg.OnResume
	m.res.follow = cfg.Replicator.Correction.WithDefaults().Method == correction.MethodFollow
	m.res.handle = m.handleWaiting
	if r, ok := m.link.(resumable); ok && r.Resumed() {
		m.res.waiting = true
	}
}

// RivalAway pauses the match while the rival is away (its session ended
// with p2p.ErrPeerAway): until Rejoined, Tick steps the world without
// sending or receiving, the match time stands still, and the rival's
// fighter goes limp (its controls let go, no correction moves it).
func (m *Match) RivalAway() {
	if m.res.away {
		return
	}
	m.res.away, m.res.sending, m.res.rejoined = true, false, false
	f := m.Rival()
	f.SetInput(0)
	f.SetFollowing(false)
	// Limp, not frozen mid-attack: its attack ends, it falls (a knocked
	// out fighter stays so). Its owner's next states say what it does.
	if st := f.State(); st.Action != physics.ActionKO {
		_ = f.SetRemoteState(physics.FighterState{HP: st.HP, Action: physics.ActionDown, Facing: st.Facing, AttackSeq: st.AttackSeq})
	}
}

// Rejoined resumes the match on link, the new session with the rival that
// came back (both reconnected with p2p.Config.Resume): from the next
// synced tick the match time goes on from where it stood, and this peer
// sends the rival its resume snapshot until the rival runs again.
func (m *Match) Rejoined(link Link) error {
	if link == nil {
		return &SetupError{Field: "link", Err: fmt.Errorf("nil link")}
	}
	if r := link.Role(); r != m.link.Role() {
		return &SetupError{Field: "link", Err: fmt.Errorf("role %v, the match's is %v", r, m.link.Role())}
	}
	m.link = link
	m.res.away, m.res.rejoined, m.res.sending, m.res.ticks = false, true, false, 0
	m.Rival().SetFollowing(m.res.follow)
	m.rep.RivalRejoined()
	return nil
}

// tickResume runs a tick while resuming; done says Tick must return err.
func (m *Match) tickResume() (done bool, err error) {
	switch {
	case m.res.away:
		m.link.Poll(discard)
		m.world.Step() // limp rival, paused clock: no correction, no hits, nothing sent
		return true, nil
	case m.res.rejoined:
		lt, ok := m.link.GameTime()
		if !ok {
			m.stats.Unsynced++
			m.link.Poll(discard)
			return true, ErrNotSynced
		}
		m.offset = m.now + clocksync.GameTimeOf(physics.TickDuration) - lt
		m.res.rejoined, m.res.sending = false, true
		m.link.StartMatch()
		return false, nil
	default: // waiting for the rival's snapshot
		lt, ok := m.link.GameTime()
		if ok {
			m.res.link = lt
			m.link.Poll(m.res.handle)
		} else {
			m.link.Poll(discard)
		}
		if m.res.waiting {
			m.stats.Unsynced++
			return true, ErrNotSynced
		}
		return false, nil
	}
}

// handleWaiting takes the rival's resume snapshot, and drops anything
// else, while waiting for it.
func (m *Match) handleWaiting(p []byte) {
	if !m.res.waiting || len(p) == 0 || p[0] != kindResume {
		return
	}
	if err := m.adoptResume(p); err != nil {
		m.res.err = err
		m.stats.Rejected++
		m.stats.LastError = err
		return
	}
	m.res.waiting = false
}

// adoptResume validates and adopts a resume packet (see Resuming).
func (m *Match) adoptResume(p []byte) error {
	bad := func(off int, field string, v uint64, why string) error {
		return &ownership.PacketError{Offset: off, Field: field, Value: v, Err: fmt.Errorf("%w: %s", ownership.ErrBadResume, why)}
	}
	if len(p) < 2 || p[1] != resumeVersion {
		v := uint64(0)
		if len(p) >= 2 {
			v = uint64(p[1])
		}
		return bad(1, "version", v, fmt.Sprintf("want version %d", resumeVersion))
	}
	off := 2
	d, n := binary.Varint(p[off:])
	if n <= 0 || d >= int64(maxResumeOffset) || d <= -int64(maxResumeOffset) {
		return bad(off, "offset", uint64(d), "truncated or out of range")
	}
	off += n
	an, n := binary.Uvarint(p[off:])
	if n <= 0 || an > maxResumeApp || an > uint64(len(p)-off-n) {
		return bad(off, "state", an, fmt.Sprintf("truncated or over %d bytes", maxResumeApp))
	}
	off += n
	app := p[off : off+int(an)]
	off += int(an)
	if _, err := m.rep.ApplyResume(p[off:]); err != nil {
		return err
	}
	if m.res.onResume != nil {
		if err := m.res.onResume(app); err != nil {
			return fmt.Errorf("ragsync: resume: the game's state: %w", err)
		}
	}
	m.offset = clocksync.GameTime(d)
	m.now = m.res.link + m.offset
	return nil
}

// sendResume sends the resume snapshot every resumeEvery ticks.
func (m *Match) sendResume(now clocksync.GameTime) {
	m.res.ticks++
	if m.res.ticks%resumeEvery != 1 {
		return
	}
	pkt, err := m.appendResume(m.buf[:0], now)
	if err == nil {
		err = m.link.Send(pkt)
	}
	if err != nil {
		m.stats.SendErrors++
		m.stats.LastError = err
	}
	m.buf = pkt[:0]
}

// appendResume appends the resume packet at match time now.
func (m *Match) appendResume(dst []byte, now clocksync.GameTime) ([]byte, error) {
	dst = append(dst, kindResume, resumeVersion)
	dst = binary.AppendVarint(dst, int64(m.offset))
	var app []byte
	if m.res.state != nil {
		app = m.res.state(nil)
		if len(app) > maxResumeApp {
			return dst[:0], fmt.Errorf("ragsync: resume: the game's state is %d bytes, at most %d", len(app), maxResumeApp)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(app)))
	dst = append(dst, app...)
	return m.rep.AppendResume(dst, now)
}
