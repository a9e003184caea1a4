package game

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/ragsync/ragsync"
	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/netsim"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/physics"
)

// Status is where a player is in pairing and connection.
type Status uint8

const (
	StatusUnknown     Status = iota
	StatusIdle               // not started
	StatusConnecting         // reaching the signaling server, creating or joining a room
	StatusWaiting            // in the quick-match queue or a room, waiting for a rival (then connecting to it)
	StatusConnected          // the session runs; the match is on
	StatusInterrupted        // connected, but nothing has arrived from the rival for a moment
	StatusLost               // the rival is gone (timeout or it left)
	StatusFailed             // pairing failed (see Err)
	// StatusReconnecting: the rival's process dropped (a crash, a reload);
	// the match is paused while both take their seats back (see resume.go).
	StatusReconnecting
)

func (s Status) String() string {
	switch s {
	case StatusIdle:
		return "idle"
	case StatusConnecting:
		return "connecting"
	case StatusWaiting:
		return "waiting for rival"
	case StatusConnected:
		return "connected"
	case StatusInterrupted:
		return "interrupted"
	case StatusLost:
		return "rival lost"
	case StatusFailed:
		return "failed"
	case StatusReconnecting:
		return "rival reconnecting"
	}
	return "unknown"
}

// Controls are one tick's inputs of a player.
type Controls struct {
	// Fighter is the local fighter's input (ignored for bot players).
	Fighter physics.Input
	// Confirm is R or Enter pressed this tick: rematch after a round,
	// look for a new rival after losing one, retry after a failure.
	Confirm bool
}

// PlayerConfig configures one player.
type PlayerConfig struct {
	Name   string // for logs and the summary: "you", "bot"
	Signal string // signaling server URL
	// Room: "" quick match, "new" create a private room, else a room code
	// to join.
	Room string
	P2P  p2p.Config
	// Impair, if set, delays/drops what this player sends (netsim pipe).
	Impair *netsim.Config
	Seed   uint64
	// Bot: a bot of that level drives the fighter (and asks for
	// rematches); BotOff, the zero value: Controls.Fighter does.
	Bot          BotLevel
	RoundLength  time.Duration
	Countdown    time.Duration
	RematchDelay time.Duration // bots ask for a rematch this long after a result; zero: 3 s
	Log          *slog.Logger
	// Now is the wall clock of the figures (graphs, loss and log windows)
	// and of the notices. Nil: time.Now.
	Now func() time.Time
	// Feed uploads this player's spectator feed frames to the signaling
	// server (once, whatever the audience; see feedconn.go); NoSpectators
	// asks the server to refuse spectators for the room.
	Feed, NoSpectators bool
	// Rec, if set, records the match (-record): this player's frames, and
	// the rival's from the feed unless RecOwn (the rival records into the
	// same recorder, in this process).
	Rec    *recorder
	RecOwn bool
	// PairBy, if set, is when a pairing gives up (p2p.Connect's context
	// ends then; a session on a lossy link keeps trying until shortly
	// before it): headless, the end of -connect-timeout. Zero: a pairing
	// waits for a rival as long as the player does, and a paired session
	// tries for p2p's default (20 s).
	PairBy time.Time
	// RetryPairing, if set, is how long after a failed pairing the player
	// pairs again by itself (autoplay: nobody presses a key). Zero: it
	// waits for Controls.Confirm.
	RetryPairing time.Duration
}

// autoplayRetry is RetryPairing under -autoplay.
const autoplayRetry = 2 * time.Second

// nobodyAfter is how long a player waits in a room whose code it was given
// before the demo says nobody was in it: a rival who held the room pairs
// at once.
const nobodyAfter = 4 * time.Second

// pairState is what the pairing goroutine reports (under mu).
type pairState struct {
	status Status
	room   string
	since  time.Time // when the waiting in room began
}

type pairResult struct {
	s   *p2p.Session
	err error
	gen uint64 // the StartRoom call it answers
}

