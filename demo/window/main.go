// Command window is the ragsync demo's Ebiten window. Users run it through
// ./demo (which handles -headless itself, since a program that links Ebiten
// cannot even start without a display); it takes the same flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/demo/internal/ui"
)

func main() {
	cfg, err := game.ParseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = ui.Run(ctx, cfg, game.NewLogger(os.Stderr, cfg.Verbose))
	if errors.Is(err, ui.ErrNoDisplay) {
		fmt.Fprintf(os.Stderr, `demo: %v.
  To play without a window (bot against bot, with a summary at the end):
      go run ./demo -headless -bot
  To run the window on a virtual display:
      xvfb-run -a go run ./demo -bot
`, err)
		os.Exit(1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
