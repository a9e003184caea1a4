package browser

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragsync/ragsync/demo/internal/demotest"
	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/demo/webdist"
	"github.com/ragsync/ragsync/internal/testwait"
)

// The browser test: headless Chromium (Debian's chromium, installed by
// make deps) loads the web demo from cmd/signal and plays, autoplayed by
// the bot, against the native demo run headless, through real signaling
// and WebRTC; then again with UDP dropped by iptables, so WebRTC cannot
// connect and the browser plays over the WebSocket relay (the native
// peer over the raw one); and once more with the page reloaded mid-match,
// which takes its seat back (the token kept in sessionStorage) and
// resumes the match; and once more with the page sent to the background
// (another tab activated, the browser throttling it as it does any
// hidden tab) for 10 s while it waits for a rival, whom it must pair with
// all the same, and for 10 s mid-match: the native rival must see "the
// rival's tab is in the background", not a fault, and the match goes on. Each case runs in a network namespace of its
// own, made by re-running this test under `unshare -n` (loopback only;
// the iptables rules die with it), with every process inside and the
// DevTools protocol over a pipe (--remote-debugging-pipe), not a port.
// The browser reports through its console: the demo's JSON summaries.

// browserNSEnv tells the re-run test which case it runs: "open",
// "noudp", "reload" or "background".
const browserNSEnv = "RAGSYNC_BROWSER_CASE"

// browserBinsEnv passes the binaries the parent built: signal, demo.
const browserBinsEnv = "RAGSYNC_BROWSER_BINS"

// browserPlay is how long both sides must play (the issue asks for at
// least 20 s).
const browserPlay = 20 * time.Second

// reloadAfter is how long the browser plays before the reload case
// reloads its page; reloadPlay how long it must play after it resumed.
const (
	reloadAfter = 8 * time.Second
	reloadPlay  = 10 * time.Second
)

// The background case: the page is hidden for bgFor while it waits for
// the native rival (which starts meanwhile), then plays bgAfter, is
// hidden for bgFor again, then must play bgPlay more.
const (
	bgAfter = 8 * time.Second
	bgFor   = 10 * time.Second
	bgPlay  = 8 * time.Second
)

func TestMain(m *testing.M) {
	code := m.Run()
	demotest.Cleanup()
	os.Exit(code)
}

func TestBrowserPlaysNative(t *testing.T) {
	if c := os.Getenv(browserNSEnv); c != "" {
		bins := strings.Split(os.Getenv(browserBinsEnv), string(os.PathListSeparator))
		if len(bins) != 2 {
			t.Fatalf("%s=%q", browserBinsEnv, os.Getenv(browserBinsEnv))
		}
		runBrowserCase(t, c, bins[0], bins[1])
		return
	}
	if testing.Short() {
		t.Skip("the browser test is skipped in -short mode (it runs Chromium and the demo for about a minute)")
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skipf("chromium is not installed (make deps installs Debian's chromium): %v", err)
	}
	if !webdist.Available() {
		t.Skip("the web build is missing: run make web (make test does)")
	}
	for _, tool := range []string{"unshare", "ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is needed to give the test its own network namespace: %v", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace here (needs root or user namespaces): %v %s", err, out)
	}
	t.Logf("wasm download: %d bytes (gzip), served with Content-Encoding: gzip", webdist.WasmSize())
	sig := demotest.Binary(t, demotest.SignalPkg, demotest.RaceOn)
	demo := demotest.Binary(t, demotest.DemoPkg, demotest.RaceOn)
	for _, c := range []string{"open", "noudp", "reload", "background"} {
		t.Run(c, func(t *testing.T) {
			targs := []string{"-n", "--", os.Args[0], "-test.run", "^TestBrowserPlaysNative$", "-test.v"}
			if d, ok := testwait.Deadline(t); ok {
				targs = append(targs, "-test.timeout", time.Until(d).Round(time.Second).String())
			}
			cmd := exec.CommandContext(testwait.Context(t), "unshare", targs...)
			cmd.Env = append(os.Environ(), browserNSEnv+"="+c, browserBinsEnv+"="+sig+string(os.PathListSeparator)+demo)
			cmd.WaitDelay = 10 * time.Second
			out, err := cmd.CombinedOutput()
			t.Logf("in its own network namespace:\n%s", out)
			if err != nil {
				t.Fatalf("%v", err)
			}
		})
	}
}