// Player is one peer of the game: pairing, the session, the world, the
// Match, the round rules and the diagnostics. Everything but pairing runs
// in the game loop (Update); pairing runs in a goroutine that Update polls,
// so nothing ever blocks the loop.
type Player struct {
	cfg PlayerConfig
	log *slog.Logger

	mu     sync.Mutex
	ps     pairState
	cancel context.CancelFunc
	wg     sync.WaitGroup
	pairCh chan pairResult
	gen    uint64

	status Status
	err    error // why the pairing failed or the rival was lost
	// failedAt: when the pairing failed (see RetryPairing).
	failedAt time.Time
	pairing  string // the room of the pairing in progress ("", "new" or a code)
	ownRoom  string // the code of the private room this player created, kept for the next rival

	sess   *p2p.Session
	link   *link
	arena  *arena
	match  *ragsync.Match
	rules  *Rules
	diag   *Diag
	bot    *levelBot
	me     ownership.PeerID
	fid    physics.ObjectID // own fighter
	rid    physics.ObjectID // the rival's fighter
	now    clocksync.GameTime
	synced bool

	connectedAt  time.Time
	silentWarned bool         // warned that the rival sends no states (see RivalSilent)
	rivalBg      bool         // the rival's page is hidden (RivalInBackground)
	rivalBgUntil time.Time    // wall time until which its last "hidden" holds
	page         *pageSession // set for the local player: where its page's background messages go
	results      []Result
	msgBuf       []byte
	lastEvent    string
	events       uint64
	timeline     []TimelineEvent // the session's events, for the summary
	feed         *feedConn       // the spectator feed upload (nil without)
	feedBuf      []byte
	kos          int // knock-outs of this player's fighter
	wasKO        bool
	closers      sync.WaitGroup // sessions closing in the background

	seat seatState // the seat token and resuming (resume.go)

	// resetDue is when the round the rules set began, while the
	// replicator has not accepted its reset yet (0: none pending): the
	// rival's knock-out or last states may arrive after its round result.
	resetDue clocksync.GameTime
}

// resetRetry is how long a round reset the replicator refused is tried
// again, each tick: the rival's states that show its knock-out arrive a
// latency after the round message that decided it.
const resetRetry = 4 * time.Second

// declareRound declares the round the rules just set (or retries one the
// replicator refused) to the replicator, which heals both fighters.
func (p *Player) declareRound() {
	err := p.match.ResetRound()
	switch {
	case err == nil:
		if p.now.Sub(p.resetDue) > 0 {
			p.log.Info("round reset accepted", "after", p.now.Sub(p.resetDue).Round(time.Millisecond))
		}
		p.resetDue = 0
	case p.now.Sub(p.resetDue) >= resetRetry:
		// Refused for good (no KO, time not up, as the replicator sees
		// it): the fighters keep their HP this round.
		p.log.Warn("round reset refused", "err", err, "tried_for", p.now.Sub(p.resetDue).Round(time.Millisecond))
		p.resetDue = 0
	}
}

// NewPlayer returns a player; call Start to begin pairing.
func NewPlayer(cfg PlayerConfig) *Player {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.RematchDelay == 0 {
		cfg.RematchDelay = 3 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Player{cfg: cfg, log: cfg.Log.With("peer", cfg.Name), status: StatusIdle, pairCh: make(chan pairResult, 1),
		msgBuf: make([]byte, 0, 1200)}
}

// Start begins pairing in a goroutine (room as in PlayerConfig.Room).
func (p *Player) Start() { p.StartRoom(p.cfg.Room) }

// StartRoom begins pairing into room ("" quick match, "new", or a code).
func (p *Player) StartRoom(room string) {
	var ctx context.Context
	var cancel context.CancelFunc
	if p.cfg.PairBy.IsZero() {
		ctx, cancel = context.WithCancel(context.Background())
	} else {
		ctx, cancel = context.WithDeadline(context.Background(), p.cfg.PairBy)
	}
	p.mu.Lock()
	p.cancel = cancel
	p.ps = pairState{status: StatusConnecting}
	p.mu.Unlock()
	p.status, p.err = StatusConnecting, nil
	p.pairing = room
	p.gen++
	gen := p.gen
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		s, err := p.pair(ctx, room)
		if s != nil && p.page != nil {
			// A hidden page's game loop does not run to attach the
			// session: its background messages go on it from now.
			p.page.set(s)
		}
		if ctx.Err() != nil {
			if s != nil {
				s.Close()
			}
			return
		}
		select {
		case p.pairCh <- pairResult{s, err, gen}:
		case <-ctx.Done():
			if s != nil {
				s.Close()
			}
		}
	}()
}

