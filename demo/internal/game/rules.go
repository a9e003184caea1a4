package game

import (
	"errors"
	"fmt"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
)

// Rounds, the timer, KO, results and rematches.
//
// Peer 1 (the session's offerer) leads: it starts round 1 as soon as the
// match runs, and round n+1 once both players asked for a rematch, each at
// a game time Countdown ahead; peer 2 adopts whatever round the leader's
// messages carry. The timer is derived from the shared game clock, so both
// screens show the same time.
//
// A round ends, as each peer sees it, when its own fighter is knocked out,
// when the round's time is up, or when the rival's report has arrived and
// the game time has passed the rival's cut. The peer then freezes its
// report: its own fighter's HP history over the round, as the owner (the
// victim's owner decides damage) recorded it. The result is computed by
// Decide from the two reports only, so both peers reach the same result
// even when they saw the end a few milliseconds apart: every report covers
// the round up to the real end (the first KO or the time limit).
//
// Messages are repeated every Resend until the peer acknowledges what they
// carry, and a peer answers every message that carries something to
// acknowledge; once everything is acknowledged both fall silent.

// Phase is what the round is doing, as this peer sees it.
type Phase uint8

const (
	PhaseUnknown   Phase = iota
	PhaseWaiting         // no round yet (peer 2 waits for the leader's first message)
	PhaseCountdown       // the round is set; the fight starts at Start
	PhaseFight           // fighting
	PhaseOver            // this peer's report is frozen; Result once the rival's arrives
)

func (p Phase) String() string {
	switch p {
	case PhaseWaiting:
		return "waiting"
	case PhaseCountdown:
		return "countdown"
	case PhaseFight:
		return "fight"
	case PhaseOver:
		return "over"
	}
	return "unknown"
}

// Defaults of RulesConfig.
const (
	DefaultRoundLength = 60 * time.Second
	DefaultCountdown   = 3 * time.Second
	DefaultResend      = 100 * time.Millisecond
)

// MaxCountdown bounds RulesConfig.Countdown.
const MaxCountdown = time.Minute

// startSlack is how far a new round's start may lie beyond what the leader
// can announce (MaxCountdown ahead of now, or a round that just ended),
// for clock error and delivery delay; the follower refuses a round outside.
const startSlack = time.Minute

// RulesConfig configures Rules.
type RulesConfig struct {
	// Me and Rival are the two peers' ids: 1 for the offerer (the leader
	// of the rounds), 2 for the answerer.
	Me, Rival ownership.PeerID
	// RoundLength is the length of a round (the leader's is used). Zero:
	// 60 s.
	RoundLength time.Duration
	// Countdown is the time between setting a round and its fight (the
	// leader's is used). Zero: 3 s.
	Countdown time.Duration
	// Resend is the interval at which unacknowledged messages are
	// repeated. Zero: 100 ms.
	Resend time.Duration
	// MaxHP is the fighters' full health at a round's start. Zero: 100.
	MaxHP int
}

func (c *RulesConfig) validate() error {
	if c.RoundLength == 0 {
		c.RoundLength = DefaultRoundLength
	}
	if c.Countdown == 0 {
		c.Countdown = DefaultCountdown
	}
	if c.Resend == 0 {
		c.Resend = DefaultResend
	}
	if c.MaxHP == 0 {
		c.MaxHP = 100
	}
	switch {
	case !(c.Me == 1 && c.Rival == 2) && !(c.Me == 2 && c.Rival == 1):
		return fmt.Errorf("rules: peers %v and %v: want 1 and 2", c.Me, c.Rival)
	case c.RoundLength < time.Second || c.RoundLength > MaxRoundLength:
		return fmt.Errorf("rules: round length %v: want 1s..%v", c.RoundLength, MaxRoundLength)
	case c.Countdown < 0 || c.Countdown > MaxCountdown:
		return fmt.Errorf("rules: countdown %v: want 0..%v", c.Countdown, MaxCountdown)
	case c.Resend < time.Millisecond:
		return fmt.Errorf("rules: resend interval %v too short", c.Resend)
	case c.MaxHP < 1 || c.MaxHP > MaxReportHP:
		return fmt.Errorf("rules: max HP %d: want 1..%d", c.MaxHP, MaxReportHP)
	}
	return nil
}

