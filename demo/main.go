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
	"fmt"
	"log/slog"
	"os"

	"github.com/ragsync/ragsync/demo/internal/cli"
	"github.com/ragsync/ragsync/demo/internal/game"
)

func main() {
	cfg, code, ok := cli.Parse(os.Args[1:], os.Stderr)
	if !ok {
		os.Exit(code)
	}
	if !cfg.Headless {
		if !hasDisplay() {
			fmt.Fprintln(os.Stderr, noDisplayMsg)
			os.Exit(1)
		}
		os.Exit(launchWindow(os.Args[1:]))
	}
	os.Exit(cli.Run(cfg, os.Stderr, func(ctx context.Context, log *slog.Logger) error {
		return game.RunHeadless(ctx, cfg, os.Stdout, log)
	}))
}