// runBrowserCase runs case c inside the namespace.
func runBrowserCase(t *testing.T, c, sigBin, demoBin string) {
	noUDP, reload, bg := c == "noudp", c == "reload", c == "background"
	ctx := testwait.Context(t)
	run := func(name string, args ...string) {
		if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v %s", name, strings.Join(args, " "), err, out)
		}
	}
	run("ip", "link", "set", "lo", "up")
	if noUDP {
		run("iptables", "-A", "OUTPUT", "-p", "udp", "-j", "DROP")
		run("iptables", "-A", "INPUT", "-p", "udp", "-j", "DROP")
	}
	dir := t.TempDir()

	// The signaling server, serving the web demo.
	sig := exec.CommandContext(ctx, sigBin, "-addr", "127.0.0.1:0")
	sigErr, err := sig.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sig.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sig.Process.Signal(os.Interrupt); sig.Wait() })
	base := ""
	sc := bufio.NewScanner(sigErr)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "url=http://"); i >= 0 && strings.Contains(line, "server ready") {
			base = strings.Fields(line[i+4:])[0]
			if !strings.Contains(line, "web_demo=true") {
				t.Fatalf("cmd/signal does not serve the web demo: %s", line)
			}
			break
		}
	}
	if base == "" {
		t.Fatal("cmd/signal did not say where it listens")
	}
	go io.Copy(io.Discard, sigErr)

	// The browser, driven over a pipe.
	page := base + "/?autoplay=1&hud=1"
	cdp, err := openChromium(t, dir, page, bg)
	if err != nil {
		t.Fatal(err)
	}
	navAt := time.Now()

	// The native peer: the demo, headless, quick match.
	var nOut, nErr bytes.Buffer
	play := browserPlay + 10*time.Second
	if reload {
		// The reload, the wasm's second start and the resume fit in
		// the rival's 30 s of grace.
		play = reloadAfter + 30*time.Second + reloadPlay
	}
	var hiddenAt, shownAt time.Time
	var showC <-chan time.Time
	hides := 0 // bg: times the page was hidden
	hide := func() {
		if err := cdp.hide(); err != nil {
			t.Fatalf("hiding the page: %v", err)
		}
		hides++
		hiddenAt, showC = time.Now(), time.After(bgFor)
	}
	if bg {
		play = 2*bgFor + bgAfter + bgPlay + 15*time.Second
		// Hidden while it waits for a rival: the native starts then.
		for line := range cdp.console {
			if strings.Contains(line, "looking for a rival") {
				hide()
				t.Logf("page sent to the background while it waits for a rival (visibility %q)", cdp.visibility())
				break
			}
		}
		if hides == 0 {
			t.Fatalf("the page never looked for a rival; its log:\n%s", cdp.log())
		}
	}
	native := exec.CommandContext(ctx, demoBin, "-headless", "-signal", base, "-duration", play.String(), "-json", "-connect-timeout", "2m")
	native.Stdout, native.Stderr = &nOut, &nErr
	native.WaitDelay = 10 * time.Second
	if err := native.Start(); err != nil {
		t.Fatal(err)
	}
	nativeDone := make(chan error, 1)
	go func() { nativeDone <- native.Wait() }()

	// Follow the browser's summaries; screenshot mid-fight.
	var last, before game.Summary // before: the last summary before the reload
	var shots [][]byte
	var reloadedAt time.Time
	var hidden game.Summary // bg: the browser's last summary before it was hidden mid-match
	loaded := ""
	played := func() bool {
		switch {
		case bg:
			return hides == 2 && showC == nil && time.Since(shownAt) >= bgPlay && last.Ticks > hidden.Ticks
		case reload:
			return !reloadedAt.IsZero() && last.Seconds >= reloadPlay.Seconds()
		}
		return last.Seconds >= browserPlay.Seconds()
	}
	for !played() {
		select {
		case <-showC:
			showC = nil
			if err := cdp.show(); err != nil {
				t.Fatalf("showing the page again: %v", err)
			}
			shownAt = time.Now()
			t.Logf("page shown again after %.1f s in the background (visibility %q)", shownAt.Sub(hiddenAt).Seconds(), cdp.visibility())
			continue
		case line, ok := <-cdp.console:
			if !ok {
				t.Fatalf("the browser went away; its log:\n%s", cdp.log())
			}
			if strings.Contains(line, "wasm loaded") && loaded == "" {
				loaded = line
				t.Logf("browser: %s (%.1f s after navigating)", line, time.Since(navAt).Seconds())
			}
			if strings.Contains(line, "msg=connected") || strings.Contains(line, "transport changed") || strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				t.Logf("browser: %s", line)
			}
			if strings.Contains(line, "resumed the match") || strings.Contains(line, "seat") {
				t.Logf("browser: %s", line)
			}

			// After the reload, only the new page's summaries count.
			if s, ok := demotest.ParseSummary(line); ok && s.Peer == "you (autoplay)" && (reloadedAt.IsZero() || loaded != "") {
				last = s
				t.Logf("browser summary: %.1f s, %s, connect %.0f ms, states applied %d, clock synced %v (offset %+.3f ms), hits dealt %d taken %d",
					s.Seconds, s.Path, s.ConnectMs, s.StatesApplied, s.ClockSynced, s.ClockOffMs, s.HitsDealt, s.HitsTaken)
			}
		case err := <-nativeDone:
			t.Fatalf("the native peer ended before the browser played %v: %v\n%s\n%s\nbrowser log:\n%s", browserPlay, err, nOut.String(), nErr.String(), cdp.log())
		case <-ctx.Done():
			t.Fatalf("timed out; browser log:\n%s\nnative:\n%s", cdp.log(), nErr.String())
		}
		// One shot per summary from 10 s on: one instant can catch a
		// fighter flashed white by a hit or curled up on the ground, so
		// the best of them is checked.
		if reload && reloadedAt.IsZero() && last.Seconds >= reloadAfter.Seconds() && last.StatesApplied > 0 {
			if err := cdp.call("Page.reload", map[string]any{}, nil); err != nil {
				t.Fatalf("reloading the page: %v", err)
			}
			before, last, loaded, reloadedAt = last, game.Summary{}, "", time.Now()
			navAt = reloadedAt
			t.Logf("reloaded the page after %.1f s of play (round %d, HP %d)", before.Seconds, before.Round, before.HP)
			continue
		}
		if bg && hides == 1 && showC == nil && time.Since(shownAt) >= bgAfter && last.StatesApplied > 0 {
			hidden = last
			hide()
			t.Logf("page sent to the background mid-match, %.1f s after it connected (visibility %q)", last.Seconds, cdp.visibility())
			continue
		}
		if !reload && !bg && len(shots) < 3 && last.Seconds >= 10 {
			png, err := cdp.screenshot()
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			shots = append(shots, png)
		}
	}
	if !reload && !bg {
		checkBrowserScreenshot(t, shots, noUDP)
	}
	if err := <-nativeDone; err != nil {
		t.Fatalf("native peer: %v\n%s\n%s", err, nOut.String(), nErr.String())
	}
	rep := parseReport(t, nOut.String())
	t.Logf("native:\n%s", nOut.String()[:strings.Index(nOut.String(), "\n{")])
	for line := range strings.Lines(nErr.String()) {
		if strings.Contains(line, "msg=connected") {
			t.Logf("native: %s", strings.TrimSpace(line))
		}
	}

	nat := rep.Players[0]
	for _, s := range []game.Summary{last, nat} {
		if s.StatesApplied == 0 {
			t.Errorf("%s applied none of the rival's states", s.Peer)
		}
		if !s.ClockSynced {
			t.Errorf("%s: clock not synced", s.Peer)
		}
		if s.LastErr != "" {
			t.Logf("%s: last error %s", s.Peer, s.LastErr)
		}
	}
	if reload {
		checkReload(t, before, last, nat, nErr.String(), cdp.log())
	} else if bg {
		checkBackground(t, hidden, last, nat, nErr.String(), cdp.log())
	} else if rep.Seconds < browserPlay.Seconds() {
		t.Errorf("the native peer played %.1f s", rep.Seconds)
	}
	if last.HitsDealt+last.HitsTaken == 0 || nat.HitsDealt+nat.HitsTaken == 0 {
		t.Errorf("no hit landed: browser dealt %d taken %d, native dealt %d taken %d", last.HitsDealt, last.HitsTaken, nat.HitsDealt, nat.HitsTaken)
	}
	if noUDP {
		if last.Transport != "tcp" || !strings.Contains(last.Path, "WebSocket") {
			t.Errorf("browser with UDP blocked on %s (%s), want the WebSocket relay", last.Transport, last.Path)
		}
		if nat.Transport != "tcp" {
			t.Errorf("native with UDP blocked on %s", nat.Transport)
		}
	} else if nat.Switches == 0 && nat.Transport != "webrtc" {
		t.Errorf("native peer on %s, never on WebRTC", nat.Transport)
	} else if strings.Contains(last.Path, "unknown") {
		t.Errorf("the browser does not know its candidate types: %s", last.Path)
	}
	t.Logf("connect time (pairing to running): browser %.0f ms, native %.0f ms; browser %s, native %s",
		last.ConnectMs, nat.ConnectMs, last.Path, nat.Path)
}

