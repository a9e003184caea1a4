package faults

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/ragsync/ragsync/demo/internal/demotest"
	"github.com/ragsync/ragsync/demo/internal/game"
)

// The edges of the envelope (issue 21), with real processes: a relay-only
// match through a long signaling outage, and a busy host. (Pairing on a
// really bad link is demo/internal/badlink's.)

// TestRelayOnlyThroughServerOutage: a relay-only match (UDP dropped by
// iptables) whose signaling server crashes and stays down for 15 s, then
// comes back: both peers stay interrupted, not disconnected (the session
// waits up to the server's rejoin grace, 30 s), and resume on the relay.
func TestRelayOnlyThroughServerOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-process test; skipped under -short")
	}
	if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare for a namespace")
	}
	m := newMatch(t, 30*time.Second, func(n *netns) { n.blockUDP(true) })
	m.sleepUntil(3 * time.Second)
	stopAt := time.Now()
	m.server.Signal(t, syscall.SIGKILL)
	<-m.server.Exited()
	time.Sleep(15 * time.Second)
	readyAt := m.startServer()
	o, a := m.results()
	for _, s := range []game.Summary{o, a} {
		if len(events(s, "interrupted", "", stopAt)) == 0 {
			t.Errorf("%s: never interrupted during a 15 s outage of a relay-only match: %+v", s.Role, s.Timeline)
		}
		up := events(s, "transport-up", "tcp", readyAt)
		if len(up) == 0 {
			t.Errorf("%s: the relay did not come back: %+v", s.Role, s.Timeline)
			continue
		}
		t.Logf("FIGURE relay-only, signaling down %s: %s back on the relay %s after the server answered; reconnects %d; switches %d",
			ms(readyAt.Sub(stopAt)), s.Role, ms(time.UnixMilli(up[0].UnixMs).Sub(readyAt)), s.SignalingReconnects, s.Switches)
		if s.Transport != "tcp" {
			t.Errorf("%s: on %s at the end", s.Role, s.Transport)
		}
	}
	m.checkSurvived(o, a)
}

// TestBusyHostNoFlap: two peers on one machine with both cores kept busy
// by two spinning processes, no network fault, a 5-minute match: at most
// one transport switch on each side (FIGURE line).
func TestBusyHostNoFlap(t *testing.T) {
	if testing.Short() {
		t.Skip("a 5-minute real-process test; skipped under -short")
	}
	if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare for a namespace")
	}
	m := newMatch(t, 5*time.Minute, nil)
	for i := range 2 {
		demotest.Start(t, fmt.Sprintf("busy %d", i), exec.Command("sh", "-c", "while :; do :; done"))
	}
	o, a := m.results()
	for _, s := range []game.Summary{o, a} {
		t.Logf("FIGURE busy host, 5-minute match, two busy loops: %s made %d switches (goal ≤ 1), %d interruptions",
			s.Role, s.Switches, len(events(s, "interrupted", "", time.Time{})))
		if s.Switches > 1 {
			t.Errorf("%s: %d transport switches in 5 minutes on a busy host: %+v", s.Role, s.Switches, s.Timeline)
		}
	}
	m.checkSurvived(o, a)
}