func (p *Player) setPair(st Status, room string) {
	now := p.cfg.Now()
	p.mu.Lock()
	p.ps.status = st
	if room != "" {
		p.ps.room = room
	}
	p.ps.since = now
	p.mu.Unlock()
}

func (p *Player) pair(ctx context.Context, room string) (*p2p.Session, error) {
	url, cfg := p.cfg.Signal, p.cfg.P2P
	cfg.Logger = p.log
	if tok := loadSeat(url, room); tok != "" {
		// A seat kept from a run that did not end (a crash, a reload):
		// take it back (see resume.go).
		return p.resumeSeat(ctx, room, tok)
	}
	switch room {
	case "new":
		r, err := p2p.CreateRoom(ctx, url, cfg)
		if err != nil {
			return nil, fmt.Errorf("creating a room on %s: %w", url, err)
		}
		p.setPair(StatusWaiting, r.Code())
		p.log.Info("room created", "room", r.Code())
		s, err := r.Connect(ctx)
		if err != nil {
			return nil, fmt.Errorf("room %s: %w", r.Code(), err)
		}
		return s, nil
	case p2p.QuickMatch:
		p.setPair(StatusWaiting, "")
		p.log.Info("looking for a rival (quick match)", "signal", url)
		s, err := p2p.Connect(ctx, url, p2p.QuickMatch, cfg)
		if err != nil {
			return nil, fmt.Errorf("quick match on %s: %w", url, err)
		}
		return s, nil
	default:
		// The room is joined if the rival made it, else created with
		// this code for the rival to join: either order works.
		p.setPair(StatusWaiting, room)
		p.log.Info("waiting in room", "room", room, "signal", url)
		s, err := p2p.Connect(ctx, url, room, cfg)
		if err != nil {
			return nil, fmt.Errorf("room %s on %s: %w", room, url, err)
		}
		return s, nil
	}
}

// Update runs one tick of the player: pairing progress, session events,
// input, the match tick, the rules and the diagnostics.
func (p *Player) Update(c Controls) {
	if p.sess == nil {
		p.pollPairing()
		if p.sess == nil {
			if p.status == StatusFailed && (c.Confirm || p.cfg.RetryPairing > 0 && p.cfg.Now().Sub(p.failedAt) >= p.cfg.RetryPairing) {
				if !c.Confirm {
					p.log.Info("pairing again", "after", p.cfg.RetryPairing, "last_err", p.err)
				}
				p.StartRoom(p.nextRoom())
			}
			return
		}
	}
	if p.status == StatusReconnecting {
		p.pollRejoin()
	} else {
		p.pollEvents()
	}
	if p.status == StatusLost {
		if c.Confirm {
			p.Restart()
		}
		return
	}
	p.tick(c)
}

func (p *Player) pollPairing() {
	p.mu.Lock()
	ps := p.ps
	p.mu.Unlock()
	if p.status == StatusConnecting || p.status == StatusWaiting {
		p.status = ps.status
	}
	select {
	case r := <-p.pairCh:
		if r.gen != p.gen {
			if r.s != nil { // a pairing given up on
				p.closers.Add(1)
				go func() { defer p.closers.Done(); r.s.Close() }()
			}
			return
		}
		if r.err != nil {
			p.status, p.err, p.failedAt = StatusFailed, r.err, p.cfg.Now()
			p.log.Warn("pairing failed", "err", r.err)
			return
		}
		if err := p.attach(r.s); err != nil {
			r.s.Close()
			p.status, p.err, p.failedAt = StatusFailed, err, p.cfg.Now()
			p.log.Error("starting the match", "err", err)
		}
	default:
	}
}

