// Package cli is the start and the end that the demo's programs (demo,
// demo/window) share: parsing the demo's flags, running with a context
// that SIGINT and SIGTERM cancel, and turning the outcome into an exit code
// and a message on stderr.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/ragsync/ragsync/demo/internal/game"
)

// NoDisplayHint is what the demo's programs suggest when there is no
// display to open the window on.
const NoDisplayHint = `  To play without a window (bot against bot, with a summary at the end):
      go run ./demo -headless -bot
  To run the window on a virtual display:
      xvfb-run -a go run ./demo -bot`

// Parse parses a program's arguments as the demo's flags (game.ParseFlags).
// When the program must stop there it returns ok false and the code to exit
// with: 0 after -help (the flag package printed the usage), 2 for a bad
// flag, reported on stderr as "demo: " and the error.
func Parse(args []string, stderr io.Writer) (cfg game.Config, code int, ok bool) {
	cfg, err := game.ParseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return cfg, 0, false
	}
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return cfg, 2, false
	}
	return cfg, 0, true
}

// Run runs fn with a context that SIGINT or SIGTERM cancels and a logger on
// stderr at cfg's verbosity (game.NewLogger), and returns the code to exit
// with: 0, or 1 if fn failed, its error reported on stderr as "demo: " and
// the error.
func Run(cfg game.Config, stderr io.Writer, fn func(ctx context.Context, log *slog.Logger) error) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := fn(ctx, game.NewLogger(stderr, cfg.Verbose))
	stop()
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	return 0
}
