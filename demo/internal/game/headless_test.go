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

// TestSummaryNoRival: a player that never paired prints "no rival" and its
// status, not a line of empty link figures.
func TestSummaryNoRival(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Summary
		want string
	}{
		{"waiting", Summary{Peer: "bot-1", Status: StatusWaiting.String()}, "bot-1: no rival (waiting for rival)"},
		{"impaired", Summary{Peer: "p", Status: StatusFailed.String(), Impair: "lag 100ms"}, "p: no rival (failed); impairment lag 100ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
		})
	}
	paired := Summary{Peer: "p", Role: "offerer", Status: StatusConnected.String()}.String()
	if !strings.Contains(paired, "rtt") {
		t.Fatalf("a paired summary lost its link figures: %q", paired)
	}
}
