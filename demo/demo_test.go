package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragsync/ragsync/demo/internal/game"
)

// The demo is tested as users run it: the real binary, its flags, its
// output. Everything stays on loopback: the embedded signaling server
// listens on 127.0.0.1:0 and WebRTC, given a loopback signaling URL,
// gathers loopback candidates only.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// demoBinary builds the demo and, next to it, its window program, once per
// test run (with -race when the tests run with it).
func demoBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ragsync-demo-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "demo")
		for _, b := range [][2]string{{binPath, "."}, {filepath.Join(dir, "demo-window"), "./window"}} {
			args := []string{"build", "-o", b[0]}
			if raceOn {
				args = append(args, "-race")
			}
			cmd := exec.Command("go", append(args, b[1])...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
			if buildOut, buildErr = cmd.CombinedOutput(); buildErr != nil {
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// TestHeadlessBotMatch plays a short bot-against-bot match through the full
// stack (embedded signaling on loopback, real WebRTC, two worlds and
// Matches) and checks the figures the demo prints.
func TestHeadlessBotMatch(t *testing.T) {
	bin := demoBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	// A 5 s round: countdown 3 s, fight 5 s, result, bots ask for a rematch
	// 3 s later; the match stops as round 2 starts.
	cmd := exec.CommandContext(ctx, bin, "-headless", "-bot", "-listen", "127.0.0.1:0", "-duration", "13s", "-round", "5s", "-json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("stdout:\n%s", stdout.String())
	if err != nil {
		t.Fatalf("demo: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	i := strings.Index(out, "\n{")
	if i < 0 {
		t.Fatalf("no JSON summary in the output")
	}
	var rep game.RunReport
	if err := json.Unmarshal([]byte(out[i+1:]), &rep); err != nil {
		t.Fatalf("summary: %v", err)
	}
	// The human-readable summary comes first.
	for _, want := range []string{"ragsync demo, headless:", "bot-1 (peer 1, offerer): ", "bot (peer 2, answerer): ", "goroutines:"} {
		if !strings.Contains(out[:i], want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if !strings.Contains(stderr.String(), "msg=net ") {
		t.Errorf("no periodic net summary in the log:\n%s", stderr.String())
	}
	if rep.Seconds < 13 || !rep.Embedded || !strings.HasPrefix(rep.Signal, "http://127.0.0.1:") || len(rep.Players) != 2 {
		t.Fatalf("run: %+v", rep)
	}
	var hits uint64
	for _, p := range rep.Players {
		// WebRTC connects directly on loopback (a host candidate pair) and
		// wins the initial choice, or is taken back when it opens late. On
		// a loaded machine a stall of the data channel longer than
		// FailoverAfter moves the session to TCP until WebRTC pings as well
		// again (at least 3 s later): a working failover, not a failure,
		// as long as WebRTC had connected.
		webrtc := p.Transport == "webrtc" && strings.HasPrefix(p.Path, "WebRTC, direct")
		failedOver := p.Transport == "tcp" && p.Switches > 0
		if !(webrtc || failedOver) || p.LocalCand != "host" || p.RemoteCand != "host" {
			t.Errorf("%s: transport %s (%s) after %d switches, candidates %s/%s", p.Peer, p.Transport, p.Path, p.Switches, p.LocalCand, p.RemoteCand)
		}
		if !strings.Contains(out[:i], p.Path) {
			t.Errorf("summary lacks %s's path %q", p.Peer, p.Path)
		}
		if failedOver {
			t.Logf("%s failed over to TCP during the match (a stall on a loaded machine)", p.Peer)
		}
		// Both fighters moved, in both worlds.
		for f, m := range p.Moved {
			if m < 0.3 {
				t.Errorf("%s: fighter %d moved only %.2f m", p.Peer, f+1, m)
			}
		}
		// The copy of the rival stays close to the rival's own states.
		if p.ErrRMSm <= 0 || p.ErrRMSm > 0.15 || p.ErrMaxm > 1.5 {
			t.Errorf("%s: rival error rms %.3f m, max %.3f m", p.Peer, p.ErrRMSm, p.ErrMaxm)
		}
		if !p.ClockSynced || p.Ticks < 13*55 || p.Rejected != 0 {
			t.Errorf("%s: clock synced %v, ticks %d, rejected %d", p.Peer, p.ClockSynced, p.Ticks, p.Rejected)
		}
		hits += p.HitsTaken
	}
	if hits == 0 {
		t.Error("no hit landed in the whole match")
	}
	// Both peers agree on round 1's result, decided over the network.
	a, b := rep.Players[0], rep.Players[1]
	if len(a.Rounds) == 0 || len(b.Rounds) == 0 || a.Rounds[0] != b.Rounds[0] || !strings.HasPrefix(a.Rounds[0], "round 1:") {
		t.Errorf("round results %q / %q", a.Rounds, b.Rounds)
	}
	if a.Round != 2 || b.Round != 2 {
		t.Errorf("rematch: rounds %d / %d, want 2", a.Round, b.Round)
	}
	if rep.GoroutinesAfter > rep.GoroutinesBefore {
		t.Errorf("goroutines leaked: %d before, %d after", rep.GoroutinesBefore, rep.GoroutinesAfter)
	}
}

// TestHeadlessImpaired checks that -lag and -loss reach the game's packets
// in both directions (-bot: both peers impair what they send).
func TestHeadlessImpaired(t *testing.T) {
	bin := demoBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-headless", "-bot", "-listen", "127.0.0.1:0", "-duration", "5s", "-json",
		"-lag", "120ms", "-jitter", "10ms", "-loss", "0.1")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	var rep game.RunReport
	if err := json.Unmarshal([]byte(out[strings.Index(out, "\n{")+1:]), &rep); err != nil {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	for _, p := range rep.Players {
		// 60 ms one way, plus up to a tick of polling; the session's own
		// pings are not impaired, so the link RTT stays a loopback one.
		if p.StateAgeMs < 50 || p.StateAgeMs > 150 || p.Impair == "" {
			t.Errorf("%s: rival states %.1f ms old with a 120 ms round trip added (%q)", p.Peer, p.StateAgeMs, p.Impair)
		}
		if p.StateLoss <= 0 {
			t.Errorf("%s: no rival state missing with 10%% loss", p.Peer)
		}
		if p.ErrRMSm > 0.3 {
			t.Errorf("%s: rival error rms %.3f m", p.Peer, p.ErrRMSm)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	bin := demoBinary(t)
	for _, args := range [][]string{
		{"-bot", "-room", "ABCDEF"},
		{"-room", "0O1"},
		{"-loss", "1.5"},
		{"-lag", "-5ms"},
		{"-duration", "0s"},
		{"-ice", "http://example.org"},
		{"-prefer", "carrier-pigeon"},
		{"extra"},
	} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "demo:") {
			t.Errorf("%q: %v\n%s", args, err, out)
		}
	}
}

// TestWindowScreenshot opens the real window under Xvfb with a bot rival,
// screenshots the X screen, and checks that it shows the arena and both
// fighters.
func TestWindowScreenshot(t *testing.T) {
	for _, tool := range []string{"xvfb-run", "import"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (run make deps, which installs xvfb, xauth and imagemagick): %v", tool, err)
		}
	}
	bin := demoBinary(t)
	dir := t.TempDir()
	shot := filepath.Join(dir, "screen.png")
	logf := filepath.Join(dir, "demo.log")
	// Wait until the round is set (both peers paired and synced), let the
	// countdown run out and the fight start, then screenshot.
	script := fmt.Sprintf(`%q -bot -listen 127.0.0.1:0 >%q 2>&1 &
pid=$!
i=0
while ! grep -q 'round set.*peer=you' %q; do
  i=$((i+1)); if [ $i -gt 600 ] || ! kill -0 $pid 2>/dev/null; then echo "demo did not start a round"; kill $pid 2>/dev/null; exit 1; fi
  sleep 0.1
done
sleep 4.5
import -window root %q
rc=$?
kill $pid
wait $pid 2>/dev/null
exit $rc
`, bin, logf, logf, shot)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "xvfb-run", "-a", "-s", "-screen 0 1280x720x24", "sh", "-c", script)
	out, err := cmd.CombinedOutput()
	logs, _ := os.ReadFile(logf)
	if err != nil {
		t.Fatalf("xvfb-run: %v\n%s\ndemo log:\n%s", err, out, logs)
	}
	if keep := os.Getenv("DEMO_SCREENSHOT"); keep != "" {
		if b, err := os.ReadFile(shot); err == nil {
			os.WriteFile(keep, b, 0o644)
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	checkScreenshot(t, img)
}

// region counts the pixels of one colour and their bounding box.
type region struct {
	n          int
	box        image.Rectangle
	sumX, sumY int
}

func (r *region) add(x, y int) {
	p := image.Rect(x, y, x+1, y+1)
	if r.n == 0 {
		r.box = p
	} else {
		r.box = r.box.Union(p)
	}
	r.n++
	r.sumX += x
	r.sumY += y
}

func near(c color.Color, want color.RGBA) bool {
	r, g, b, _ := c.RGBA()
	d := func(a uint32, w uint8) int { return int(a>>8) - int(w) }
	ok := func(v int) bool { return v >= -6 && v <= 6 }
	return ok(d(r, want.R)) && ok(d(g, want.G)) && ok(d(b, want.B))
}

// checkScreenshot finds the arena (walls and ground) and the two fighters'
// colours (torso, head and near limbs; far limbs are darker) and checks
// they are where a match puts them.
func checkScreenshot(t *testing.T, img image.Image) {
	var (
		arenaCol = color.RGBA{112, 98, 82, 255}
		f1       = color.RGBA{66, 135, 245, 255}
		f2       = color.RGBA{235, 80, 70, 255}
	)
	const topBar = 64
	b := img.Bounds()
	if b.Dx() < 1280 || b.Dy() < 720 {
		t.Fatalf("screenshot is %v", b)
	}
	var arena, p1, p2 region
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := img.At(x, y)
			switch {
			case near(c, arenaCol):
				arena.add(x, y)
			case y < topBar:
			case near(c, f1):
				p1.add(x, y)
			case near(c, f2):
				p2.add(x, y)
			}
		}
	}
	t.Logf("arena %d px in %v; fighter 1 %d px in %v; fighter 2 %d px in %v", arena.n, arena.box, p1.n, p1.box, p2.n, p2.box)
	total := b.Dx() * b.Dy()
	if arena.n < total/10 || arena.box.Dx() < b.Dx()/2 || arena.box.Dy() < b.Dy()/2 {
		t.Fatalf("no arena: %d px of its colour in %v", arena.n, arena.box)
	}
	// The interior: inside the walls, above the ground (the arena's
	// colour frames it; its bottom quarter is ground).
	interior := image.Rect(arena.box.Min.X+20, topBar, arena.box.Max.X-20, arena.box.Max.Y-20)
	for i, p := range []region{p1, p2} {
		if p.n < 300 {
			t.Errorf("fighter %d: %d pixels of its colour", i+1, p.n)
			continue
		}
		if !p.box.In(interior) {
			t.Errorf("fighter %d at %v, outside the arena's interior %v", i+1, p.box, interior)
		}
		// A standing or fallen ragdoll: neither a speck nor the screen.
		if p.box.Dx() > b.Dx()/3 || p.box.Dy() > b.Dy()/2 {
			t.Errorf("fighter %d spans %v: not a fighter", i+1, p.box)
		}
	}
}