// attach builds the match on a new session.
func (p *Player) attach(s *p2p.Session) error {
	a, err := newArena()
	if err != nil {
		return err
	}
	l, err := newLink(s, p.cfg.Impair, p.cfg.Seed^0x5eed)
	if err != nil {
		return err
	}
	// The match takes this peer's side from the session's role.
	mc := matchConfig(p.onMessage)
	mc.ResumeState, mc.OnResume = p.resumeState, p.onResume
	// The host decides the round's length (-round), so a rival's round
	// reset is held to the shortest a round can be: a reset on time is
	// accepted once MinRoundLength has passed since the last one.
	mc.Replicator.RoundLength = MinRoundLength
	m, err := ragsync.NewMatch(a.world, l, mc)
	if err != nil {
		l.close()
		return err
	}
	me := ownership.PeerID(m.Side())
	rival := 3 - me
	rules, err := NewRules(RulesConfig{Me: me, Rival: rival, RoundLength: p.cfg.RoundLength, Countdown: p.cfg.Countdown,
		MaxHP: m.Fighter().MaxHP()})
	if err != nil {
		l.close()
		return err
	}
	p.sess, p.link, p.arena, p.match, p.rules = s, l, a, m, rules
	p.keepSeat(s)
	p.seat.resumed = s.Resumed() // a seat taken back at start: the match adopts the rival's snapshot
	if p.cfg.Room != "" && s.Room() != "" {
		// A private room: the next rival is looked for under the same code.
		p.ownRoom = s.Room()
	}
	p.me, p.fid, p.rid = me, m.Fighter().ID(), m.Rival().ID()
	p.diag = newDiag(p.rid)
	p.bot = newLevelBot(p.cfg.Bot, p.cfg.Seed+uint64(me))
	p.status, p.err = StatusConnected, nil
	p.kos, p.wasKO = 0, false
	if p.cfg.Feed && s.Room() != "" {
		rival := p.cfg.Rec != nil && !p.cfg.RecOwn
		p.feed = dialFeed(p.cfg.Signal, s.Room(), int(me), playerHello(!p.cfg.NoSpectators, rival))
	}
	if p.cfg.Rec != nil && p.cfg.Rec.side == 0 && !p.cfg.RecOwn {
		p.cfg.Rec.side = uint8(me)
	}
	p.silentWarned = false
	p.rivalBg, p.rivalBgUntil = false, time.Time{}
	p.connectedAt = p.cfg.Now()
	p.results = nil
	st := s.Stats()
	p.log.Info("connected", "role", s.Role().String(), "peer_id", int(me), "room", s.Room(), "transport", st.Transport.String(),
		"reason", st.ChoiceReason)
	return nil
}

// onMessage gets the game messages (round protocol) during Match.Tick.
func (p *Player) onMessage(b []byte) {
	if hidden, ok := parseBackground(b); ok {
		p.onBackground(hidden, p.cfg.Now())
		return
	}
	now := p.match.Stats().GameTime // the match time of this tick
	if err := p.rules.Handle(b, now); err != nil {
		p.log.Debug("round message refused", "err", err)
	}
}

func (p *Player) pollEvents() {
	for {
		select {
		case ev, ok := <-p.sess.Events():
			if !ok {
				if p.status != StatusLost {
					p.lose(p.sess.Err())
				}
				return
			}
			p.events++
			p.lastEvent = ev.String()
			p.record(ev)
			switch ev.Kind {
			case p2p.EventInterrupted:
				p.status = StatusInterrupted
				p.log.Warn("rival silent", "silence", ev.Silence)
			case p2p.EventResumed:
				p.status = StatusConnected
				p.log.Info("rival back", "silence", ev.Silence)
			case p2p.EventTransportChanged:
				// The session logs the change itself (Info); once is enough.
				p.log.Debug("transport changed", "from", ev.From.String(), "to", ev.Transport.String(), "reason", ev.Reason)
			case p2p.EventDisconnected:
				if errors.Is(ev.Err, p2p.ErrPeerAway) && p.rivalAway() {
					return
				}
				err := ev.Err
				if err == nil {
					err = fmt.Errorf("%w: %s", p2p.ErrDisconnected, ev.String())
				}
				p.lose(err)
				return
			default:
				p.log.Debug("session event", "event", ev.String())
			}
		default:
			return
		}
	}
}

// maxTimeline bounds the events a summary keeps (the first ones).
const maxTimeline = 256

// record adds a session event to the timeline, with the wall-clock time
// the game loop saw it (at most a tick after the session raised it).
func (p *Player) record(ev p2p.Event) {
	if len(p.timeline) >= maxTimeline {
		return
	}
	te := TimelineEvent{UnixMs: p.cfg.Now().UnixMilli(), AtMs: ev.At.Milliseconds(), Kind: ev.Kind.String(), Reason: ev.Reason, Merged: ev.Merged}
	if ev.Kind == p2p.EventTransportChanged || ev.Kind == p2p.EventTransportUp || ev.Kind == p2p.EventTransportDown {
		te.Transport = ev.Transport.String()
	}
	if ev.Kind == p2p.EventTransportChanged {
		te.From = ev.From.String()
	}
	if ev.Err != nil && te.Reason == "" {
		te.Reason = ev.Err.Error()
	}
	p.timeline = append(p.timeline, te)
}