// checkReload checks the reload case: the browser's page, reloaded
// mid-match, took its seat back and resumed the match (round and HP as
// the survivor kept them, the timer within 1 s), and the native survivor
// counted a rejoin and played on (before: the browser's last summary
// before the reload; after: its last one since; nativeLog: the native
// peer's log; console: the browser's).
//
// The timer stands still while the page is away, and runs again from the
// survivor's first tick on the new session ("rival back"): until the page
// adopts the snapshot it runs on the survivor alone. On a loaded machine
// the page took up to 2.5 s for that (load average 34), so the timer is
// held to 1 s plus that time, read from the two logs' timestamps (one
// machine, one clock); the native restart (the fault suite's
// TestResumeAfterCrash) holds it to 1 s.
func checkReload(t *testing.T, before, after, nat game.Summary, nativeLog, console string) {
	t.Helper()
	var adopt time.Duration
	back, okb := logTime(nativeLog, "rival back; match resumed")
	res, okr := logTime(console, "resumed the match")
	if okb && okr && res.After(back) {
		adopt = res.Sub(back)
	}
	i := strings.Index(nativeLog, "rival dropped; waiting for it to come back")
	j := strings.Index(console, "resumed the match")
	if i < 0 || j < 0 {
		t.Fatalf("no drop in the native's log (%v) or no resume in the browser's (%v)\nnative:\n%s\nbrowser:\n%s", i >= 0, j >= 0, nativeLog, console)
	}
	dropped := demotest.LogFields(nativeLog[i:], 0)
	resumed := demotest.LogFields(console[j:], 0)
	timer := dropped["remaining_ms"] - resumed["remaining_ms"]
	t.Logf("FIGURE reload: played %.1f s before, %.1f s after; survivor rejoins %d, status %s; at the drop round %d HP %d/%d timer %d ms, at the resume round %d HP %d/%d timer %d ms; the page adopted the snapshot %v after the survivor's rejoin",
		before.Seconds, after.Seconds, nat.RivalRejoins, nat.Status, dropped["round"], dropped["hp1"], dropped["hp2"], dropped["remaining_ms"],
		resumed["round"], resumed["hp1"], resumed["hp2"], resumed["remaining_ms"], adopt.Round(time.Millisecond))
	if !after.Resumed {
		t.Errorf("the reloaded page does not say resumed: %+v", after)
	}
	if nat.RivalRejoins < 1 || strings.Contains(nat.LastErr, "did not come back") {
		t.Errorf("the native survivor: %d rejoins, status %q, error %q", nat.RivalRejoins, nat.Status, nat.LastErr)
	}
	for _, k := range []string{"round", "hp1", "hp2"} {
		if dropped[k] != resumed[k] {
			t.Errorf("%s: %d when the page went away, %d after the resume", k, dropped[k], resumed[k])
		}
	}
	if limit := 1000 + int(adopt.Milliseconds()); timer < 0 || timer > limit {
		t.Errorf("round timer %d ms at the drop, %d ms after the resume: want within 1 s plus the page's %v to adopt the snapshot",
			dropped["remaining_ms"], resumed["remaining_ms"], adopt.Round(time.Millisecond))
	}
}

