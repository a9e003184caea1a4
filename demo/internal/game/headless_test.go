package game

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
)

// TestRunHeadlessLeavesNoGoroutines: a headless bot match, with its
// embedded signaling server, sessions and players, plays and leaves
// nothing running once it returns. (The demo's report prints goroutine
// counts as a diagnostic only; this is where they are checked.)
func TestRunHeadlessLeavesNoGoroutines(t *testing.T) {
	leaktest.Check(t)
	args := []string{"-headless", "-bot", "-listen", "127.0.0.1:0", "-duration", "1s"}
	if d, ok := testwait.Deadline(t); ok {
		args = append(args, "-connect-timeout", max(time.Until(d), time.Second).Round(time.Second).String())
	}
	cfg, err := ParseFlags(args, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := RunHeadless(context.Background(), cfg, &out, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("headless run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "ragsync demo, headless:") {
		t.Errorf("no report:\n%s", out.String())
	}
}
