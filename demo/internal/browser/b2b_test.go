package browser

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/demo/internal/demotest"
	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/demo/webdist"
	"github.com/ragsync/ragsync/internal/testwait"
)

// The browser↔browser test: two headless Chromiums (separate profiles)
// load the web demo from cmd/signal, quick-match each other and play,
// autoplayed by the bot, over WebRTC. It runs in a network namespace of
// its own (the test re-runs itself under `unshare -n`, as the browser
// test does), with a veth pair in it (v0 10.99.0.1/24, v1 10.99.0.2/24,
// both ends in that namespace): in a loopback-only namespace Chromium
// gathers no ICE candidates at all, so two pages could not reach each
// other; on the veth addresses they gather host candidates. Nothing
// leaves the namespace; cmd/signal listens on 127.0.0.1.
//
// TestBrowserConnectFigures (run only with RAGSYNC_BROWSER_RUNS=N) times
// pairing→running (the summaries' connect_ms) N times for each of
// RAGSYNC_FIGURE_MODES (default native,noudp,b2b: the page against the
// native demo over WebRTC, the same with UDP dropped, so over the relay,
// and page against page), each run in a fresh namespace, with
// RAGSYNC_BROWSER_BUSY busy loops beside it; it logs a FIGURE line per
// run and the median and max of each mode.

// b2bEnv tells the re-run test which case it runs inside the namespace:
// "play" (the test) or "fig-MODE" (one figure run).
const b2bEnv = "RAGSYNC_B2B_CASE"

// b2bBinsEnv passes the binaries the parent built: signal, demo.
const b2bBinsEnv = "RAGSYNC_B2B_BINS"

// b2bPlay is how long both pages must play.
const b2bPlay = 15 * time.Second

// b2bGiveUp bounds a run in the namespace: the pages' start, their
// pairing (again, if one failed) and b2bPlay.
const b2bGiveUp = 3 * time.Minute

func TestBrowserPlaysBrowser(t *testing.T) {
	if c := os.Getenv(b2bEnv); c != "" {
		runB2BCase(t, c)
		return
	}
	b2bSkip(t)
	sig := demotest.Binary(t, demotest.SignalPkg, demotest.RaceOn)
	demo := demotest.Binary(t, demotest.DemoPkg, demotest.RaceOn)
	out, err := b2bInNamespace(t, "^TestBrowserPlaysBrowser$", "play", sig, demo)
	t.Logf("in its own network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("%v", err)
	}
}

func b2bSkip(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("the browser↔browser test is skipped in -short mode (it runs two Chromiums for about 30 s)")
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
}