// RulesStats counts what the protocol did.
type RulesStats struct {
	Sent, Received, Rejected uint64
	LastError                error
}

// Events says what a Tick or Handle changed that the game must act on.
type Events struct {
	// NewRound: a new round was set (reset the fighters and props).
	NewRound bool
	// Reported: this peer's report was just frozen (the round is over for
	// it).
	Reported bool
	// Decided: the result just became known.
	Decided bool
}

func (e *Events) merge(o Events) {
	e.NewRound = e.NewRound || o.NewRound
	e.Reported = e.Reported || o.Reported
	e.Decided = e.Decided || o.Decided
}

// Rules is one peer's side of the round protocol. It is driven from the
// game loop (not safe for concurrent use): Handle for every received round
// message, Tick once per game tick with the game time and the local
// fighter's HP, AppendMessage to get what to send.
type Rules struct {
	cfg    RulesConfig
	leader bool

	round  uint32
	start  clocksync.GameTime
	length time.Duration

	changes  []HPChange // own fighter's HP changes this round
	lastHP   int
	report   *Report // frozen own report, nil while fighting
	rival    *Report // the rival's report
	result   *Result
	decided  clocksync.GameTime // when the result became known
	rematch  bool
	rivalRem bool

	roundAcked, reportAcked, rematchAcked bool
	replyDue                              bool
	lastSend                              clocksync.GameTime
	sentOnce                              bool

	pending Events // events raised by Handle, returned by the next Tick
	msg     Message
	in      Message
	inRep   Report
	stats   RulesStats
}

// NewRules returns the rules for one peer.
func NewRules(cfg RulesConfig) (*Rules, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Rules{cfg: cfg, leader: cfg.Me == 1, changes: make([]HPChange, 0, 64)}, nil
}

// Round returns the current round (0 before the first) and its fight's
// start and length.
func (r *Rules) Round() (n uint32, start clocksync.GameTime, length time.Duration) {
	return r.round, r.start, r.length
}

// Phase returns the round's phase at game time now.
func (r *Rules) Phase(now clocksync.GameTime) Phase {
	switch {
	case r.round == 0:
		return PhaseWaiting
	case r.report != nil:
		return PhaseOver
	case now < r.start:
		return PhaseCountdown
	}
	return PhaseFight
}

// CanFight reports whether the local fighter may take input at now.
func (r *Rules) CanFight(now clocksync.GameTime) bool { return r.Phase(now) == PhaseFight }

// Remaining returns the round time left at now: the whole length during
// the countdown, and what was left at this peer's cut once it is over.
func (r *Rules) Remaining(now clocksync.GameTime) time.Duration {
	if r.round == 0 {
		return 0
	}
	t := now
	if r.report != nil {
		t = r.start.Add(time.Duration(r.report.Cut) * time.Millisecond)
	}
	left := r.length - t.Sub(r.start)
	return max(0, min(left, r.length))
}

// CountdownLeft returns the time until the fight starts (0 once it has).
func (r *Rules) CountdownLeft(now clocksync.GameTime) time.Duration {
	if r.round == 0 || now >= r.start {
		return 0
	}
	return r.start.Sub(now)
}

// Result returns the round's result once both reports are in.
func (r *Rules) Result() (Result, bool) {
	if r.result == nil {
		return Result{}, false
	}
	return *r.result, true
}

// DecidedAt returns the game time at which the result became known here.
func (r *Rules) DecidedAt() clocksync.GameTime { return r.decided }

// WantsRematch and RivalWantsRematch report the rematch wishes for the
// current round.
func (r *Rules) WantsRematch() bool      { return r.rematch }
func (r *Rules) RivalWantsRematch() bool { return r.rivalRem }

// Stats returns the protocol counters.
func (r *Rules) Stats() RulesStats { return r.stats }

// ErrNoResult is returned by Rematch before the round's result is known.
var ErrNoResult = errors.New("rules: no result yet")

