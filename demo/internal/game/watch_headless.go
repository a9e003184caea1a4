package game

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ragsync/ragsync/physics"
)

// WatchReport is what a headless spectator (-spectate) or replay
// (-replay) prints at the end.
type WatchReport struct {
	Signal string       `json:"signal,omitempty"`
	File   string       `json:"file,omitempty"`
	Watch  WatchSummary `json:"watch"`
}

// runWatchHeadless plays a replay to its end, as fast as it can, or
// watches a room live for cfg.Duration once its first frame came, and
// prints the summary.
func runWatchHeadless(ctx context.Context, cfg Config, stdout io.Writer, log *slog.Logger) error {
	var (
		w   *Watcher
		err error
		rep WatchReport
	)
	if cfg.Replay != "" {
		if w, err = OpenReplay(cfg.Replay); err != nil {
			return err
		}
		rep.File = cfg.Replay
		for !w.Done() && ctx.Err() == nil {
			w.Update()
		}
	} else {
		rep.Signal = cfg.Signal
		if w, err = NewSpectate(cfg.Signal, cfg.Spectate, cfg.Record); err != nil {
			return err
		}
		log.Info("spectating", "room", cfg.Spectate, "signal", cfg.Signal)
		err = watchLive(ctx, w, cfg)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	rep.Watch = w.Summary()
	s := rep.Watch
	fmt.Fprintf(stdout, "ragsync demo, %s: %.1f s, round %d\n", s.Mode, s.Seconds, s.Round)
	for k := range 2 {
		fmt.Fprintf(stdout, "  fighter %d: %d states, HP %d, KOs %d, hits dealt %d, taken %d, damage %d\n", k+1,
			s.SpectatedStates[k], s.HP[k], s.KOs[k], s.HitsDealt[k], s.HitsTaken[k], s.Damage[k])
	}
	if s.Watchers > 0 {
		fmt.Fprintf(stdout, "  %d watching\n", s.Watchers)
	}
	if cfg.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(&rep); jerr != nil && err == nil {
			err = jerr
		}
	}
	return err
}

func watchLive(ctx context.Context, w *Watcher, cfg Config) error {
	tick := time.NewTicker(physics.TickDuration)
	defer tick.Stop()
	connectBy := time.Now().Add(cfg.ConnectTimeout)
	var first time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		w.Update()
		st := w.States()
		switch {
		case w.Err() != nil:
			return w.Err()
		case w.Ended():
			return nil
		case first.IsZero() && st[0]+st[1] > 0:
			first = time.Now()
		case first.IsZero() && time.Now().After(connectBy):
			return fmt.Errorf("no feed frame within %v", cfg.ConnectTimeout)
		case !first.IsZero() && time.Since(first) >= cfg.Duration:
			return nil
		}
	}
}
