package browser

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/demo/internal/demotest"
	"github.com/ragsync/ragsync/internal/testwait"
)

// The reference peer test: testdata/refpeer.js, a plain-JavaScript peer
// written from PROTOCOL.md alone (no wasm, no Go), plays fighter 2 in
// headless Chromium against the native demo (headless, bot-driven, the
// room's creator and so the offerer): signaling, the negotiated data
// channel, the session messages, the leader's clock, the demo's state
// packets, hit reports and round messages. Its fighter has no physics: a
// script walks it to the rival and punches. The native peer must apply
// its states and take its hits, with few refusals. Like the browser test
// it runs in a network namespace of its own (loopback only), the page
// served from a loopback HTTP server of its own (another origin, which
// cmd/signal is told to accept with -origins).

// refPeerEnv tells the re-run test it runs inside the namespace; its
// value is the binaries the parent built: signal, demo.
const refPeerEnv = "RAGSYNC_REFPEER_BINS"

// refPeerPlay is how long the native peer plays once connected: with
// 10 s rounds, a 3 s countdown and a rematch 3 s after a result, the
// second round starts within it (if no KO ends the first sooner).
const refPeerPlay = 30 * time.Second

// refPeerStats is the page's own account ("refpeer {json}" every second).
type refPeerStats struct {
	Role         string  `json:"role"`
	Synced       bool    `json:"synced"`
	Sent         int     `json:"sent"`
	StatesIn     int     `json:"statesIn"`
	HitsReported int     `json:"hitsReported"`
	HitsTaken    int     `json:"hitsTaken"`
	HP           int     `json:"hp"`
	RivalHP      int     `json:"rivalHP"`
	Round        int     `json:"round"`
	TagOK        *bool   `json:"tagOK"`
	Errors       int     `json:"errors"`
	LastErr      string  `json:"lastErr"`
	Dist         float64 `json:"dist"`
}

func TestReferencePeerPlaysNative(t *testing.T) {
	if bins := os.Getenv(refPeerEnv); bins != "" {
		b := strings.Split(bins, string(os.PathListSeparator))
		if len(b) != 2 {
			t.Fatalf("%s=%q", refPeerEnv, bins)
		}
		runRefPeer(t, b[0], b[1])
		return
	}
	if testing.Short() {
		t.Skip("the reference peer test is skipped in -short mode (it runs Chromium and the demo for about 40 s)")
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skipf("chromium is not installed (make deps installs Debian's chromium): %v", err)
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is needed to give the test its own network namespace: %v", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace here (needs root or user namespaces): %v %s", err, out)
	}
	sig := demotest.Binary(t, demotest.SignalPkg, demotest.RaceOn)
	demo := demotest.Binary(t, demotest.DemoPkg, demotest.RaceOn)
	targs := []string{"-n", "--", os.Args[0], "-test.run", "^TestReferencePeerPlaysNative$", "-test.v"}
	if d, ok := testwait.Deadline(t); ok {
		targs = append(targs, "-test.timeout", time.Until(d).Round(time.Second).String())
	}
	cmd := exec.CommandContext(testwait.Context(t), "unshare", targs...)
	cmd.Env = append(os.Environ(), refPeerEnv+"="+sig+string(os.PathListSeparator)+demo)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("in its own network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("%v", err)
	}
}

// runRefPeer runs the match inside the namespace.
func runRefPeer(t *testing.T, sigBin, demoBin string) {
	ctx := testwait.Context(t)
	if out, err := exec.CommandContext(ctx, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v %s", err, out)
	}
	page := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	defer page.Close()

	sig := demotest.Start(t, "signal", exec.CommandContext(ctx, sigBin, "-addr", "127.0.0.1:0", "-origins", "127.0.0.1:*"))
	_, n := sig.WaitLog(t, 0, "server ready", "url=http://")
	lines, _ := sig.Lines(n - 1)
	base := strings.Fields(lines[0][strings.Index(lines[0], "url=http://")+4:])[0]

	const room = "REFPER" // 6 characters of the room alphabet
	native := demotest.Start(t, "native", exec.CommandContext(ctx, demoBin, "-headless", "-json", "-room", room,
		"-signal", base, "-duration", refPeerPlay.String(), "-round", "10s", "-connect-timeout", "2m"))
	native.WaitLog(t, 0, "waiting in room") // it creates the room, so it offers: the page joins it

	cdp, err := openChromium(t, t.TempDir(), page.URL+"/refpeer.html?room="+room+"&signal=ws"+strings.TrimPrefix(base, "http"), false)
	if err != nil {
		t.Fatal(err)
	}
	var last refPeerStats
	var shown, stats int
follow:
	for {
		select {
		case l, ok := <-cdp.console:
			if !ok {
				t.Fatalf("the browser went away; its log:\n%s", cdp.log())
			}
			if s, ok := strings.CutPrefix(l, "refpeer {"); ok {
				if err := json.Unmarshal([]byte("{"+s), &last); err != nil {
					t.Errorf("page stats %q: %v", l, err)
				}
				if stats++; stats%5 == 0 {
					t.Logf("page: %s", l)
				}
				continue
			}
			if strings.HasPrefix(l, "refpeer hit") && shown < 3 || !strings.HasPrefix(l, "refpeer hit") {
				shown += b2i(strings.HasPrefix(l, "refpeer hit"))
				t.Logf("page: %s", l)
			}
		case <-native.Exited():
			break follow
		case <-ctx.Done():
			t.Fatalf("timed out; page log:\n%s", cdp.log())
		}
	}
	nat := native.Summary(t)
	for _, l := range strings.Split(native.Log(), "\n") {
		if strings.Contains(l, "connected") || strings.Contains(l, "round") || strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			t.Logf("native: %s", l)
		}
	}
	t.Logf("FIGURE refpeer: native played %.1f s on %s; applied %d of the page's states, took %d hits (%d damage), dealt %d, rejected %d packets (last error %q); the page sent %d states, reported %d hits, took %d, HP %d vs the native's %d, %d errors (%q); native rounds %q, now in round %d",
		nat.Seconds, nat.Transport, nat.StatesApplied, nat.HitsTaken, nat.Damage, nat.HitsDealt, nat.Rejected, nat.LastErr,
		last.Sent, last.HitsReported, last.HitsTaken, last.HP, last.RivalHP, last.Errors, last.LastErr, nat.Rounds, nat.Round)
	if last.Role != "answerer" || !last.Synced || last.TagOK == nil || !*last.TagOK {
		t.Errorf("the page: role %q, clock synced %v, configuration tag matched %v", last.Role, last.Synced, last.TagOK)
	}
	if nat.StatesApplied < 300 {
		t.Errorf("the native applied %d of the page's states, want hundreds", nat.StatesApplied)
	}
	if nat.HitsTaken < 1 {
		t.Errorf("none of the page's %d reported hits landed on the native", last.HitsReported)
	}
	if nat.Rejected*20 > nat.StatesApplied {
		t.Errorf("the native refused %d packets (applied %d states): %s", nat.Rejected, nat.StatesApplied, nat.LastErr)
	}
	if nat.Round < 2 || len(nat.Rounds) < 1 {
		t.Errorf("the native reached round %d with results %q: the page's round messages did not end a round", nat.Round, nat.Rounds)
	}
	if last.Errors > 0 {
		t.Errorf("the page logged %d errors, the last %q", last.Errors, last.LastErr)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