// b2bInNamespace re-runs test run under `unshare -n` with case c.
func b2bInNamespace(t *testing.T, run, c, sig, demo string) (string, error) {
	targs := []string{"-n", "--", os.Args[0], "-test.run", run, "-test.v"}
	if d, ok := testwait.Deadline(t); ok {
		targs = append(targs, "-test.timeout", time.Until(d).Round(time.Second).String())
	}
	cmd := exec.CommandContext(testwait.Context(t), "unshare", targs...)
	cmd.Env = append(os.Environ(), b2bEnv+"="+c, b2bBinsEnv+"="+sig+string(os.PathListSeparator)+demo)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runB2BCase runs case c inside the namespace: "play", or "fig-MODE".
func runB2BCase(t *testing.T, c string) {
	bins := strings.Split(os.Getenv(b2bBinsEnv), string(os.PathListSeparator))
	if len(bins) != 2 {
		t.Fatalf("%s=%q", b2bBinsEnv, os.Getenv(b2bBinsEnv))
	}
	mode, fig := strings.CutPrefix(c, "fig-")
	if !fig {
		mode = "b2b"
	}
	ctx := testwait.Context(t)
	run := func(name string, args ...string) {
		if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v %s", name, strings.Join(args, " "), err, out)
		}
	}
	run("ip", "link", "set", "lo", "up")
	if mode == "b2b" || mode == "native-veth" {
		run("ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1")
		run("ip", "addr", "add", "10.99.0.1/24", "dev", "v0")
		run("ip", "addr", "add", "10.99.0.2/24", "dev", "v1")
		run("ip", "link", "set", "v0", "up")
		run("ip", "link", "set", "v1", "up")
		// A default route, via the veth pair's other end: without one
		// Chromium (with no media permission, so no interface
		// enumeration) finds no default local address and gathers no
		// host candidate. Nothing is forwarded out of the namespace.
		run("ip", "route", "add", "default", "via", "10.99.0.2", "dev", "v0")
	}
	if mode == "noudp" {
		run("iptables", "-A", "OUTPUT", "-p", "udp", "-j", "DROP")
		run("iptables", "-A", "INPUT", "-p", "udp", "-j", "DROP")
	}
	dir := t.TempDir()

	sig := demotest.Start(t, "signal", exec.CommandContext(ctx, bins[0], "-addr", "127.0.0.1:0"))
	_, n := sig.WaitLog(t, 0, "server ready", "url=http://")
	lines, _ := sig.Lines(n - 1)
	if !strings.Contains(lines[0], "web_demo=true") {
		t.Fatalf("cmd/signal does not serve the web demo: %s", lines[0])
	}
	base := strings.Fields(lines[0][strings.Index(lines[0], "url=http://")+4:])[0]
	page := base + "/?autoplay=1&hud=1" + os.Getenv("RAGSYNC_B2B_QUERY")
	// RAGSYNC_B2B_LOGS=1: debug logs of every peer, written out at the
	// end of the run (a figure's timeline).
	verbose := os.Getenv("RAGSYNC_B2B_LOGS") != ""
	if verbose {
		page += "&v=1"
	}

	// The pages, and in the native modes the native demo.
	var pages []*chromium
	npages := 1
	if mode == "b2b" {
		npages = 2
	}
	for i := range npages {
		cdp, err := openChromium(t, filepath.Join(dir, "page"+strconv.Itoa(i+1)), page, false)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, cdp)
	}
	var native *demotest.Proc
	if mode != "b2b" {
		args := []string{"-headless", "-signal", base, "-duration", "2m", "-log-summaries", "-connect-timeout", "2m"}
		if verbose {
			args = append(args, "-v")
		}
		native = demotest.Start(t, "native", exec.CommandContext(ctx, bins[1], args...))
	}

	// Follow the pages' consoles.
	type line struct {
		page int
		text string
	}
	lc := make(chan line, 1024)
	for i, p := range pages {
		go func() {
			for l := range p.console {
				lc <- line{i, l}
			}
			lc <- line{i, "\x00gone"}
		}()
	}
	last := make([]game.Summary, len(pages))
	connectedOn := make([]string, len(pages)) // the transport of each page's "connected" line
	hostCand := make([]string, len(pages))    // a WebRTC summary's candidate types, host ones preferred
	done := func() bool {
		for _, s := range last {
			if fig && s.ConnectMs == 0 || !fig && s.Seconds < b2bPlay.Seconds() {
				return false
			}
		}
		return true
	}
	logs := func() string {
		var b strings.Builder
		for i, p := range pages {
			fmt.Fprintf(&b, "page %d:\n%s\n", i+1, p.log())
		}
		if native != nil {
			fmt.Fprintf(&b, "native:\n%s\n", native.Log())
		}
		if verbose {
			fmt.Fprintf(&b, "signal:\n%s\n", sig.Log())
		}
		return b.String()
	}
	var exited <-chan struct{}
	if native != nil {
		exited = native.Exited()
	}
	// A bound of its own, so a run that cannot pair fails in minutes,
	// not at the end of make test's timeout.
	giveUp := time.After(b2bGiveUp)
	for !done() {
		select {
		case <-giveUp:
			t.Fatalf("gave up after %v; logs:\n%s", b2bGiveUp, logs())
		case l := <-lc:
			if l.text == "\x00gone" {
				t.Fatalf("page %d: the browser went away; logs:\n%s", l.page+1, logs())
			}
			if strings.Contains(l.text, "wasm loaded") || strings.Contains(l.text, "msg=connected") || strings.Contains(l.text, "transport changed") ||
				strings.Contains(l.text, "level=WARN") || strings.Contains(l.text, "level=ERROR") || strings.Contains(l.text, "fast path") {
				t.Logf("page %d: %s", l.page+1, l.text)
			}
			// Autoplay pairs again after a failed pairing (2 s later):
			// the run goes on, bounded by the test's deadline.
			if strings.Contains(l.text, `msg="pairing failed"`) || strings.Contains(l.text, `msg="pairing again"`) {
				t.Logf("page %d: %s", l.page+1, l.text)
			}
			if strings.Contains(l.text, "msg=connected") && connectedOn[l.page] == "" {
				connectedOn[l.page] = logField(l.text, "transport")
			}
			if s, ok := demotest.ParseSummary(l.text); ok && s.Peer == "you (autoplay)" {
				last[l.page] = s
				if s.Transport == "webrtc" && (hostCand[l.page] == "" || s.LocalCand == "host") {
					hostCand[l.page] = s.LocalCand + " <-> " + s.RemoteCand
				}
				t.Logf("page %d summary: %.1f s, %s (%s, local %s, remote %s), connect %.0f ms, states applied %d, clock synced %v (offset %+.3f ms), hits dealt %d taken %d",
					l.page+1, s.Seconds, s.Transport, s.Path, s.LocalCand, s.RemoteCand, s.ConnectMs, s.StatesApplied, s.ClockSynced, s.ClockOffMs, s.HitsDealt, s.HitsTaken)
			}
		case <-exited:
			t.Fatalf("the native peer ended: %v; logs:\n%s", native.Err(), logs())
		case <-ctx.Done():
			t.Fatalf("timed out; logs:\n%s", logs())
		}
	}
	if native != nil {
		for _, l := range strings.Split(native.Log(), "\n") {
			if strings.Contains(l, "msg=connected") {
				t.Logf("native: %s", l)
			}
		}
	}

	if verbose {
		t.Logf("logs:\n%s", logs())
	}
	if fig {
		var ms []string
		worst := 0.0
		for _, s := range last {
			ms = append(ms, fmt.Sprintf("%.0f", s.ConnectMs))
			worst = max(worst, s.ConnectMs)
		}
		// The native's own connect time, from its first summary.
		nat := ""
		if native != nil {
			for _, l := range strings.Split(native.Log(), "\n") {
				if s, ok := demotest.ParseSummary(l); ok && s.ConnectMs > 0 {
					nat = fmt.Sprintf(" native_ms=%.0f native_transport=%s", s.ConnectMs, s.Transport)
					break
				}
			}
		}
		t.Logf("FIGURE connect mode=%s ms=%.0f pages_ms=%s transport=%s path=%q%s", mode, worst, strings.Join(ms, ","), last[0].Transport, last[0].Path, nat)
		return
	}

	// The play case: both pages connected over WebRTC, on host candidates
	// on the veth pair, applied each other's states, synced clocks, and
	// hits landed.
	a, b := last[0], last[1]
	for i, s := range last {
		// The pages must connect over WebRTC; the session may later
		// move to the relay if it pings faster (p2p's SwitchMargin),
		// as it can on a loaded machine.
		if connectedOn[i] != "webrtc" {
			t.Errorf("page %d connected on %q: want WebRTC", i+1, connectedOn[i])
		}
		if s.Switches != 0 {
			t.Logf("page %d: %d transport switches, now on %s (%s)", i+1, s.Switches, s.Transport, s.Path)
		}
		// Chromium drops loopback candidates: a host candidate here is
		// on the veth pair. The remote one can be peer-reflexive, when
		// its checks arrive before it is trickled.
		if !strings.HasPrefix(hostCand[i], "host <-> ") {
			t.Errorf("page %d: candidates %q: want a local host candidate (on the veth pair)", i+1, hostCand[i])
		}
		if s.StatesApplied == 0 {
			t.Errorf("page %d applied none of the rival's states", i+1)
		}
		if !s.ClockSynced {
			t.Errorf("page %d: clock not synced", i+1)
		}
		if s.LastErr != "" {
			t.Logf("page %d: last error %s", i+1, s.LastErr)
		}
	}
	if a.Role == b.Role {
		t.Errorf("both pages are %s", a.Role)
	}
	if a.HitsDealt+a.HitsTaken == 0 || b.HitsDealt+b.HitsTaken == 0 {
		t.Errorf("no hit landed: page 1 dealt %d taken %d, page 2 dealt %d taken %d", a.HitsDealt, a.HitsTaken, b.HitsDealt, b.HitsTaken)
	}
	if t.Failed() {
		t.Logf("logs:\n%s", logs())
	}
	t.Logf("FIGURE b2b: played %.1f s and %.1f s; connect (pairing to running) %.0f ms and %.0f ms; %s and %s; states applied %d and %d; hits dealt %d/%d, taken %d/%d; RTT %.1f ms",
		a.Seconds, b.Seconds, a.ConnectMs, b.ConnectMs, a.Path, b.Path, a.StatesApplied, b.StatesApplied, a.HitsDealt, b.HitsDealt, a.HitsTaken, b.HitsTaken, a.RTTMs)
}