// logTime returns the time= of the first line of log (slog text) that
// contains msg.
func logTime(log, msg string) (time.Time, bool) {
	for line := range strings.Lines(log) {
		if !strings.Contains(line, msg) {
			continue
		}
		i := strings.Index(line, "time=")
		if i < 0 {
			return time.Time{}, false
		}
		f := strings.Fields(line[i+len("time="):])
		if len(f) == 0 {
			return time.Time{}, false
		}
		tm, err := time.Parse(time.RFC3339Nano, f[0])
		return tm, err == nil
	}
	return time.Time{}, false
}

// checkBackground checks the background case: the native rival saw the
// browser's tab go to the background and come back twice (while the page
// waited for it, and mid-match), and lost nothing meanwhile (no silence,
// drop or disconnect in its log; no rejoin), and the browser played on
// after each (before: its last summary before it was hidden mid-match;
// after: its last one).
func checkBackground(t *testing.T, before, after, nat game.Summary, nativeLog, console string) {
	t.Helper()
	const bgLine, backLine = "the rival's tab is in the background", "the rival's tab is back"
	periods := 0
	for rest := nativeLog; ; periods++ {
		i := strings.Index(rest, bgLine)
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], backLine)
		if j < 0 {
			t.Errorf("the native rival saw the tab go to the background, not come back:\n%s", rest[i:])
			break
		}
		for line := range strings.Lines(rest[i : i+j]) {
			for _, bad := range []string{"rival silent", "rival dropped", "level=ERROR", "sends no game states"} {
				if strings.Contains(line, bad) {
					t.Errorf("native, while the rival was in the background: %s", strings.TrimSpace(line))
				}
			}
		}
		rest = rest[i+j:]
	}
	t.Logf("FIGURE background: browser %.1f s after it connected when hidden mid-match, %.1f s at the end (states applied %d → %d, ticks %d → %d); native: status %s, rejoins %d, background periods seen %d",
		before.Seconds, after.Seconds, before.StatesApplied, after.StatesApplied, before.Ticks, after.Ticks, nat.Status, nat.RivalRejoins, periods)
	if periods != 2 {
		t.Errorf("the native rival saw %d background periods, want 2 (while the page waited for it, and mid-match)\nnative:\n%s\nbrowser:\n%s", periods, nativeLog, console)
	}
	if strings.Count(console, "page hidden") != 2 || strings.Contains(console, "pairing failed") {
		t.Errorf("the page did not see itself hidden twice, or failed to pair:\n%s", console)
	}
	if nat.RivalRejoins != 0 || nat.Status != "connected" {
		t.Errorf("the native rival: status %q, %d rejoins, error %q", nat.Status, nat.RivalRejoins, nat.LastErr)
	}
	if after.StatesApplied <= before.StatesApplied || after.Ticks <= before.Ticks {
		t.Errorf("the browser did not play on after it was shown: states applied %d → %d, ticks %d → %d",
			before.StatesApplied, after.StatesApplied, before.Ticks, after.Ticks)
	}
}