func (p *Player) lose(why error) {
	p.status, p.err = StatusLost, why
	p.forgetSeat()
	p.log.Warn("rival lost", "err", why)
}

// Restart drops the current session (if any) and looks for a new rival: in
// the same private room (the same code) if this player had one, so a rival
// who comes back with the code finds it.
func (p *Player) Restart() {
	p.stop()
	p.StartRoom(p.nextRoom())
}

// nextRoom is the room to look for the next rival in: the code of the
// private room this player created or joined, else what it was started
// with (a quick match, or "new").
func (p *Player) nextRoom() string {
	if p.ownRoom != "" {
		return p.ownRoom
	}
	return p.cfg.Room
}

// NobodyInRoom reports that this player has been waiting for a while in a
// room whose code it was given (-room CODE): nobody held that room, so the
// pairing created it and now waits in it. A wrong code looks like this.
func (p *Player) NobodyInRoom() bool {
	if p.status != StatusWaiting || p.pairing == "" || p.pairing == "new" || p.pairing == p.ownRoom {
		return false
	}
	p.mu.Lock()
	since := p.ps.since
	p.mu.Unlock()
	return !since.IsZero() && p.cfg.Now().Sub(since) >= nobodyAfter
}

// stop ends pairing and the session, closing the session in the
// background so the loop never waits for it.
func (p *Player) stop() {
	p.mu.Lock()
	cancel := p.cancel
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if p.link != nil {
		p.link.close()
	}
	if p.feed != nil {
		p.feed.Close()
		p.feed = nil
	}
	if s := p.sess; s != nil {
		p.forgetSeat() // a goodbye: this match is over
		p.closers.Add(1)
		go func() { defer p.closers.Done(); s.Close() }()
	}
	p.stopRejoin()
	p.sess, p.link, p.match, p.rules, p.arena, p.diag = nil, nil, nil, nil, nil, nil
}

// Close stops everything and waits for the player's goroutines.
func (p *Player) Close() {
	p.stop()
	p.wg.Wait()
	select {
	case r := <-p.pairCh:
		if r.s != nil {
			r.s.Close()
		}
	default:
	}
	p.closers.Wait()
	p.status = StatusIdle
}

func (p *Player) tick(c Controls) {
	_, ok := p.sess.GameTime()
	now := p.now // the match time of the last tick (it stands still while resuming)
	f := p.arena.world.Fighter(p.fid)
	in := c.Fighter
	if p.cfg.Bot != BotOff {
		in = p.bot.Input(p.arena.world, p.fid, p.rid)
	}
	if !ok || !p.rules.CanFight(now) || f.Action() == physics.ActionKO {
		in = 0
	}
	f.SetInput(in)
	if err := p.match.Tick(); err != nil {
		p.synced = false
		if !errors.Is(err, ragsync.ErrNotSynced) { // cannot happen: matchConfig names every object
			p.status, p.err = StatusFailed, err
			p.log.Error("match", "err", err)
		}
		return // ErrNotSynced: the clock is still calibrating
	}
	p.synced = true // the match started itself (Link.StartMatch) on its first synced tick
	p.now = p.match.Stats().GameTime
	p.logResumed()
	if p.resetDue != 0 {
		p.declareRound()
	}
	ev := p.rules.Tick(p.now, f.HP())
	if ev.NewRound {
		if err := p.arena.reset(p.match.Replicator(), p.fid); err != nil {
			p.log.Error("resetting the round", "err", err)
		}
		p.resetDue = p.now
		p.declareRound()
		p.diag.roundReset()
		n, start, length := p.rules.Round()
		p.log.Info("round set", "round", n, "starts_in", start.Sub(p.now).Round(time.Millisecond), "length", length)
	}
	if ev.Decided {
		res, _ := p.rules.Result()
		p.results = append(p.results, res)
		p.log.Info("round over", "result", res.String())
	}
	if res, ok := p.rules.Result(); ok && !p.rules.WantsRematch() {
		if c.Confirm || (p.cfg.Bot != BotOff && p.now.Sub(p.rules.DecidedAt()) >= p.cfg.RematchDelay) {
			p.rules.Rematch()
			p.log.Info("rematch asked", "after", res.String())
		}
	}
	if msg, ok := p.rules.AppendMessage(p.msgBuf[:0], p.now); ok {
		if err := p.match.SendMessage(msg); err != nil {
			p.log.Debug("sending a round message", "err", err)
		}
		p.msgBuf = msg[:0]
	}
	p.diag.tickUpdate(p.match, p.sess, p.now, p.cfg.Now(), &p.link.seqs)
	p.bgTick(p.cfg.Now())
	switch silent := p.diag.StatesSilent(); {
	case p.diag.RivalSilent() && !p.silentWarned && !p.rivalBg: // a rival in the background says why
		p.silentWarned = true
		p.log.Warn("the rival sends no game states: its fighter stays frozen (another game, or a client that only pings?)",
			"for", silent.Round(time.Millisecond), "states_received", p.match.Stats().Replicator.PacketsIn)
	case !p.diag.RivalSilent() && p.silentWarned:
		p.silentWarned = false
		p.log.Info("the rival's game states arrive again")
	}
	if ko := f.Action() == physics.ActionKO; ko != p.wasKO {
		p.wasKO = ko
		if ko {
			p.kos++
		}
	}
	p.feedTick()
}