// TestBrowserConnectFigures times the browser's connect (see above); it
// runs only with RAGSYNC_BROWSER_RUNS set.
func TestBrowserConnectFigures(t *testing.T) {
	if c := os.Getenv(b2bEnv); c != "" {
		runB2BCase(t, c)
		return
	}
	runs, _ := strconv.Atoi(os.Getenv("RAGSYNC_BROWSER_RUNS"))
	if runs <= 0 {
		t.Skip("set RAGSYNC_BROWSER_RUNS=N to time the browser's connect N times per mode")
	}
	b2bSkip(t)
	modes := strings.Split(orDefault(os.Getenv("RAGSYNC_FIGURE_MODES"), "native,noudp,b2b"), ",")
	busy, _ := strconv.Atoi(os.Getenv("RAGSYNC_BROWSER_BUSY"))
	sig := demotest.Binary(t, demotest.SignalPkg, demotest.RaceOn)
	demo := demotest.Binary(t, demotest.DemoPkg, demotest.RaceOn)
	for range busy {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	uptime := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return strings.TrimSpace(string(b))
	}
	t.Logf("busy loops %d; loadavg at the start: %s", busy, uptime())
	figs := map[string][]float64{}
	fails := map[string]int{}
	for i := range runs {
		for _, m := range modes {
			out, err := b2bInNamespace(t, "^TestBrowserConnectFigures$", "fig-"+m, sig, demo)
			j := strings.Index(out, "FIGURE connect ")
			if err != nil || j < 0 {
				fails[m]++
				t.Logf("run %d %s failed (%v):\n%s", i+1, m, err, out)
				continue
			}
			if os.Getenv("RAGSYNC_B2B_LOGS") != "" {
				t.Logf("run %d %s:\n%s", i+1, m, out)
			}
			l := out[j:]
			l = l[:strings.IndexByte(l, '\n')]
			t.Logf("run %d: %s (loadavg %s)", i+1, l, uptime())
			f := demotest.LogFields(l, 0)
			figs[m] = append(figs[m], float64(f["ms"]))
		}
	}
	t.Logf("busy loops %d; loadavg at the end: %s", busy, uptime())
	for _, m := range modes {
		v := slices.Clone(figs[m])
		slices.Sort(v)
		if len(v) == 0 {
			t.Logf("FIGURES %s busy=%d: no run succeeded (%d failed)", m, busy, fails[m])
			continue
		}
		med := v[len(v)/2]
		if len(v)%2 == 0 {
			med = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		t.Logf("FIGURES %s busy=%d: %d runs (%d failed), connect median %.0f ms, max %.0f ms, all %v", m, busy, len(v), fails[m], med, v[len(v)-1], v)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// logField returns the value of key=value in a slog text line (unquoted
// values only).
func logField(line, key string) string {
	for _, kv := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
