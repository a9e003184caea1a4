// Package game is the ragsync demo without its window: flags, finding or
// embedding the signaling server, pairing, the per-tick glue of each player
// (session, world, ragsync.Match, round rules, diagnostics), the round
// protocol, and the headless runner. It does not import Ebiten; package ui
// draws what it holds, and the headless runner drives the same App.Update
// from a 60 Hz ticker.
package game

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// SetupState is where the App is in finding a signaling server.
type SetupState uint8

const (
	SetupRunning SetupState = iota // checking for a server, maybe starting one
	SetupDone                      // the players are pairing
	SetupFailed                    // see App.Err
	SetupHosting                   // the server in use went away; starting one here (App.Host)
)

type setupResult struct {
	url    string
	server *embeddedServer
	err    error
	// check: the server at url (given with -signal) is checked alongside
	// the pairing (see checkSignal).
	check bool
}

// App is the whole demo without its window: the local player, an optional
// local bot rival, and maybe an embedded signaling server. Drive it with
// Update at 60 Hz; read it from Draw. Only Close may block.
type App struct {
	cfg Config
	log *slog.Logger

	setup   SetupState
	setupCh chan setupResult
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the App's own goroutines
	err     error
	server  *embeddedServer
	signal  string
	share   []string
	local   *Player
	bot     *Player
	botRoom string

	now       func() time.Time // wall clock; time.Now
	started   time.Time        // when NewApp ran (headless: -connect-timeout counts from it)
	frameRate func() float64   // the window's frames per second; nil headless
	ticks     uint64
	logAt     time.Time // wall time of the last periodic line
	logTicks  uint64    // ticks at logAt
	rateAt    time.Time // the 1 s window of Rates
	rateTicks uint64
	tps, fps  float64

	// The health of a signaling server this process does not run, checked
	// when the local player loses its rival or fails to pair: a server that
	// stopped answering is a host who quit.
	lastStatus Status
	nextCheck  time.Time
	healthCh   chan bool
	// signalCheck gets the result of the check of the -signal server
	// (see checkSignal); nil: none runs.
	signalCheck chan error
	checking    bool
	serverGone  bool
	// summaryAt is when the players' summaries were last logged
	// (Config.LogSummaries).
	summaryAt time.Time
	rec       *recorder   // -record, shared by the players of this process
	page      pageSession // where a browser page's background messages go
}

// LogEvery is the interval of the summary lines in the log.
const LogEvery = 5 * time.Second

// NewApp starts the demo: finding or embedding the signaling server runs
// in a goroutine, then pairing starts from Update.
func NewApp(cfg Config, log *slog.Logger) *App {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &App{cfg: cfg, log: log, setupCh: make(chan setupResult, 1), cancel: cancel, ctx: ctx,
		now: time.Now, healthCh: make(chan bool, 1), started: time.Now()}
	a.wg.Add(1)
	go func() { defer a.wg.Done(); a.setupCh <- a.findServer(ctx) }()
	a.watchVisibility()
	return a
}

// SetFrameRate gives the App the window's frame rate (ebiten.ActualFPS),
// for the periodic log line and the HUD.
func (a *App) SetFrameRate(fps func() float64) { a.frameRate = fps }

// Rates returns the game's ticks per second and the window's frames per
// second over the last second of wall time (frames 0 without a window).
func (a *App) Rates() (tps, fps float64) { return a.tps, a.fps }

// RivalIsBot reports whether the local player's rival is this process's
// bot (-bot).
func (a *App) RivalIsBot() bool { return a.cfg.Bot != BotOff }

// ServerGone reports that the signaling server in use, which another
// process ran, stopped answering after the local player lost its rival or
// failed to pair: its host has probably quit. Confirm (Enter) then hosts a
// server here (see Host).
func (a *App) ServerGone() bool { return a.serverGone }

// checkSignal checks that the server given with -signal answers
// (healthyRetry: for up to healthRetryFor), alongside the pairing rather
// than before it: the pairing's own connection to the server is the same
// evidence, and on a lossy link the check alone took one to three seconds
// (a TCP handshake and a request, and their retransmissions). If no check
// succeeds while the local player has not started a match, setup fails
// with the check's error, as it did when the check came first.
func (a *App) checkSignal(url string) {
	a.signalCheck = make(chan error, 1)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		var res error
		if err := healthyRetry(a.ctx, url, 3*time.Second, healthRetryFor); err != nil && a.ctx.Err() == nil {
			res = fmt.Errorf("no signaling server answers at %s: %w", url, err)
		}
		a.signalCheck <- res
	}()
}

