package game

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/p2p"
)

// Resuming after a crash or a reload (issue 24).
//
// A player keeps its seat token while its match runs (seat.go). When the
// rival's process dies, the session ends with p2p.ErrPeerAway: the player
// shows "rival reconnecting (n s)", pauses the match (ragsync
// Match.RivalAway: the round timer stands still, the rival's fighter goes
// limp) and takes its own seat back with p2p.Connect and Config.Resume,
// which pairs again once the rival is back; then Match.Rejoined sends the
// rival the resume snapshot. A process that starts and finds a kept seat
// for its server and room takes it back the same way: its Match adopts the
// snapshot, with the round state below. If the rival does not come back
// within the server's RejoinGrace, the match ends with a clear error on
// both sides, and the seat is forgotten.

// rejoinWait bounds how long a player waits for the rival to come back:
// more than the server's RejoinGrace (30 s by default), which ends it
// first with a clear "did not come back".
const rejoinWait = 45 * time.Second

type rejoinResult struct {
	s   *p2p.Session
	err error
}

// seatState is a player's seat token and resuming.
type seatState struct {
	token     string // the kept seat token ("" without a pairing)
	resumed   bool   // this player took its seat back
	logged    bool   // the resumed state was logged
	rejoins   int    // times the rival came back
	awaySince time.Time
	ch        chan rejoinResult
	cancel    context.CancelFunc
}

// resumeSeat takes back the seat kept for room (see Resuming).
func (p *Player) resumeSeat(ctx context.Context, room, token string) (*p2p.Session, error) {
	url, cfg := p.cfg.Signal, p.cfg.P2P
	cfg.Logger, cfg.Resume = p.log, token
	p.setPair(StatusWaiting, room)
	p.log.Info("taking back the seat kept from the last run", "room", room)
	s, err := p2p.Connect(ctx, url, room, cfg)
	if errors.Is(err, p2p.ErrSeatLost) {
		_ = dropSeat(url, room)
		return nil, fmt.Errorf("room %s: the match this player dropped out of has ended, so its seat is gone (run again for a new match): %w", room, err)
	}
	if err != nil {
		return nil, fmt.Errorf("room %s: taking back the seat: %w", room, err)
	}
	return s, nil
}

// keepSeat keeps s's seat token.
func (p *Player) keepSeat(s *p2p.Session) {
	p.seat.token = s.SeatToken()
	if p.seat.token == "" {
		return
	}
	if err := saveSeat(p.cfg.Signal, p.pairing, p.seat.token); err != nil {
		p.log.Warn("cannot keep the seat token; a crash will end the match", "err", err)
	}
}

// forgetSeat forgets the kept seat: the match is over.
func (p *Player) forgetSeat() {
	if p.seat.token == "" {
		return
	}
	p.seat.token = ""
	if err := dropSeat(p.cfg.Signal, p.pairing); err != nil {
		p.log.Warn("cannot forget the seat token", "err", err)
	}
}

// rivalAway pauses the match and starts taking the seat back, when the
// rival dropped; false if this player cannot (no seat, no match).
func (p *Player) rivalAway() bool {
	if p.match == nil || p.seat.token == "" {
		return false
	}
	p.status, p.err = StatusReconnecting, nil
	p.seat.awaySince = p.cfg.Now()
	if n := len(p.timeline); n > 0 && p.timeline[n-1].Kind == p2p.EventDisconnected.String() {
		p.timeline[n-1].Kind = "rival-away" // not a disconnect: the rival may come back
	}
	p.match.RivalAway()
	n, hp1, hp2, left := p.resumeFigures()
	p.log.Info("rival dropped; waiting for it to come back", "round", n, "hp1", hp1, "hp2", hp2, "remaining_ms", left.Milliseconds())
	ctx, cancel := context.WithTimeout(context.Background(), rejoinWait)
	ch := make(chan rejoinResult, 1)
	p.seat.ch, p.seat.cancel = ch, cancel
	url, cfg, room := p.cfg.Signal, p.cfg.P2P, p.pairing
	cfg.Logger, cfg.Resume = p.log, p.seat.token
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer cancel()
		s, err := p2p.Connect(ctx, url, room, cfg)
		ch <- rejoinResult{s, err}
	}()
	return true
}

// pollRejoin resumes the match when the rival is back, or ends it.
func (p *Player) pollRejoin() {
	var r rejoinResult
	select {
	case r = <-p.seat.ch:
	default:
		return
	}
	p.seat.ch, p.seat.cancel = nil, nil
	away := p.cfg.Now().Sub(p.seat.awaySince)
	if r.err != nil {
		p.lose(fmt.Errorf("the rival did not come back within the server's grace (%v): %w", away.Round(100*time.Millisecond), r.err))
		return
	}
	l, err := newLink(r.s, p.cfg.Impair, p.cfg.Seed^0x5eed^uint64(p.seat.rejoins+1))
	if err == nil {
		err = p.match.Rejoined(l)
	}
	if err != nil {
		r.s.Close()
		p.lose(fmt.Errorf("resuming the match: %w", err))
		return
	}
	old := p.sess
	p.closers.Add(1)
	go func() { defer p.closers.Done(); old.Close() }()
	p.link.close()
	p.sess, p.link = r.s, l
	p.status = StatusConnected
	p.seat.rejoins++
	p.keepSeat(r.s)
	if len(p.timeline) < maxTimeline {
		p.timeline = append(p.timeline, TimelineEvent{UnixMs: p.cfg.Now().UnixMilli(), Kind: "rival-back", Reason: fmt.Sprintf("away %v", away.Round(time.Millisecond))})
	}
	p.log.Info("rival back; match resumed", "away_ms", away.Milliseconds(), "rejoins", p.seat.rejoins)
}

