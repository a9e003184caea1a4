package game

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/physics"
)

// RunReport is what a headless run prints at the end.
type RunReport struct {
	Seconds  float64   `json:"seconds"` // of play, once connected
	Signal   string    `json:"signal"`
	Embedded bool      `json:"embedded_server"`
	Players  []Summary `json:"players"`
	// Goroutines running before the run and right after closing
	// everything, a diagnostic figure: pion's goroutines wind down
	// asynchronously, so the second may exceed the first for a moment.
	GoroutinesBefore int `json:"goroutines_before"`
	GoroutinesAfter  int `json:"goroutines_after"`
}

// RunHeadless plays without a window: the same App.Update as the window,
// driven from a 60 Hz loop, with every local fighter bot-driven. It plays
// for cfg.Duration once connected, then closes everything and prints the
// summary to stdout.
func RunHeadless(ctx context.Context, cfg Config, stdout io.Writer, log *slog.Logger) error {
	cfg.Headless = true
	if cfg.Spectate != "" || cfg.Replay != "" {
		return runWatchHeadless(ctx, cfg, stdout, log)
	}
	before := runtime.NumGoroutine()
	app := NewApp(cfg, log)
	rep, runErr := playHeadless(ctx, app, cfg, log)
	app.Close()
	rep.GoroutinesBefore, rep.GoroutinesAfter = before, runtime.NumGoroutine()
	printReport(stdout, &rep)
	if cfg.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(&rep); err != nil {
			return err
		}
	}
	return runErr
}

// playHeadless runs the loop until the match has lasted cfg.Duration.
func playHeadless(ctx context.Context, app *App, cfg Config, log *slog.Logger) (RunReport, error) {
	var rep RunReport
	start := time.Now()
	connectBy := start.Add(cfg.ConnectTimeout)
	var playing time.Time
	tick := time.NewTicker(physics.TickDuration)
	defer tick.Stop()
	done := 0 // ticks run
	for {
		select {
		case <-ctx.Done():
			return app.report(rep, playing), ctx.Err()
		case <-tick.C:
		}
		// Catch up on missed ticks, as Ebiten does, so the game runs at 60
		// Hz on average even when the machine is busy.
		due := int(time.Since(start)/physics.TickDuration) + 1
		for n := 0; done < due && n < 5; n++ {
			app.Update(Controls{})
			done++
		}
		done = max(done, due-5)
		switch {
		case app.Setup() == SetupFailed:
			return app.report(rep, playing), app.Err()
		case playing.IsZero() && app.Connected():
			playing = time.Now()
			log.Info("playing", "for", cfg.Duration)
		case playing.IsZero() && time.Now().After(connectBy):
			return app.report(rep, playing), fmt.Errorf("no rival within %v (%s)", cfg.ConnectTimeout, app.statusLine())
		case !playing.IsZero() && time.Since(playing) >= cfg.Duration:
			return app.report(rep, playing), nil
		}
		if p := app.Local(); p != nil && p.Status() == StatusFailed && errors.Is(p.Err(), p2p.ErrSeatLost) {
			// A kept seat whose match has ended: nothing to wait for.
			return app.report(rep, playing), p.Err()
		}
		if p := app.Local(); p != nil && (p.Status() == StatusFailed || p.Status() == StatusLost) && !playing.IsZero() {
			return app.report(rep, playing), fmt.Errorf("%s: %v", p.Status(), p.Err())
		}
	}
}

func (a *App) statusLine() string {
	if a.local == nil {
		return "no player"
	}
	s := a.local.Status().String()
	if err := a.local.Err(); err != nil {
		s += ": " + err.Error()
	}
	return s
}

func (a *App) report(r RunReport, playing time.Time) RunReport {
	if !playing.IsZero() {
		r.Seconds = time.Since(playing).Seconds()
	}
	r.Signal = a.signal
	r.Embedded = a.server != nil
	r.Players = a.Summaries()
	return r
}

func printReport(w io.Writer, r *RunReport) {
	where := r.Signal
	if r.Embedded {
		where += " (embedded)"
	}
	fmt.Fprintf(w, "ragsync demo, headless: %.1f s of play, signaling %s\n", r.Seconds, where)
	for _, s := range r.Players {
		fmt.Fprintf(w, "  %s\n", s.String())
		for _, rd := range s.Rounds {
			fmt.Fprintf(w, "    %s\n", rd)
		}
		if s.LastErr != "" {
			fmt.Fprintf(w, "    last error: %s\n", s.LastErr)
		}
	}
	fmt.Fprintf(w, "  goroutines: %d before, %d right after closing\n", r.GoroutinesBefore, r.GoroutinesAfter)
}