// findServer decides which signaling server to use, embedding one if
// needed.
func (a *App) findServer(ctx context.Context) setupResult {
	c := &a.cfg
	if c.SignalSet && c.TrustSignal {
		return setupResult{url: c.Signal}
	}
	if c.SignalSet {
		return setupResult{url: c.Signal, check: true}
	}
	if !c.ListenSet {
		if err := healthy(ctx, DefaultSignal, time.Second); err == nil {
			a.log.Info("using the signaling server already running", "url", DefaultSignal)
			return setupResult{url: DefaultSignal}
		}
	}
	srv, err := startServer(c.Listen, a.log)
	if err != nil {
		return setupResult{err: err}
	}
	a.log.Info("embedded signaling server", "listen", srv.Addr().String(), "share", srv.ShareURLs())
	return setupResult{url: srv.LocalURL(), server: srv}
}

func (a *App) playerConfig(name string, room string, seed uint64, bot BotLevel) PlayerConfig {
	imp, _ := a.cfg.impairment()
	if a.cfg.Record != "" && a.rec == nil {
		a.rec = newRecorder(a.cfg.Record)
	}
	pc := PlayerConfig{Name: name, Signal: a.signal, Room: room, P2P: a.cfg.p2pConfig(), Impair: imp, Seed: seed,
		Bot: bot, RoundLength: a.cfg.RoundLength, Log: a.log,
		Feed: true, NoSpectators: a.cfg.NoSpectators, Rec: a.rec, RecOwn: a.cfg.Bot != BotOff}
	if a.cfg.Autoplay && !a.cfg.Headless {
		// Nobody is there to press a key: pair again by itself.
		pc.RetryPairing = autoplayRetry
	}
	if a.cfg.Headless && a.cfg.ConnectTimeout > 0 {
		// Headless gives up at -connect-timeout: the pairing may use all
		// of it (on a lossy link a paired session keeps trying).
		pc.PairBy = a.started.Add(a.cfg.ConnectTimeout)
	}
	return pc
}

// Update runs one 60 Hz tick of everything.
func (a *App) Update(local Controls) {
	wall := a.now()
	a.ticks++
	a.rates(wall)
	switch a.setup {
	case SetupRunning, SetupHosting:
		select {
		case r := <-a.setupCh:
			a.startPlayers(r)
		default:
			return
		}
	}
	if a.setup != SetupDone {
		return
	}
	select {
	case err := <-a.signalCheck:
		if err != nil && !a.Connected() {
			a.setup, a.err = SetupFailed, err
			a.log.Error("no signaling server", "err", err)
			for _, p := range []*Player{a.local, a.bot} {
				if p != nil {
					p.stop() // its pairing: no server to pair through
				}
			}
			return
		}
	default:
	}
	a.watchServer(wall)
	if a.serverGone && local.Confirm {
		a.Host()
		return
	}
	a.local.Update(local)
	a.page.set(a.local.Session())
	if a.bot != nil {
		// The bot joins whatever room the local player created (again
		// after the local player looks for a new rival).
		if room := a.local.Room(); room != "" && room != a.botRoom && a.local.Status() == StatusWaiting {
			a.botRoom = room
			if a.bot.Status() != StatusIdle {
				a.bot.stop()
			}
			a.bot.StartRoom(room)
		}
		a.bot.Update(Controls{}) // the App restarts it along with the local player
	}
	if a.cfg.LogSummaries && wall.Sub(a.summaryAt) >= LogEvery {
		// By the wall clock: a browser that ticks slowly still reports.
		a.summaryAt = wall
		a.logSummaries()
	}
	if wall.Sub(a.logAt) >= LogEvery {
		tps := float64(a.ticks-a.logTicks) / wall.Sub(a.logAt).Seconds()
		a.logAt, a.logTicks = wall, a.ticks
		a.local.logWindow(wall, tps, a.fps)
		if a.bot != nil {
			a.bot.logWindow(wall, tps, a.fps)
		}
	}
}

// rates measures the tick and frame rates over seconds of wall time.
func (a *App) rates(wall time.Time) {
	if a.rateAt.IsZero() {
		a.rateAt, a.rateTicks, a.logAt, a.logTicks = wall, a.ticks, wall, a.ticks
		return
	}
	if el := wall.Sub(a.rateAt); el >= time.Second {
		a.tps = float64(a.ticks-a.rateTicks) / el.Seconds()
		if a.frameRate != nil {
			a.fps = a.frameRate()
		}
		a.rateAt, a.rateTicks = wall, a.ticks
	}
}

// watchServer checks the signaling server's health while the local player
// has lost its rival or failed to pair, if another process runs the server:
// at once, then every serverCheckEvery (a host that quits says goodbye to
// its rival a moment before its server stops).
func (a *App) watchServer(wall time.Time) {
	st := a.local.Status()
	down := st == StatusLost || st == StatusFailed
	if st != a.lastStatus {
		a.lastStatus = st
		a.nextCheck = wall
		if !down {
			a.serverGone = false
		}
	}
	if down && a.server == nil && !a.checking && !a.serverGone && !wall.Before(a.nextCheck) {
		a.checking = true
		a.nextCheck = wall.Add(serverCheckEvery)
		url := a.signal
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			// Tried again for a few seconds: one check that times out
			// on a loaded machine (a page's fetch waits for its busy
			// thread) is no proof that the server is gone.
			err := healthyRetry(a.ctx, url, 2*time.Second, 6*time.Second)
			a.healthCh <- err != nil
		}()
	}
	if a.checking {
		select {
		case gone := <-a.healthCh:
			a.checking = false
			st := a.local.Status()
			a.serverGone = gone && (st == StatusLost || st == StatusFailed)
			if a.serverGone {
				a.log.Warn("the signaling server does not answer any more: its host has probably quit", "url", a.signal)
			}
		default:
		}
	}
}