// feedTick sends this tick's spectator feed frame to the feed and the
// recording, and records the rival's frames that came from the feed.
func (p *Player) feedTick() {
	if p.feed == nil && p.cfg.Rec == nil {
		return
	}
	n, start, length := p.rules.Round()
	if n == 0 {
		start = p.now
	}
	b, err := p.match.AppendFeedFrame(p.feedBuf[:0], ragsync.FeedRound{Round: n, Start: start, Length: length})
	if err != nil {
		return
	}
	p.feedBuf = b
	if p.feed != nil {
		p.feed.Send(b)
	}
	p.cfg.Rec.add(p.now, b)
	if p.feed != nil && p.cfg.Rec != nil && !p.cfg.RecOwn {
		for {
			rb, ok := p.feed.Recv()
			if !ok {
				break
			}
			p.cfg.Rec.add(p.now, rb)
		}
	}
}

// FeedSent is the bytes this player uploaded to the spectator feed, and
// Watchers how many spectators the server counts for its room.
func (p *Player) FeedSent() uint64 {
	if p.feed == nil {
		return 0
	}
	return p.feed.sent.Load()
}

func (p *Player) Watchers() int {
	if p.feed == nil {
		return 0
	}
	return int(p.feed.watchers.Load())
}

// RivalSilent reports whether a paired rival has sent no state packets
// for SilentRivalAfter (the session may still be alive: its pings come).
func (p *Player) RivalSilent() bool { return p.silentWarned }

// Accessors for drawing and the HUD (read-only, from the game loop).

func (p *Player) Status() Status { return p.status }
func (p *Player) Err() error     { return p.err }
func (p *Player) Name() string   { return p.cfg.Name }