// Rematch records that the local player wants another round. It is only
// possible once the result is known.
func (r *Rules) Rematch() error {
	if r.result == nil {
		return ErrNoResult
	}
	r.rematch = true
	return nil
}

// newRound sets round n (leader: its own; follower: adopted).
func (r *Rules) newRound(n uint32, start clocksync.GameTime, length time.Duration) {
	r.round, r.start, r.length = n, start, length
	r.changes = r.changes[:0]
	r.lastHP = r.cfg.MaxHP
	r.report, r.rival, r.result = nil, nil, nil
	r.rematch, r.rivalRem = false, false
	r.roundAcked, r.reportAcked, r.rematchAcked = false, false, false
	r.replyDue = true
	r.pending.NewRound = true
}

// ms converts a game time to ms since the round's start, rounding down.
func (r *Rules) ms(t clocksync.GameTime) int64 {
	d := int64(t - r.start)
	q := d / 1000
	if d%1000 < 0 {
		q--
	}
	return q
}

// Tick advances the rules to game time now, with the local fighter's HP
// after this tick's step. Call it once per tick after Match.Tick. When it
// reports NewRound the game resets its fighter; until then hp is still the
// last round's, so the new round's HP history starts with the next Tick.
func (r *Rules) Tick(now clocksync.GameTime, hp int) Events {
	ev := r.pending
	r.pending = Events{}
	if ev.NewRound {
		// Peer 2 adopted the round from a message during this tick's
		// Match.Tick: hp is the last round's (0 after a KO, which would
		// end the new round at once). The leader's new rounds are set at
		// the end of Tick, so they wait for the next one anyway.
		return ev
	}
	if r.round == 0 {
		if r.leader {
			r.newRound(1, now.Add(r.cfg.Countdown), r.cfg.RoundLength)
			r.pending = Events{}
			ev.NewRound = true
		}
		return ev
	}
	if r.report == nil {
		if hp != r.lastHP && len(r.changes) < MaxReportChanges {
			r.changes = append(r.changes, HPChange{At: r.ms(now), HP: hp})
			r.lastHP = hp
		}
		over := hp == 0 || now >= r.start.Add(r.length)
		if r.rival != nil && r.ms(now) >= r.rival.Cut {
			over = true
		}
		if over {
			rep := &Report{KO: hp == 0, Cut: r.ms(now), HP0: r.cfg.MaxHP, Changes: append([]HPChange(nil), r.changes...)}
			if len(rep.Changes) > 0 && rep.Changes[len(rep.Changes)-1].At > rep.Cut {
				rep.Cut = rep.Changes[len(rep.Changes)-1].At
			}
			r.report = rep
			ev.Reported = true
		}
	}
	if r.result == nil && r.report != nil && r.rival != nil {
		ev.merge(r.decide(now))
	}
	// The leader starts the next round once both want it.
	if r.leader && r.result != nil && r.rematch && r.rivalRem {
		r.newRound(r.round+1, now.Add(r.cfg.Countdown), r.cfg.RoundLength)
		r.pending = Events{}
		ev.NewRound = true
	}
	return ev
}

func (r *Rules) decide(now clocksync.GameTime) Events {
	r1, r2 := r.report, r.rival
	if r.cfg.Me == 2 {
		r1, r2 = r2, r1
	}
	res := Decide(r.round, r.length, r1, r2)
	r.result = &res
	r.decided = now
	return Events{Decided: true}
}

