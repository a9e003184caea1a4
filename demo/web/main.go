//go:build js

// Command web is the ragsync demo in a browser (GOOS=js GOARCH=wasm): the
// same game as the window, drawn by Ebiten in a canvas, paired through
// the signaling server that served the page, with WebRTC from the
// browser and the relay over a WebSocket. The page (package webdist)
// passes the query's parameters as the demo's flags: ?room=CODE,
// ?room=new, ?bot=1, ?autoplay=1, ?hud=1 work as -room, -bot, -autoplay
// and -hud do, and ?spectate=CODE watches room CODE's match (-spectate). Logs, and a JSON summary of each player every 5 s, go to
// the browser's console.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ragsync/ragsync/demo/internal/cli"
	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/demo/internal/ui"
)

func main() {
	cfg, code, ok := cli.Parse(os.Args[1:], os.Stderr)
	if !ok {
		os.Exit(code)
	}
	switch {
	case !cfg.SignalSet:
		fmt.Fprintln(os.Stderr, "demo: no signaling server: the page passes -signal (its origin)")
		os.Exit(2)
	case cfg.Headless, cfg.ListenSet:
		fmt.Fprintln(os.Stderr, "demo: a browser cannot run -headless or an embedded server (-listen)")
		os.Exit(2)
	}
	cfg.LogSummaries = true
	cfg.TrustSignal = true
	// A page has no signals: it plays until the tab closes.
	if err := ui.Run(context.Background(), cfg, game.NewLogger(os.Stderr, cfg.Verbose)); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