// Room returns the room code of the pairing in progress or of the session.
func (p *Player) Room() string {
	if p.sess != nil && p.sess.Room() != "" {
		return p.sess.Room()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ps.room
}

// Session returns the session (nil before pairing completes).
func (p *Player) Session() *p2p.Session { return p.sess }

// World returns the world (nil before pairing completes).
func (p *Player) World() *physics.World {
	if p.arena == nil {
		return nil
	}
	return p.arena.world
}

func (p *Player) Match() *ragsync.Match                  { return p.match }
func (p *Player) Rules() *Rules                          { return p.rules }
func (p *Player) Diag() *Diag                            { return p.diag }
func (p *Player) Me() ownership.PeerID                   { return p.me }
func (p *Player) Fighters() (me, rival physics.ObjectID) { return p.fid, p.rid }

// Now is the game time of the last tick; Synced whether the clock is.
func (p *Player) Now() clocksync.GameTime { return p.now }
func (p *Player) Synced() bool            { return p.synced }

// Results lists the results of the rounds played on this session.
func (p *Player) Results() []Result { return p.results }

// Summary returns the player's figures over the whole session so far.
func (p *Player) Summary() Summary {
	s := Summary{Peer: p.cfg.Name, Status: p.status.String(), PeerID: int(p.me), RivalRejoins: p.seat.rejoins, Resumed: p.seat.resumed}
	if p.cfg.Impair != nil {
		s.Impair = p.cfg.Impair.String()
	}
	if p.sess == nil {
		if p.err != nil {
			s.LastErr = p.err.Error()
		}
		return s
	}
	ls := p.sess.Stats()
	s.Role, s.Room = p.sess.Role().String(), p.sess.Room()
	fillLink(&s, &ls)
	s.Timeline = p.timeline
	for _, te := range p.timeline {
		if te.Kind == p2p.EventDisconnected.String() {
			s.DisconnectedAtUnixMs = te.UnixMs
		}
	}
	secs := p.cfg.Now().Sub(p.connectedAt).Seconds()
	s.Seconds = secs
	if secs > 0 {
		var txp, txb, rxp, rxb uint64
		for _, l := range []*p2p.LinkStats{&ls.WebRTC, &ls.TCP} {
			txp, txb, rxp, rxb = txp+l.TxPackets, txb+l.TxBytes, rxp+l.RxPackets, rxb+l.RxBytes
		}
		s.TxPktS, s.TxBytesS, s.RxPktS, s.RxBytesS = float64(txp)/secs, float64(txb)/secs, float64(rxp)/secs, float64(rxb)/secs
	}
	d := p.diag
	s.StateAgeMs, s.StateAgeMax = float64(d.total.age.mean())/1e6, float64(d.total.age.max)/1e6
	s.StateLoss = 100 * d.MatchStateLoss()
	s.ErrRMSm, s.ErrMaxm = d.total.err.rms(), d.total.err.max
	if el := p.cfg.Now().Sub(d.total.start).Seconds(); d.total.ticks > 0 && el > 0 {
		s.HardPerSec = float64(d.last.HardTicks-d.total.hardTicks) / el
	}
	s.HitsDealt, s.HitsTaken, s.Damage = d.last.HitsDealt, d.last.HitsTaken, d.last.Damage
	s.Transfers, s.Ticks, s.Rejected = d.last.Transfers, d.last.Ticks, d.last.Rejected
	s.Moved = [2]float64{d.moved[0], d.moved[1]}
	s.Round, _, _ = p.rules.Round()
	for _, r := range p.results {
		s.Rounds = append(s.Rounds, r.String())
	}
	st := p.match.Stats()
	s.StatesApplied = st.Replicator.Applied
	s.HP, s.KOs = p.arena.world.Fighter(p.fid).HP(), p.kos
	s.FeedSent, s.Spectators = p.FeedSent(), p.Watchers()
	if st.LastError != nil {
		s.LastErr = st.LastError.Error()
	}
	return s
}

// logWindow writes the periodic line of this player: the game's tick and
// frame rates (wall clock), and the net figures of the window while a match
// runs. Without a match (waiting, the rival lost) it says where the player
// is and no figure of a match that is over.
func (p *Player) logWindow(wall time.Time, tps, fps float64) {
	rates := []any{"tps", round1(tps)}
	if fps > 0 {
		rates = append(rates, "fps", round1(fps))
	}
	live := p.status == StatusConnected || p.status == StatusInterrupted || p.status == StatusReconnecting
	if p.sess == nil || p.diag == nil || !live || !p.synced {
		args := append(rates, "status", p.status.String())
		if room := p.Room(); room != "" {
			args = append(args, "room", room)
		}
		p.log.Info("status", args...)
		return
	}
	err, age, hard := p.diag.closeWindow(wall)
	ls := p.sess.Stats()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	p.log.Info("net", append(rates,
		"path", PathOf(&ls),
		"rtt_ms", ms(ls.RTT.Smoothed), "jitter_ms", ms(ls.Jitter), "loss_pct", round1(100*ls.LossRecent),
		"state_age_ms", ms(age.mean()), "state_loss_pct", round1(100*p.diag.stateLoss), "rival_states_per_s", round1(p.diag.stateRate),
		"clock_offset_ms", ms(ls.ClockOffset), "clock_unc_ms", ms(ls.ClockUncertainty),
		"tx_pps", int(ls.TxPacketsPerSec), "tx_Bps", int(ls.TxBytesPerSec), "rx_pps", int(ls.RxPacketsPerSec), "rx_Bps", int(ls.RxBytesPerSec),
		"err_rms_m", round3(err.rms()), "err_max_m", round3(err.max), "hard_snaps_per_s", round3(hard))...)
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