// serverCheckEvery is how often watchServer checks a server that answered.
const serverCheckEvery = 2 * time.Second

// Host starts a signaling server in this process (on -listen) to replace
// one that went away, and pairs again through it; the rival can then join
// this machine. Update calls it on Confirm while ServerGone.
func (a *App) Host() {
	a.serverGone = false
	a.setup = SetupHosting
	a.local.stop()
	if a.bot != nil {
		a.bot.stop()
	}
	a.log.Info("hosting a signaling server here", "listen", a.cfg.Listen)
	listen := a.cfg.Listen
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		srv, err := startServer(listen, a.log)
		if err != nil {
			a.setupCh <- setupResult{err: err}
			return
		}
		a.setupCh <- setupResult{url: srv.LocalURL(), server: srv}
	}()
}

func (a *App) startPlayers(r setupResult) {
	if r.err != nil {
		a.setup, a.err = SetupFailed, r.err
		a.log.Error("no signaling server", "err", r.err)
		return
	}
	a.setup = SetupDone
	a.signal, a.server = r.url, r.server
	if r.check {
		a.checkSignal(r.url)
	}
	if r.server != nil {
		a.share = r.server.ShareURLs()
	}
	if a.local != nil {
		// Hosting after the server in use went away: the same players,
		// through the new server.
		a.local.cfg.Signal = a.signal
		a.local.Restart()
		if a.bot != nil {
			a.bot.cfg.Signal = a.signal
			a.botRoom = ""
		}
		return
	}
	room := a.cfg.Room
	if a.cfg.Bot != BotOff {
		room = "new"
	}
	name := "you"
	if a.cfg.Headless {
		name = "bot-1" // headless: a bot plays the local fighter
	}
	if a.cfg.Autoplay {
		name = "you (autoplay)"
	}
	// A bot playing the local fighter (headless, autoplay) plays at full
	// strength.
	self := BotOff
	if a.cfg.Headless || a.cfg.Autoplay {
		self = BotHard
	}
	a.local = NewPlayer(a.playerConfig(name, room, a.cfg.Seed, self))
	a.local.page = &a.page
	if a.cfg.Bot != BotOff {
		a.bot = NewPlayer(a.playerConfig("bot", "", a.cfg.Seed+100, a.cfg.Bot))
	}
	a.local.Start()
}

// Close stops the players and the embedded server and waits for every
// goroutine the App started.
func (a *App) Close() {
	a.cancel()
	a.wg.Wait()
	if a.setup == SetupRunning || a.setup == SetupHosting {
		select {
		case r := <-a.setupCh:
			if r.server != nil {
				a.server = r.server
			}
		default:
		}
		a.setup = SetupFailed
	}
	if a.local != nil {
		a.local.Close()
	}
	if a.bot != nil {
		a.bot.Close()
	}
	if err := a.rec.close(); err != nil {
		a.log.Error("recording", "err", err)
	}
	if a.server != nil {
		a.server.Close()
	}
}

// Accessors for the window.

func (a *App) Setup() SetupState { return a.setup }
func (a *App) Err() error        { return a.err }
func (a *App) Local() *Player    { return a.local }
func (a *App) Bot() *Player      { return a.bot }
func (a *App) Config() Config    { return a.cfg }

// SignalURL is the signaling server in use.
func (a *App) SignalURL() string { return a.signal }

// Embedded reports whether this process runs the signaling server, and
// where it listens.
func (a *App) Embedded() (bool, string) {
	if a.server == nil {
		return false, ""
	}
	return true, a.server.Addr().String()
}

// ShareURLs are the -signal URLs another machine can use to reach this
// process's embedded server (none if it listens on loopback only).
func (a *App) ShareURLs() []string { return a.share }

// Connected reports whether every player of this process is in a match.
func (a *App) Connected() bool {
	if a.local == nil || a.local.Match() == nil || !a.local.Synced() {
		return false
	}
	return a.bot == nil || (a.bot.Match() != nil && a.bot.Synced())
}

// Summaries returns every player's figures.
func (a *App) Summaries() []Summary {
	var out []Summary
	for _, p := range []*Player{a.local, a.bot} {
		if p != nil {
			out = append(out, p.Summary())
		}
	}
	return out
}

// NewLogger is the demo's logger: text lines on w, Info level (Debug with
// verbose, which includes the sessions' and pion's logs).
func NewLogger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
