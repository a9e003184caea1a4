package cli

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/internal/leaktest"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		ok     bool
		stderr string // a part of what is written to stderr; "" for nothing
	}{
		{"defaults", nil, 0, true, ""},
		{"flags", []string{"-headless", "-bot", "-duration", "5s"}, 0, true, ""},
		{"help", []string{"-help"}, 0, false, "Flags:"},
		{"unknown flag", []string{"-nope"}, 2, false, "demo: flag provided but not defined: -nope"},
		{"bad value", []string{"-loss", "2"}, 2, false, "demo: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			cfg, code, ok := Parse(tc.args, &stderr)
			if code != tc.code || ok != tc.ok {
				t.Errorf("Parse(%q) = code %d, ok %v; want %d, %v", tc.args, code, ok, tc.code, tc.ok)
			}
			if tc.stderr == "" && stderr.Len() != 0 || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.stderr)
			}
			if tc.name == "flags" && (!cfg.Headless || cfg.Bot == game.BotOff || cfg.Duration.Seconds() != 5) {
				t.Errorf("config %+v does not have the flags' values", cfg)
			}
		})
	}
}

func TestRunExitCodes(t *testing.T) {
	leaktest.Check(t)
	for _, tc := range []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{"success", nil, 0, ""},
		{"failure", errors.New("no rival came"), 1, "demo: no rival came\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			code := Run(game.Config{}, &stderr, func(ctx context.Context, log *slog.Logger) error {
				if ctx.Err() != nil || log == nil {
					t.Errorf("fn got a done context (%v) or no logger", ctx.Err())
				}
				return tc.err
			})
			if code != tc.code || stderr.String() != tc.stderr {
				t.Errorf("Run = %d, stderr %q; want %d, %q", code, stderr.String(), tc.code, tc.stderr)
			}
		})
	}
}

func TestRunCancelsOnSIGTERM(t *testing.T) {
	leaktest.Check(t)
	var stderr strings.Builder
	code := Run(game.Config{}, &stderr, func(ctx context.Context, _ *slog.Logger) error {
		// Run has registered for the signal before calling fn, so the
		// signal cancels ctx rather than ending the test binary.
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
	if code != 0 || stderr.Len() != 0 {
		t.Errorf("Run = %d, stderr %q; want 0 and nothing", code, stderr.String())
	}
}