// Handle processes one round message from the rival, received at game time
// now. A malformed or inconsistent message is refused with an error and
// changes nothing: a follower does not adopt a new round whose start is
// more than MaxCountdown plus a minute ahead of now, or whose end is more
// than a minute past, and a report must start at MaxHP and never gain HP.
func (r *Rules) Handle(p []byte, now clocksync.GameTime) error {
	r.stats.Received++
	m := &r.in
	m.Report = &r.inRep
	if err := DecodeMessage(p, m); err != nil {
		return r.reject(err)
	}
	if m.Report != nil {
		if err := r.possible(m.Report); err != nil {
			return r.reject(err)
		}
	}
	switch {
	case m.Round == 0:
		return nil // the rival has no round yet: nothing to learn
	case m.Round > r.round:
		if r.leader {
			return r.reject(fmt.Errorf("%w: peer 2 announces round %d, the leader is at %d", ErrBadMessage, m.Round, r.round))
		}
		if m.Length < time.Second {
			return r.reject(fmt.Errorf("%w: round length %v", ErrBadMessage, m.Length))
		}
		// The leader sets a round's start a countdown (at most
		// MaxCountdown) after its own now, on the clock both share; a
		// start further ahead, or of a round that ended long ago, is
		// garbage that would freeze the countdown or the timer.
		if m.Start > now.Add(MaxCountdown+startSlack) || m.Start < now.Add(-m.Length-startSlack) {
			return r.reject(fmt.Errorf("%w: round %d starts at %v, absurd at game time %v", ErrBadMessage, m.Round, m.Start, now))
		}
		r.newRound(m.Round, m.Start, m.Length)
	case m.Round < r.round:
		// An old round: the rival has not seen the new one yet; our
		// next message tells it.
		r.replyDue = true
		return nil
	}
	if !r.leader && m.Start != r.start {
		return r.reject(fmt.Errorf("%w: round %d starts at %v, was %v", ErrBadMessage, m.Round, m.Start, r.start))
	}
	if r.leader && m.AckRound {
		r.roundAcked = true
	}
	if m.AckReport && r.report != nil {
		r.reportAcked = true
	}
	if m.AckRematch && r.rematch {
		r.rematchAcked = true
	}
	if !r.leader {
		r.replyDue = true // acknowledge the round
	}
	if m.Report != nil {
		r.replyDue = true
		if r.rival == nil {
			cp := *m.Report
			cp.Changes = append([]HPChange(nil), m.Report.Changes...)
			r.rival = &cp
			if r.report != nil && r.result == nil {
				r.pending.merge(r.decide(now))
			}
		}
	}
	if m.Rematch {
		r.replyDue = true
		if r.rival != nil {
			r.rivalRem = true
		}
	}
	return nil
}

// possible checks that rep is a history Tick can record: the fighter starts
// the round at full health (MaxHP, the same for both fighters) and its HP
// only goes down during a round. Anything else would decide the round from
// garbage.
func (r *Rules) possible(rep *Report) error {
	if rep.HP0 != r.cfg.MaxHP {
		return &MessageError{Field: "hp0", Value: int64(rep.HP0), Reason: fmt.Sprintf("a round starts at full health (%d)", r.cfg.MaxHP)}
	}
	hp := rep.HP0
	for _, c := range rep.Changes {
		if c.HP > hp {
			return &MessageError{Field: "hp", Value: int64(c.HP), Reason: fmt.Sprintf("HP rises from %d during the round", hp)}
		}
		hp = c.HP
	}
	return nil
}

func (r *Rules) reject(err error) error {
	r.stats.Rejected++
	r.stats.LastError = err
	return err
}

// unacked reports whether this peer has something the rival has not
// acknowledged.
func (r *Rules) unacked() bool {
	return (r.leader && r.round > 0 && !r.roundAcked) ||
		(r.report != nil && !r.reportAcked) ||
		(r.rematch && !r.rematchAcked)
}

// AppendMessage appends the message to send at now, if one is due: right
// away when the rival's last message needs an answer, every Resend while
// something is unacknowledged. It returns dst unchanged and false otherwise.
func (r *Rules) AppendMessage(dst []byte, now clocksync.GameTime) ([]byte, bool) {
	if r.round == 0 {
		return dst, false
	}
	due := r.replyDue || (r.unacked() && (!r.sentOnce || now.Sub(r.lastSend) >= r.cfg.Resend))
	if !due {
		return dst, false
	}
	r.replyDue = false
	r.sentOnce = true
	r.lastSend = now
	r.msg = Message{Round: r.round, Start: r.start, Length: r.length, Report: r.report, Rematch: r.rematch,
		AckRound: !r.leader, AckReport: r.rival != nil, AckRematch: r.rivalRem}
	r.stats.Sent++
	return AppendMessage(dst, &r.msg), true
}
