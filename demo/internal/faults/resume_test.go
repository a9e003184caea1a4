package faults

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragsync/ragsync/demo/internal/demotest"
)

// TestResumeAfterCrash is issue 24's resume, with real processes: two
// headless demos in a room (sharing the cache directory where the demo
// keeps its seat token, as on one machine, or each with its own, as two
// machines); one is
// killed (SIGKILL) 6 s into the match and started again with the same
// flags some time later. Within the server's RejoinGrace (30 s) the match
// resumes: the survivor counts the rival's rejoin and no disconnect, the
// returning one says it resumed, and the round, the HP and the round timer
// carry over (the survivor's figures when the rival dropped, the returning
// one's when it adopted the survivor's snapshot: the timer stands still
// meanwhile). Past the grace the match ends clearly on both sides.
func TestResumeAfterCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("resume suite skipped in -short mode (it runs real processes for about a minute)")
	}
	if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
		t.Skip("resume suite skipped: it makes network namespaces (unshare -n), which needs root")
	}
	for _, tc := range []struct {
		name     string
		victim   string
		back     time.Duration // from the kill to the restart
		duration time.Duration // -duration of every run
		resumes  bool
		oneUser  bool // both players share a cache directory (one machine, one user)
	}{
		{"offerer back after 1s", "offerer", time.Second, 20 * time.Second, true, true},
		{"answerer back after 25s", "answerer", 25 * time.Second, 45 * time.Second, true, false},
		{"answerer back after 35s", "answerer", 35 * time.Second, 45 * time.Second, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNetns(t)
			demo := demotest.Binary(t, demotest.DemoPkg, false)
			sig := demotest.Binary(t, demotest.SignalPkg, false)
			m := &match{t: t, ns: ns, demo: demo, sig: sig,
				sigArgs: []string{"-addr", "127.0.0.1:8080", "-secret", faultSecret}}
			m.startServer()
			caches := map[string]string{"offerer": t.TempDir(), "answerer": t.TempDir()}
			if tc.oneUser {
				// Each running player holds its seat file locked: the
				// restarted one finds its own, not the survivor's.
				caches["answerer"] = caches["offerer"]
			}
			peer := func(name, who string) *demotest.Proc {
				cmd := ns.command(demo, "-headless", "-json", "-signal", "http://127.0.0.1:8080",
					"-room", "RESUME", "-duration", tc.duration.String(), "-connect-timeout", "60s")
				cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+caches[who])
				return demotest.Start(t, name, cmd)
			}
			m.offerer = peer("offerer", "offerer")
			m.offerer.WaitLog(t, 0, "waiting in room")
			m.answerer = peer("answerer", "answerer")
			a, _ := m.offerer.WaitLog(t, 0, "msg=playing")
			b, _ := m.answerer.WaitLog(t, 0, "msg=playing")
			m.playingAt = later(a, b)
			victim, survivor := m.offerer, m.answerer
			if tc.victim == "answerer" {
				victim, survivor = m.answerer, m.offerer
			}
			m.sleepUntil(6 * time.Second)
			killedAt := time.Now()
			victim.Signal(t, syscall.SIGKILL)
			<-victim.Exited()
			_, i := survivor.WaitLog(t, 0, "rival dropped; waiting for it to come back")
			dropped := demotest.LogFields(survivor.Log(), i-1)
			time.Sleep(time.Until(killedAt.Add(tc.back)))
			back := peer(tc.victim+" (back)", tc.victim)
			if !tc.resumes {
				rs := back.Summary(t)
				ss := survivor.Summary(t)
				t.Logf("FIGURE resume %s: the returning one: status %q, error %q; the survivor: status %q, rejoins %d",
					tc.name, rs.Status, rs.LastErr, ss.Status, ss.RivalRejoins)
				if !strings.Contains(rs.LastErr, "seat is gone") || rs.Resumed {
					t.Errorf("the returning one, past the grace: status %q, error %q; want a clear \"seat is gone\"", rs.Status, rs.LastErr)
				}
				if survivor.Find(0, "rival lost", "did not come back") < 0 || ss.RivalRejoins != 0 {
					t.Errorf("the survivor did not end with \"did not come back\" (status %q, rejoins %d)", ss.Status, ss.RivalRejoins)
				}
				return
			}
			_, j := back.WaitLog(t, 0, "resumed the match")
			resumed := demotest.LogFields(back.Log(), j-1)
			rs, ss := back.Summary(t), survivor.Summary(t)
			timer := dropped["remaining_ms"] - resumed["remaining_ms"]
			t.Logf("FIGURE resume %s: survivor rejoins %d, returning resumed %v; at the drop round %d HP %d/%d timer %d ms, at the resume round %d HP %d/%d timer %d ms (the timer differs by %d ms, goal ≤ 1000)",
				tc.name, ss.RivalRejoins, rs.Resumed, dropped["round"], dropped["hp1"], dropped["hp2"], dropped["remaining_ms"],
				resumed["round"], resumed["hp1"], resumed["hp2"], resumed["remaining_ms"], timer)
			if ss.RivalRejoins < 1 {
				t.Errorf("the survivor counts %d rejoins: %+v", ss.RivalRejoins, ss.Timeline)
			}
			if !rs.Resumed {
				t.Errorf("the returning one does not say resumed: %+v", rs)
			}
			m.checkSurvived(ss)
			for _, k := range []string{"round", "hp1", "hp2"} {
				if dropped[k] != resumed[k] {
					t.Errorf("%s: %d when the rival dropped, %d after the resume", k, dropped[k], resumed[k])
				}
			}
			if dropped["round"] < 1 {
				t.Errorf("no round was under way when the rival dropped (round %d)", dropped["round"])
			}
			// The timer stands still while the rival is away; it runs
			// again from the survivor's first tick on the new session to
			// the returning one's adoption of the snapshot.
			if timer < 0 || timer > 1000 {
				t.Errorf("round timer %d ms when the rival dropped, %d ms after the resume: want within 1 s", dropped["remaining_ms"], resumed["remaining_ms"])
			}
		})
	}
}
