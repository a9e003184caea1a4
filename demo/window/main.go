// Command window is the ragsync demo's Ebiten window. Users run it through
// ./demo (which handles -headless itself, since a program that links Ebiten
// cannot even start without a display); it takes the same flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/ragsync/ragsync/demo/internal/cli"
	"github.com/ragsync/ragsync/demo/internal/ui"
)

func main() {
	cfg, code, ok := cli.Parse(os.Args[1:], os.Stderr)
	if !ok {
		os.Exit(code)
	}
	os.Exit(cli.Run(cfg, os.Stderr, func(ctx context.Context, log *slog.Logger) error {
		err := ui.Run(ctx, cfg, log)
		if errors.Is(err, ui.ErrNoDisplay) {
			return fmt.Errorf("%w.\n%s", err, cli.NoDisplayHint)
		}
		return err
	}))
}