func parseReport(t *testing.T, out string) game.RunReport {
	t.Helper()
	var rep game.RunReport
	i := strings.Index(out, "\n{")
	if i < 0 {
		t.Fatalf("no JSON report from the native peer:\n%s", out)
	}
	if err := json.Unmarshal([]byte(out[i+1:]), &rep); err != nil || len(rep.Players) != 1 {
		t.Fatalf("native report: %v\n%s", err, out)
	}
	return rep
}

// checkBrowserScreenshot saves the screenshot (to $RAGSYNC_SCREENSHOTS if
// set) and checks it shows the arena with both fighters, as the window
// test does.
func checkBrowserScreenshot(t *testing.T, shots [][]byte, noUDP bool) {
	t.Helper()
	if len(shots) == 0 {
		t.Fatal("no screenshot mid-fight")
	}
	var b []byte
	var img image.Image
	bestN := -1
	for _, sh := range shots {
		im, err := png.Decode(bytes.NewReader(sh))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if n := demotest.FightersShown(im); n > bestN {
			b, img, bestN = sh, im, n
		}
	}
	if d := os.Getenv("RAGSYNC_SCREENSHOTS"); d != "" {
		name := "browser-webrtc.png"
		if noUDP {
			name = "browser-websocket-relay.png"
		}
		if err := os.WriteFile(filepath.Join(d, name), b, 0o644); err != nil {
			t.Errorf("saving the screenshot: %v", err)
		}
	}
	t.Logf("screenshot %v, the best of %d", img.Bounds().Size(), len(shots))
	checkFightDrawn(t, img)
}

