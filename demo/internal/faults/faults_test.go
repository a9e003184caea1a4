package faults

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragsync/ragsync/demo/internal/demotest"
	"github.com/ragsync/ragsync/demo/internal/game"
)

// The fault suite: what real networks and real computers do to a match,
// done to real processes. Each fault runs in a network namespace of its own
// (loopback only, made by the test with unshare) holding a signaling
// server (cmd/signal) and two headless demo peers in a private room, so
// the faults run in parallel without touching each other, and iptables
// can block UDP in one of them. The figures come from the demos' -json
// summaries (transport switches, the session's event timeline with
// wall-clock times) and the test's own clock for the faults it makes.
//
// The binaries are built once, without -race (the suite is about the
// session's behaviour; 16 race-instrumented peers would load a small
// machine more than the faults do).

func TestMain(m *testing.M) {
	code := m.Run()
	demotest.Cleanup()
	os.Exit(code)
}

// netns is a network namespace the test made: a process (sleep) holds it,
// and commands run in it through nsenter.
type netns struct {
	t      *testing.T
	holder *exec.Cmd
}

// newNetns makes a loopback-only network namespace for the test, or skips
// the test, saying why, if it cannot.
func newNetns(t *testing.T) *netns {
	t.Helper()
	for _, tool := range []string{"unshare", "nsenter", "ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("fault suite skipped: %s not found (it needs unshare, nsenter, ip and iptables: make deps)", tool)
		}
	}
	holder := exec.Command("unshare", "-n", "sleep", "3600")
	if err := holder.Start(); err != nil {
		t.Skipf("fault suite skipped: cannot make a network namespace: %v", err)
	}
	n := &netns{t: t, holder: holder}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	// unshare execs sleep once the namespace exists; until then the
	// holder is still in ours.
	own, _ := os.Readlink("/proc/self/ns/net")
	for i := 0; ; i++ {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid))
		if err == nil && ns != own {
			exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", holder.Process.Pid))
			if strings.HasSuffix(exe, "sleep") {
				break
			}
		}
		if i == 500 {
			t.Skipf("fault suite skipped: cannot make a network namespace (unshare -n needs root or user namespaces)")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out, err := n.run("ip", "link", "set", "lo", "up"); err != nil {
		t.Skipf("fault suite skipped: cannot bring up loopback in the namespace: %v: %s", err, out)
	}
	if out, err := n.run("iptables", "-S"); err != nil {
		t.Skipf("fault suite skipped: iptables does not work in the namespace: %v: %s", err, out)
	}
	return n
}

// command returns a command that runs name in the namespace (nsenter execs
// it: the process is the command's).
func (n *netns) command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"-t", fmt.Sprint(n.holder.Process.Pid), "-n", "--", name}, args...)...)
}

func (n *netns) run(name string, args ...string) ([]byte, error) {
	return n.command(name, args...).CombinedOutput()
}

// blockUDP drops every UDP datagram in the namespace (on), or stops
// dropping them.
func (n *netns) blockUDP(on bool) {
	n.t.Helper()
	op := "-A"
	if !on {
		op = "-D"
	}
	if out, err := n.run("iptables", op, "OUTPUT", "-p", "udp", "-j", "DROP"); err != nil {
		n.t.Fatalf("iptables %s: %v: %s", op, err, out)
	}
}

// match is one fault's world: a namespace, a signaling server, two peers.
type match struct {
	t         *testing.T
	ns        *netns
	demo, sig string
	sigArgs   []string
	server    *demotest.Proc
	offerer   *demotest.Proc
	answerer  *demotest.Proc
	playingAt time.Time // when both peers were playing
}

// faultSecret is the signaling server's relay-token secret (kept across
// its restarts).
const faultSecret = "ragsync-fault-suite-secret-0123456789"