// stopRejoin gives up waiting for the rival.
func (p *Player) stopRejoin() {
	if p.seat.cancel == nil {
		return
	}
	p.seat.cancel()
	ch := p.seat.ch
	p.seat.ch, p.seat.cancel = nil, nil
	p.closers.Add(1)
	go func() {
		defer p.closers.Done()
		if r := <-ch; r.s != nil {
			r.s.Close()
		}
	}()
}

// ReconnectingFor is how long the rival has been away (while
// StatusReconnecting).
func (p *Player) ReconnectingFor() time.Duration {
	if p.status != StatusReconnecting {
		return 0
	}
	return p.cfg.Now().Sub(p.seat.awaySince)
}

// resumeFigures are what a resume carries over, for the logs: the round,
// the fighters' HP (side 1, side 2) and the round time left.
func (p *Player) resumeFigures() (round uint32, hp1, hp2 int, left time.Duration) {
	if p.match == nil || p.rules == nil {
		return 0, 0, 0, 0
	}
	round, _, _ = p.rules.Round()
	f1, f2 := p.match.Fighter(), p.match.Rival()
	if p.match.Side() == 2 {
		f1, f2 = f2, f1
	}
	return round, f1.HP(), f2.HP(), p.rules.Remaining(p.match.Stats().GameTime)
}

// logResumed logs what the resume carried over, once.
func (p *Player) logResumed() {
	if !p.seat.resumed || p.seat.logged {
		return
	}
	p.seat.logged = true
	n, hp1, hp2, left := p.resumeFigures()
	p.log.Info("resumed the match", "round", n, "hp1", hp1, "hp2", hp2, "remaining_ms", left.Milliseconds())
}

// resumeState is the game's part of the resume snapshot (MatchConfig.
// ResumeState): the round.
func (p *Player) resumeState(dst []byte) []byte {
	if p.rules == nil {
		return dst
	}
	return p.rules.appendResume(dst)
}

// onResume adopts the game's part of the rival's resume snapshot.
// The fighters' HP is already the snapshot's: the round's HP history goes
// on from it.
func (p *Player) onResume(b []byte) error {
	if err := p.rules.adoptResume(b); err != nil {
		return err
	}
	p.rules.lastHP = p.match.Fighter().HP()
	return nil
}

// The round state in a resume snapshot:
//
//	uvarint  the round (0: none yet)
//	varint   the fight's start, game time in µs
//	uvarint  the round's length, in ms
const maxRoundState = 3 * binary.MaxVarintLen64

func (r *Rules) appendResume(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(r.round))
	dst = binary.AppendVarint(dst, int64(r.start))
	return binary.AppendUvarint(dst, uint64(r.length/time.Millisecond))
}

// errBadRoundState is wrapped by adoptResume's errors.
var errBadRoundState = errors.New("rules: bad round state in the resume snapshot")

// adoptResume takes the round of a resume snapshot: the same round, on the
// same clock, so its timer goes on where the rival's stood. The round's
// HP history restarts here.
func (r *Rules) adoptResume(b []byte) error {
	if len(b) > maxRoundState {
		return fmt.Errorf("%w: %d bytes", errBadRoundState, len(b))
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > 1<<31 {
		return fmt.Errorf("%w: round", errBadRoundState)
	}
	b = b[k:]
	start, k := binary.Varint(b)
	if k <= 0 {
		return fmt.Errorf("%w: start", errBadRoundState)
	}
	b = b[k:]
	ms, k := binary.Uvarint(b)
	if k <= 0 || len(b) != k {
		return fmt.Errorf("%w: length", errBadRoundState)
	}
	length := time.Duration(ms) * time.Millisecond
	if n > 0 && (length < time.Second || length > MaxRoundLength) {
		return fmt.Errorf("%w: round length %v", errBadRoundState, length)
	}
	if n == 0 {
		return nil // no round yet: the leader sets the first as usual
	}
	r.round, r.start, r.length = uint32(n), clocksync.GameTime(start), length
	r.changes = r.changes[:0]
	r.lastHP = r.cfg.MaxHP
	r.report, r.rival, r.result = nil, nil, nil
	r.rematch, r.rivalRem = false, false
	r.roundAcked, r.reportAcked, r.rematchAcked = false, false, false
	r.replyDue = true
	return nil
}