// chromium is a headless Chromium driven through the DevTools protocol
// over --remote-debugging-pipe (fd 3 commands, fd 4 replies; each message
// JSON ended by a NUL byte).
type chromium struct {
	t       *testing.T
	cmd     *exec.Cmd
	w       io.Writer
	console chan string   // the page's console lines
	gone    chan struct{} // closed when the browser's end of the pipe closes

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan cdpMsg
	session string
	target  string // the page's
	blank   string // the tab that hides it (hide), if any
	lines   []string
}

type cdpMsg struct {
	ID        int                       `json:"id,omitempty"`
	Method    string                    `json:"method,omitempty"`
	Params    json.RawMessage           `json:"params,omitempty"`
	Result    json.RawMessage           `json:"result,omitempty"`
	Error     *struct{ Message string } `json:"error,omitempty"`
	SessionID string                    `json:"sessionId,omitempty"`
}

// openChromium starts Chromium and opens url in it. A browser that dies
// or hangs while starting (seen twice in a few dozen starts on a loaded
// machine: a child crashed, the browser answered nothing) is killed and
// started once more, with a fresh profile.
func openChromium(t *testing.T, dir, url string, throttle bool) (*chromium, error) {
	for try := 1; ; try++ {
		c, err := startChromium(t, filepath.Join(dir, strconv.Itoa(try)), throttle)
		if err != nil {
			return nil, err
		}
		err = c.open(url)
		if err == nil || try == 2 {
			return c, err
		}
		c.cmd.Process.Kill()
		<-c.gone
		t.Logf("chromium did not start (%v); starting it again", err)
	}
}

// startChromium starts headless Chromium, driven over a pipe, with its
// profile in dir; with throttle, it throttles hidden pages as a browser
// does by default (otherwise it keeps every page at full rate).
func startChromium(t *testing.T, dir string, throttle bool) (*chromium, error) {
	cmdR, cmdW, err := os.Pipe() // commands: we write, chromium reads fd 3
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe() // replies: chromium writes fd 4
	if err != nil {
		return nil, err
	}
	args := []string{
		"--headless=new", "--remote-debugging-pipe", "--user-data-dir=" + filepath.Join(dir, "profile"),
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-component-update",
		"--disable-sync", "--disable-background-networking", "--mute-audio",
		// WebRTC on loopback, with real addresses rather than mDNS names.
		"--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
		// WebGL (Ebiten draws with it) in software.
		"--use-angle=swiftshader", "--enable-unsafe-swiftshader",
		"--window-size=960,540", "about:blank",
	}
	if !throttle {
		// Keep the game running at full rate.
		args = append(args, "--disable-background-timer-throttling", "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows")
	}
	if os.Geteuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...) // Chromium's sandbox refuses root
	}
	cmd := exec.Command("chromium", args...)
	cmd.ExtraFiles = []*os.File{cmdR, repW}
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	cmdR.Close()
	repW.Close()
	c := &chromium{t: t, cmd: cmd, w: cmdW, console: make(chan string, 1024), gone: make(chan struct{}), waiting: map[int]chan cdpMsg{}}
	t.Cleanup(func() {
		c.send("Browser.close", nil, "")
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		cmdW.Close()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", errBuf.String())
		}
	})
	go c.read(repR)
	return c, nil
}

