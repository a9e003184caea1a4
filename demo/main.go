// Command demo is the ragsync demo: two players, each with a ragdoll fighter
// in a shared Box2D arena, paired through a signaling server and synced peer
// to peer (see package ragsync). Run it twice on one machine, or on two
// machines with -signal; -bot fights a local bot peer; -headless plays bot
// against bot without a window and prints a summary. See -help.
//
// This program does not link Ebiten: Ebiten's initialisation needs a
// display, and -headless must run anywhere (CI has none). The window is the
// sibling program demo/window, which this one starts (see launch.go).
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
	if !cfg.Headless {
		if !hasDisplay() {
			fmt.Fprintln(os.Stderr, noDisplayMsg)
			os.Exit(1)
		}
		os.Exit(launchWindow(os.Args[1:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = game.RunHeadless(ctx, cfg, os.Stdout, game.NewLogger(os.Stderr, cfg.Verbose))
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
