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
	"time"
)

// SetupState is where the App is in finding a signaling server.
type SetupState uint8

const (
	SetupRunning SetupState = iota // checking for a server, maybe starting one
	SetupDone                      // the players are pairing
	SetupFailed                    // see App.Err
)

type setupResult struct {
	url    string
	server *embeddedServer
	err    error
}

// App is the whole demo without its window: the local player, an optional
// local bot rival, and maybe an embedded signaling server. Drive it with
// Update at 60 Hz; read it from Draw. Only Close may block.
type App struct {
	cfg Config
	log *slog.Logger

	setup    SetupState
	setupCh  chan setupResult
	cancel   context.CancelFunc
	err      error
	server   *embeddedServer
	signal   string
	share    []string
	local    *Player
	bot      *Player
	botRoom  string
	ticks    uint64
	logEvery uint64
	// summaryAt is when the players' summaries were last logged
	// (Config.LogSummaries).
	summaryAt time.Time
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
	a := &App{cfg: cfg, log: log, setupCh: make(chan setupResult, 1), cancel: cancel,
		logEvery: uint64(LogEvery.Seconds() * ticksPerSec)}
	go func() { a.setupCh <- a.findServer(ctx) }()
	return a
}

// findServer decides which signaling server to use, embedding one if
// needed.
func (a *App) findServer(ctx context.Context) setupResult {
	c := &a.cfg
	if c.SignalSet && c.TrustSignal {
		return setupResult{url: c.Signal}
	}
	if c.SignalSet {
		if err := healthy(ctx, c.Signal, 3*time.Second); err != nil {
			return setupResult{err: fmt.Errorf("no signaling server answers at %s: %w", c.Signal, err)}
		}
		return setupResult{url: c.Signal}
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

func (a *App) playerConfig(name string, room string, seed uint64, bot bool) PlayerConfig {
	imp, _ := a.cfg.impairment()
	return PlayerConfig{Name: name, Signal: a.signal, Room: room, P2P: a.cfg.p2pConfig(), Impair: imp, Seed: seed,
		Bot: bot, RoundLength: a.cfg.RoundLength, Log: a.log}
}

// Update runs one 60 Hz tick of everything.
func (a *App) Update(local Controls) {
	if a.setup == SetupRunning {
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
	a.local.Update(local)
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
	a.ticks++
	if a.cfg.LogSummaries && time.Since(a.summaryAt) >= LogEvery {
		// By the wall clock: a browser that ticks slowly still reports.
		a.summaryAt = time.Now()
		a.logSummaries()
	}
	if a.ticks%a.logEvery == 0 {
		a.local.logWindow()
		if a.bot != nil {
			a.bot.logWindow()
		}

	}
}

func (a *App) startPlayers(r setupResult) {
	if r.err != nil {
		a.setup, a.err = SetupFailed, r.err
		a.log.Error("no signaling server", "err", r.err)
		return
	}
	a.setup = SetupDone
	a.signal, a.server = r.url, r.server
	if r.server != nil {
		a.share = r.server.ShareURLs()
	}
	room := a.cfg.Room
	if a.cfg.Bot {
		room = "new"
	}
	name := "you"
	if a.cfg.Headless {
		name = "bot-1" // headless: a bot plays the local fighter
	}
	if a.cfg.Autoplay {
		name = "you (autoplay)"
	}
	a.local = NewPlayer(a.playerConfig(name, room, a.cfg.Seed, a.cfg.Headless || a.cfg.Autoplay))
	if a.cfg.Bot {
		a.bot = NewPlayer(a.playerConfig("bot", "", a.cfg.Seed+100, true))
	}
	a.local.Start()
}

// Close stops the players and the embedded server and waits for every
// goroutine the App started.
func (a *App) Close() {
	a.cancel()
	if a.setup == SetupRunning {
		if r := <-a.setupCh; r.server != nil {
			a.server = r.server
		}
		a.setup = SetupFailed
	}
	if a.local != nil {
		a.local.Close()
	}
	if a.bot != nil {
		a.bot.Close()
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