func (c *chromium) read(r io.ReadCloser) {
	defer r.Close()
	defer close(c.gone)
	defer close(c.console)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		b, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMsg
		if json.Unmarshal(b[:len(b)-1], &m) != nil {
			continue
		}
		if m.ID != 0 {
			c.mu.Lock()
			ch := c.waiting[m.ID]
			delete(c.waiting, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		if m.Method == "Runtime.consoleAPICalled" {
			var p struct {
				Args []struct {
					Value any `json:"value"`
				} `json:"args"`
			}
			json.Unmarshal(m.Params, &p)
			var parts []string
			for _, a := range p.Args {
				parts = append(parts, fmt.Sprint(a.Value))
			}
			line := strings.TrimRight(strings.Join(parts, " "), "\n")
			c.mu.Lock()
			c.lines = append(c.lines, line)
			c.mu.Unlock()
			select {
			case c.console <- line:
			default:
			}
		}
	}
}

func (c *chromium) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// send sends a command without waiting for its reply.
func (c *chromium) send(method string, params any, session string) chan cdpMsg {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan cdpMsg, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	p, _ := json.Marshal(params)
	if params == nil {
		p = []byte("{}")
	}
	b, _ := json.Marshal(cdpMsg{ID: id, Method: method, Params: p, SessionID: session})
	c.w.Write(append(b, 0))
	return ch
}

// call sends a command and waits for its result.
func (c *chromium) call(method string, params any, out any) error {
	ch := c.send(method, params, c.session)
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-c.gone:
		return errors.New(method + ": the browser exited")
	case <-time.After(time.Minute):
		return errors.New(method + ": no reply within a minute")
	}
}

// open makes a page target, attaches to it, enables the console and
// navigates to url.
func (c *chromium) open(url string) error {
	var tgt struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call("Target.createTarget", map[string]any{"url": "about:blank"}, &tgt); err != nil {
		return err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call("Target.attachToTarget", map[string]any{"targetId": tgt.TargetID, "flatten": true}, &att); err != nil {
		return err
	}
	c.session, c.target = att.SessionID, tgt.TargetID
	for _, m := range []string{"Runtime.enable", "Page.enable"} {
		if err := c.call(m, nil, nil); err != nil {
			return err
		}
	}
	// The demo's logical size, 1280×720, at scale 1.
	if err := c.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		return err
	}
	return c.call("Page.navigate", map[string]any{"url": url}, nil)
}

// browserCall is call for the browser's own domains (no session).
func (c *chromium) browserCall(method string, params any, out any) error {
	session := c.session
	c.session = ""
	defer func() { c.session = session }()
	return c.call(method, params, out)
}

// hide sends the page to the background, as a user does: it opens
// another tab and activates it.
func (c *chromium) hide() error {
	var tgt struct {
		TargetID string `json:"targetId"`
	}
	if err := c.browserCall("Target.createTarget", map[string]any{"url": "about:blank"}, &tgt); err != nil {
		return err
	}
	c.blank = tgt.TargetID
	return c.browserCall("Target.activateTarget", map[string]any{"targetId": tgt.TargetID}, nil)
}

// show brings the page back to the front and closes the tab that hid it.
func (c *chromium) show() error {
	if err := c.browserCall("Target.activateTarget", map[string]any{"targetId": c.target}, nil); err != nil {
		return err
	}
	return c.browserCall("Target.closeTarget", map[string]any{"targetId": c.blank}, nil)
}

// visibility is the page's document.visibilityState ("" if unknown).
func (c *chromium) visibility() string {
	var r struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	if err := c.call("Runtime.evaluate", map[string]any{"expression": "document.visibilityState", "returnByValue": true}, &r); err != nil {
		return ""
	}
	return r.Result.Value
}

// screenshot captures the page as PNG.
func (c *chromium) screenshot() ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := c.call("Page.captureScreenshot", map[string]any{"format": "png"}, &r); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(r.Data)
}

// checkFightDrawn checks that a screenshot of the browser's game shows the
// arena and both fighters with volume. The camera's framing is the window
// test's business (checkScreenshot): in the browser the canvas follows the
// page's size, and the fighters' span depends on how far apart they stand.
func checkFightDrawn(t *testing.T, img image.Image) {
	t.Helper()
	world := image.Rect(0, demotest.TopBar, img.Bounds().Dx(), img.Bounds().Dy())
	arena := demotest.Count(img, demotest.ColArena, world)
	p1, p2 := demotest.Count(img, demotest.ColF1, world), demotest.Count(img, demotest.ColF2, world)
	t.Logf("arena %d px; fighter 1 %d px in %v; fighter 2 %d px in %v", arena.N, p1.N, p1.Box, p2.N, p2.Box)
	if arena.N < 20000 {
		t.Errorf("no arena: %d px of its colour", arena.N)
	}
	for i, p := range []demotest.Region{p1, p2} {
		if p.N < 1000 {
			t.Errorf("fighter %d: %d pixels of its colour", i+1, p.N)
		}
	}
}