// newMatch starts a signaling server and two demo peers playing for
// duration in a namespace of their own; before, if set, runs in the
// namespace first (e.g. blocking UDP). It returns once both play.
func newMatch(t *testing.T, duration time.Duration, before func(*netns)) *match {
	t.Helper()
	ns := newNetns(t) // first: it skips the test if it cannot, before a build
	demo := demotest.Binary(t, demotest.DemoPkg, false)
	sig := demotest.Binary(t, demotest.SignalPkg, false)
	m := &match{t: t, ns: ns, demo: demo, sig: sig}
	if before != nil {
		before(m.ns)
	}
	// A graceful stop waits 2 s for relay streams (10 s by default).
	m.sigArgs = []string{"-addr", "127.0.0.1:8080", "-secret", faultSecret, "-shutdown-timeout", "2s"}
	m.startServer()
	peer := func(name string) *demotest.Proc {
		return demotest.Start(t, name, m.ns.command(demo, "-headless", "-json", "-signal", "http://127.0.0.1:8080",
			"-room", "FAULTS", "-duration", duration.String(), "-connect-timeout", "60s"))
	}
	// The first in the room is the offerer.
	m.offerer = peer("offerer")
	m.offerer.WaitLog(t, 0, "waiting in room")
	m.answerer = peer("answerer")
	a, _ := m.offerer.WaitLog(t, 0, "msg=playing")
	b, _ := m.answerer.WaitLog(t, 0, "msg=playing")
	m.playingAt = later(a, b)
	return m
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// startServer starts (or restarts) the signaling server and returns when
// it is ready.
func (m *match) startServer() time.Time {
	m.server = demotest.Start(m.t, "signal", m.ns.command(m.sig, m.sigArgs...))
	at, _ := m.server.WaitLog(m.t, 0, "signaling server ready")
	return at
}

// results waits for both peers and returns their summaries, offerer first.
func (m *match) results() (game.Summary, game.Summary) {
	return m.offerer.Summary(m.t), m.answerer.Summary(m.t)
}

// sleepUntil sleeps until d after both peers started playing.
func (m *match) sleepUntil(d time.Duration) { time.Sleep(time.Until(m.playingAt.Add(d))) }

// events returns the timeline events of kind (and transport, if not "")
// at or after from.
func events(s game.Summary, kind, transport string, from time.Time) []game.TimelineEvent {
	var r []game.TimelineEvent
	for _, e := range s.Timeline {
		if e.Kind == kind && (transport == "" || e.Transport == transport) && e.UnixMs >= from.UnixMilli() {
			r = append(r, e)
		}
	}
	return r
}

// checkSurvived fails the test if a peer saw the rival disconnect for any
// reason but the rival closing the session at the end of its run.
func (m *match) checkSurvived(sums ...game.Summary) {
	m.t.Helper()
	for _, s := range sums {
		for _, e := range events(s, "disconnected", "", time.Time{}) {
			if e.Reason != "the peer closed the session" {
				m.t.Errorf("%s: disconnected at %v (%s): %+v", s.Role, time.UnixMilli(e.UnixMs).Format(time.StampMilli), e.Reason, s.Timeline)
			}
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// TestFaultSuite runs the faults of issue 10 in parallel, each on a match
// of its own, and checks each against its goal.
func TestFaultSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("fault suite skipped in -short mode (it runs real processes for about a minute)")
	}
	if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
		t.Skip("fault suite skipped: it makes network namespaces (unshare -n), which needs root")
	}

	// pause either peer for 2 s: ≤ 2 transport switches on each side.
	for _, victim := range []string{"offerer", "answerer"} {
		t.Run("pause "+victim+" 2s", func(t *testing.T) {
			t.Parallel()
			m := newMatch(t, 10*time.Second, nil)
			p := m.offerer
			if victim == "answerer" {
				p = m.answerer
			}
			m.sleepUntil(3 * time.Second)
			p.Signal(t, syscall.SIGSTOP)
			time.Sleep(2 * time.Second)
			p.Signal(t, syscall.SIGCONT)
			o, a := m.results()
			t.Logf("FIGURE pause %s 2 s: switches offerer %d, answerer %d; events merged %d/%d; offerer's timeline %+v",
				victim, o.Switches, a.Switches, o.EventsMerged, a.EventsMerged, o.Timeline)
			for _, s := range []game.Summary{o, a} {
				if s.Switches > 2 {
					t.Errorf("%s: %d transport switches, want at most 2: %+v", s.Role, s.Switches, s.Timeline)
				}
			}
			m.checkSurvived(o, a)
		})
	}

	// 0.5 s stalls of a peer's own process (SIGSTOP/SIGCONT: the whole
	// process stands still, as in a GC pause or on a busy laptop), every
	// 5 s for 60 s: 0 switches.
	t.Run("offerer stalls 0.5s every 5s for 60s", func(t *testing.T) {
		t.Parallel()
		m := newMatch(t, 64*time.Second, nil)
		stalls := 0
		for at := 2 * time.Second; at < 62*time.Second; at += 5 * time.Second {
			m.sleepUntil(at)
			m.offerer.Signal(t, syscall.SIGSTOP)
			time.Sleep(500 * time.Millisecond)
			m.offerer.Signal(t, syscall.SIGCONT)
			stalls++
		}
		o, a := m.results()
		t.Logf("FIGURE %d stalls of 0.5 s: switches offerer %d, answerer %d", stalls, o.Switches, a.Switches)
		for _, s := range []game.Summary{o, a} {
			if s.Switches != 0 {
				t.Errorf("%s: %d transport switches, want 0: %+v", s.Role, s.Switches, s.Timeline)
			}
		}
		m.checkSurvived(o, a)
	})

	// kill a peer: the survivor reports the rival away (its session
	// ended, the rival may come back: see TestResumeAfterCrash) ≤ 1 s
	// after the kill.
	for _, victim := range []string{"offerer", "answerer"} {
		t.Run("kill "+victim, func(t *testing.T) {
			t.Parallel()
			m := newMatch(t, 30*time.Second, nil)
			p, survivor := m.answerer, m.offerer
			if victim == "offerer" {
				p, survivor = m.offerer, m.answerer
			}
			m.sleepUntil(3 * time.Second)
			killedAt := time.Now()
			p.Signal(t, syscall.SIGKILL)
			s := survivor.Summary(t)
			away := events(s, "rival-away", "", killedAt)
			if len(away) == 0 {
				t.Fatalf("the survivor did not report the rival away: %+v", s.Timeline)
			}
			took := time.UnixMilli(away[0].UnixMs).Sub(killedAt)
			t.Logf("FIGURE kill %s: the %s reports the rival away %s after the kill (goal ≤ 1 s): %+v", victim, s.Role, ms(took), away)
			// The goal is a wall-clock window, which a loaded machine can
			// stretch, so the test checks the mechanism instead: the
			// session ended on the server's word that the peer dropped
			// (the fast goodbye), not on DisconnectAfter's silence. The
			// window itself is asserted in virtual time by
			// TestSessionPeerKilled.
			if !strings.Contains(away[0].Reason, "dropped") {
				t.Errorf("away without the fast goodbye: %+v", away)
			}
		})
	}

	// restart the signaling server mid-match: the match survives, and the
	// relay is back ≤ 2 s after the server answers again. With WebRTC the
	// server stops gracefully (SIGTERM); relay-only (UDP blocked in the
	// namespace from the start) it crashes (SIGKILL).
	for _, tc := range []struct {
		name      string
		relayOnly bool
		sig       syscall.Signal
	}{
		{"webrtc, graceful stop", false, syscall.SIGTERM},
		{"relay only, crash", true, syscall.SIGKILL},
	} {
		t.Run("restart signaling "+tc.name, func(t *testing.T) {
			t.Parallel()
			var before func(*netns)
			if tc.relayOnly {
				before = func(n *netns) { n.blockUDP(true) }
			}
			m := newMatch(t, 14*time.Second, before)
			m.sleepUntil(3 * time.Second)
			stopAt := time.Now()
			m.server.Signal(t, tc.sig)
			<-m.server.Exited()
			time.Sleep(time.Second) // down for a second
			readyAt := m.startServer()
			o, a := m.results()
			var back time.Duration
			for _, s := range []game.Summary{o, a} {
				up := events(s, "transport-up", "tcp", readyAt)
				if len(up) == 0 {
					t.Errorf("%s: the relay did not come back: %+v", s.Role, s.Timeline)
					continue
				}
				back = max(back, time.UnixMilli(up[0].UnixMs).Sub(readyAt))
				if s.Transport != map[bool]string{false: "webrtc", true: "tcp"}[tc.relayOnly] {
					t.Errorf("%s: on %s at the end", s.Role, s.Transport)
				}
			}
			// The 2 s goal is logged, not asserted (a wall-clock window);
			// TestSignalingServerRestart asserts it in virtual time.
			t.Logf("FIGURE restart signaling (%s): down %s; relay back %s after the server answered again (goal ≤ 2 s); reconnects %d/%d; switches %d/%d",
				tc.name, ms(readyAt.Sub(stopAt)), ms(back), o.SignalingReconnects, a.SignalingReconnects, o.Switches, a.Switches)
			m.checkSurvived(o, a)
		})
	}

	// block UDP for 60 s, then unblock: on TCP during the outage, back on
	// WebRTC ≤ 3 s after the unblock.
	t.Run("block UDP 60s", func(t *testing.T) {
		t.Parallel()
		m := newMatch(t, 70*time.Second, nil)
		m.sleepUntil(3 * time.Second)
		blockAt := time.Now()
		m.ns.blockUDP(true)
		time.Sleep(60 * time.Second)
		unblockAt := time.Now()
		m.ns.blockUDP(false)
		o, a := m.results()
		for _, s := range []game.Summary{o, a} {
			ch := events(s, "transport-changed", "", blockAt)
			if len(ch) < 2 || ch[0].Transport != "tcp" || ch[1].Transport != "webrtc" || ch[1].UnixMs < unblockAt.UnixMilli() {
				t.Errorf("%s: transport changes after the block %+v, want to tcp, then back to webrtc after the unblock", s.Role, ch)
				continue
			}
			onTCP := time.UnixMilli(ch[0].UnixMs).Sub(blockAt)
			back := time.UnixMilli(ch[1].UnixMs).Sub(unblockAt)
			// The 3 s goal is logged, not asserted (a wall-clock window);
			// TestWebRTCRecoversAfterLongOutage asserts it in virtual time.
			t.Logf("FIGURE block UDP 60 s: %s on tcp %s after the block, back on webrtc %s after the unblock (goal ≤ 3 s); %d switches, %d new PeerConnections",
				s.Role, ms(onTCP), ms(back), s.Switches, s.WebRTCRenewals)
			if s.Transport != "webrtc" {
				t.Errorf("%s: on %s at the end", s.Role, s.Transport)
			}
		}
		m.checkSurvived(o, a)
	})
}
