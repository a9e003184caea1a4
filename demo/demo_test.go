package main

import (
	"bytes"
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
	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/physics"
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

// The headless runs below play on the demo's shared game clock, which
// follows the wall clock: a round lasts its -round of game time whatever
// the machine's speed. What the tests check about the play itself (a hit
// landed, the fighters moved, the periodic log) depends on how many game
// ticks the machine ran in that time, so the tests measure that with the
// demo's own counters (its ticks over its seconds of play) and, when a
// loaded machine ran too few, play again with the round and the run
// lengthened to get the ticks: a slow machine makes these tests slower,
// never red. Waits have no time limit but the test binary's (testwait).

// designRate is the tick rate (ticks per second of game time) the figures
// below were tuned at: 60 Hz with a little slack, as a headless run keeps
// on an idle machine.
const designRate = 55

// fightTicks is how many ticks a round must last for the bots to fight
// (close in, hit, be hit): a 5 s round at designRate.
const fightTicks = 5 * designRate

// netLogTicks is how many ticks pass between two periodic net summaries
// in the log (game.LogEvery of ticks at physics.TickRate).
var netLogTicks = uint64(game.LogEvery.Seconds() * physics.TickRate)

// runHeadless runs the demo headless against its bot with args (after
// -headless -bot -listen 127.0.0.1:0 -json, and a -connect-timeout as long
// as the test binary has left) and returns its report and output. It fails
// the test if the demo fails or prints no report.
func runHeadless(t *testing.T, bin string, args ...string) (rep game.RunReport, out, stderr string) {
	t.Helper()
	base := []string{"-headless", "-bot", "-listen", "127.0.0.1:0", "-json"}
	if d, ok := testwait.Deadline(t); ok {
		base = append(base, "-connect-timeout", max(time.Until(d), time.Second).Round(time.Second).String())
	}
	var outBuf, errBuf bytes.Buffer
	cmd := exec.CommandContext(testwait.Context(t), bin, append(base, args...)...)
	cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
	cmd.WaitDelay = 10 * time.Second // after a kill at the deadline
	err := cmd.Run()
	out, stderr = outBuf.String(), errBuf.String()
	t.Logf("demo %s:\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("demo: %v\nstderr:\n%s", err, stderr)
	}
	i := strings.Index(out, "\n{")
	if i < 0 {
		t.Fatalf("no JSON summary in the output")
	}
	if err := json.Unmarshal([]byte(out[i+1:]), &rep); err != nil {
		t.Fatalf("summary: %v", err)
	}
	if len(rep.Players) != 2 {
		t.Fatalf("run: %+v", rep)
	}
	return rep, out, stderr
}

// tickRate returns the rate at which a player's game ticked over its
// seconds of play, from the demo's own counters.
func tickRate(p game.Summary) float64 {
	if p.Seconds <= 0 {
		return 0
	}
	return float64(p.Ticks) / p.Seconds
}

// slowest returns the lower tick rate of the two players.
func slowest(rep game.RunReport) float64 {
	return min(tickRate(rep.Players[0]), tickRate(rep.Players[1]))
}

// timeLeft reports whether the test binary has at least d left.
func timeLeft(t *testing.T, d time.Duration) bool {
	dl, ok := testwait.Deadline(t)
	return !ok || time.Until(dl) > d
}

// matchLength is the -duration of a bot match whose rounds last round:
// the 3 s countdown, the round, the bots' rematch 3 s after the result,
// and slack (2 s per 5 s of round) for the result and the rematch to
// cross the network, so that the run stops as round 2 is set.
func matchLength(round time.Duration) time.Duration {
	return game.DefaultCountdown + round + 3*time.Second + 2*round/5
}

// TestHeadlessBotMatch plays a short bot-against-bot match through the full
// stack (embedded signaling on loopback, real WebRTC, two worlds and
// Matches) and checks the figures the demo prints. A 5 s round: countdown
// 3 s, fight 5 s, result, bots ask for a rematch 3 s later; the match stops
// as round 2 is set. If the machine ran fewer than fightTicks ticks in the
// round (or too few for a periodic net summary), the figures that need
// play are not yet meaningful: it plays again with a round long enough in
// ticks at the rate the demo measured.
func TestHeadlessBotMatch(t *testing.T) {
	bin := demoBinary(t)
	round := 5 * time.Second
	for {
		dur := matchLength(round)
		rep, out, stderr := runHeadless(t, bin, "-duration", dur.String(), "-round", round.String())
		checkBotMatch(t, rep, out, stderr, dur)
		if t.Failed() {
			return
		}
		rate := slowest(rep)
		played := rate * round.Seconds()
		minTicks := min(rep.Players[0].Ticks, rep.Players[1].Ticks)
		if played >= fightTicks && minTicks >= netLogTicks {
			t.Logf("%.0f ticks/s: about %.0f ticks in the round, %d in the run", rate, played, minTicks)
			checkBotMatchPlay(t, rep, stderr)
			return
		}
		// A loaded machine: lengthen the round to fightTicks at the rate
		// measured (with a quarter to spare), and the run with it.
		next := time.Duration(1.25 * fightTicks / max(rate, 1) * float64(time.Second)).Round(time.Second)
		next = min(max(next, round+time.Second), game.MaxRoundLength)
		t.Logf("the game ticked at %.0f/s: about %.0f ticks in a %v round, %d in the run; playing again with a %v round",
			rate, played, round, minTicks, next)
		if !timeLeft(t, 2*matchLength(next)) {
			t.Fatalf("the game ticks at %.0f/s, too slowly to play a round of %d ticks before the test binary's deadline", rate, fightTicks)
		}
		round = next
	}
}

// checkBotMatch checks what a bot match shows whatever the machine's speed.
func checkBotMatch(t *testing.T, rep game.RunReport, out, stderr string, dur time.Duration) {
	t.Helper()
	i := strings.Index(out, "\n{")
	// The human-readable summary comes first.
	for _, want := range []string{"ragsync demo, headless:", "bot-1 (peer 1, offerer): ", "bot (peer 2, answerer): ", "goroutines:"} {
		if !strings.Contains(out[:i], want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if rep.Seconds < dur.Seconds() || !rep.Embedded || !strings.HasPrefix(rep.Signal, "http://127.0.0.1:") {
		t.Fatalf("run: %+v", rep)
	}
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
		// The copy of the rival stays close to the rival's own states.
		if p.ErrRMSm <= 0 || p.ErrRMSm > 0.15 || p.ErrMaxm > 1.5 {
			t.Errorf("%s: rival error rms %.3f m, max %.3f m", p.Peer, p.ErrRMSm, p.ErrMaxm)
		}
		// The game ticked (how often per second is the machine's
		// business), with a synced clock, and took every packet.
		if !p.ClockSynced || p.Ticks == 0 || p.Rejected != 0 {
			t.Errorf("%s: clock synced %v, ticks %d, rejected %d", p.Peer, p.ClockSynced, p.Ticks, p.Rejected)
		}
	}
	// Both peers agree on round 1's result, decided over the network.
	a, b := rep.Players[0], rep.Players[1]
	if len(a.Rounds) == 0 || len(b.Rounds) == 0 || a.Rounds[0] != b.Rounds[0] || !strings.HasPrefix(a.Rounds[0], "round 1:") {
		t.Errorf("round results %q / %q", a.Rounds, b.Rounds)
	}
	if a.Round != 2 || b.Round != 2 {
		t.Errorf("rematch: rounds %d / %d, want 2", a.Round, b.Round)
	}
}

// checkBotMatchPlay checks what a bot match shows once it ran enough ticks:
// fightTicks in the round, netLogTicks in the run.
func checkBotMatchPlay(t *testing.T, rep game.RunReport, stderr string) {
	t.Helper()
	if !strings.Contains(stderr, "msg=net ") {
		t.Errorf("no periodic net summary in the log:\n%s", stderr)
	}
	var hits uint64
	for _, p := range rep.Players {
		// Both fighters moved, in both worlds.
		for f, m := range p.Moved {
			if m < 0.3 {
				t.Errorf("%s: fighter %d moved only %.2f m", p.Peer, f+1, m)
			}
		}
		hits += p.HitsTaken
	}
	if hits == 0 {
		t.Error("no hit landed in the whole match")
	}
}

// TestHeadlessImpaired checks that -lag and -loss reach the game's packets
// in both directions (-bot: both peers impair what they send).
func TestHeadlessImpaired(t *testing.T) {
	bin := demoBinary(t)
	// Enough ticks for the loss to show (10% of the rival's states) and
	// the mean state age to settle: 5 s at designRate. A loaded machine
	// plays longer to get them.
	const wantTicks = 5 * designRate
	dur := 5 * time.Second
	var rep game.RunReport
	for {
		rep, _, _ = runHeadless(t, bin, "-duration", dur.String(), "-lag", "120ms", "-jitter", "10ms", "-loss", "0.1")
		rate := slowest(rep)
		if rate*dur.Seconds() >= wantTicks {
			break
		}
		next := time.Duration(1.25 * wantTicks / max(rate, 1) * float64(time.Second)).Round(time.Second)
		next = max(next, dur+time.Second)
		t.Logf("the game ticked at %.0f/s, %.0f ticks in %v; playing again for %v", rate, rate*dur.Seconds(), dur, next)
		if !timeLeft(t, 2*next) {
			t.Fatalf("the game ticks at %.0f/s, too slowly to play %d ticks before the test binary's deadline", rate, wantTicks)
		}
		dur = next
	}
	for _, p := range rep.Players {
		// 60 ms one way, plus the wait for the receiver's next tick and the
		// machine's scheduling: 90 ms at 60 Hz, scaled with the mean tick
		// interval the demo measured (a loaded machine ticks less often,
		// and a state waits longer to be read). The session's own pings
		// are not impaired, so the link RTT stays a loopback one.
		interval := time.Duration(float64(time.Second) / tickRate(p))
		slack := 90 * time.Millisecond * max(interval, physics.TickDuration) / physics.TickDuration
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		if p.StateAgeMs < 50 || p.StateAgeMs > ms(60*time.Millisecond+slack) || p.Impair == "" {
			t.Errorf("%s: rival states %.1f ms old with a 120 ms round trip added (%q; allowed 50..%.0f ms at %v per tick)",
				p.Peer, p.StateAgeMs, p.Impair, ms(60*time.Millisecond+slack), interval.Round(time.Millisecond))
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

// TestNoDisplay: without a display the demo says what to do instead
// (-headless, xvfb-run) and exits non-zero, without a panic or a goroutine
// dump; the window program itself, given a display that does not exist,
// says the same.
func TestNoDisplay(t *testing.T) {
	bin := demoBinary(t)
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "DISPLAY=") && !strings.HasPrefix(e, "WAYLAND_DISPLAY=") {
			env = append(env, e)
		}
	}
	for _, c := range []struct {
		name string
		bin  string
		env  []string
	}{
		{"demo without DISPLAY", bin, env},
		{"window on a display that does not exist", filepath.Join(filepath.Dir(bin), "demo-window"), append(env, "DISPLAY=:4242")},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.CommandContext(testwait.Context(t), c.bin, "-bot", "-listen", "127.0.0.1:0")
			cmd.Env = c.env
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() == 0 {
				t.Fatalf("exit: %v, want a non-zero exit code\n%s", err, out)
			}
			s := string(out)
			for _, want := range []string{"display", "-headless", "xvfb-run"} {
				if !strings.Contains(s, want) {
					t.Errorf("the message lacks %q:\n%s", want, s)
				}
			}
			for _, bad := range []string{"goroutine ", "panic", ".go:"} {
				if strings.Contains(s, bad) {
					t.Errorf("the output has %q:\n%s", bad, s)
				}
			}
		})
	}
}

// Colours the window test looks for (ui's palette; solid, not anti-aliased).
var (
	colArena   = color.RGBA{112, 98, 82, 255}
	colF1      = color.RGBA{66, 135, 245, 255}
	colF2      = color.RGBA{235, 80, 70, 255}
	colWarn    = color.RGBA{255, 196, 64, 255}
	colBad     = color.RGBA{255, 96, 80, 255} // the K.O. text
	colSpark   = color.RGBA{255, 236, 150, 255}
	colSparkHi = color.RGBA{255, 255, 255, 255}
	colAge     = color.RGBA{255, 210, 90, 255} // the HUD graph's state age
)

const (
	topBar = 64
	hudTop = 720 - 250 // the net HUD's top edge
)

// xvfbScript runs script (sh) under xvfb-run on a 1280×720 screen; it
// skips the test if the tools are missing.
func xvfbScript(t *testing.T, script string) {
	t.Helper()
	for _, tool := range []string{"xvfb-run", "import"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (run make deps, which installs xvfb, xauth and imagemagick): %v", tool, err)
		}
	}
	cmd := exec.CommandContext(testwait.Context(t), "xvfb-run", "-a", "-s", "-screen 0 1280x720x24", "sh", "-c", script)
	cmd.WaitDelay = 10 * time.Second // after a kill at the deadline
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("xvfb-run: %v\n%s", err, out)
	}
}

// polls is how many 0.1 s waits fit before the test binary's deadline.
func polls(t *testing.T) int {
	if d, ok := testwait.Deadline(t); ok {
		return max(int(time.Until(d)/(100*time.Millisecond))-100, 10)
	}
	return 1 << 30
}

// keepShots copies the screenshots to $DEMO_SCREENSHOTS, if set.
func keepShots(t *testing.T, shots map[string]string) {
	dir := os.Getenv("DEMO_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range shots {
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("screenshots in %s", dir)
}

func loadPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// count finds the pixels of colour c inside r.
func count(img image.Image, c color.RGBA, r image.Rectangle) region {
	var out region
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if near(img.At(x, y), c) {
				out.add(x, y)
			}
		}
	}
	return out
}

// TestWindowWaiting opens the window with nobody to pair with: it shows
// that it waits for a rival, how one joins, and the controls.
func TestWindowWaiting(t *testing.T) {
	bin := demoBinary(t)
	dir := t.TempDir()
	shot, logf := filepath.Join(dir, "waiting.png"), filepath.Join(dir, "demo.log")
	xvfbScript(t, fmt.Sprintf(`%q -listen 127.0.0.1:0 >%q 2>&1 &
pid=$!
i=0
while ! grep -q 'looking for a rival' %q; do
  i=$((i+1)); if [ $i -gt %d ] || ! kill -0 $pid 2>/dev/null; then echo "the demo did not wait for a rival"; cat %q; kill $pid; exit 1; fi
  sleep 0.1
done
sleep 1
import -window root %q
rc=$?
kill $pid
wait $pid 2>/dev/null
exit $rc
`, bin, logf, logf, polls(t), logf, shot))
	keepShots(t, map[string]string{"waiting": shot})
	img := loadPNG(t, shot)
	if w := count(img, colWarn, img.Bounds()); w.n < 300 {
		t.Errorf("no waiting line (%d px of its colour)", w.n)
	}
	// The controls panel at the bottom right: its heading in colWarn.
	if c := count(img, colWarn, image.Rect(900, 400, 1280, 720)); c.n < 50 {
		t.Errorf("no controls panel (%d px of its heading's colour at the bottom right)", c.n)
	}
}

// TestWindowFight opens the real window under Xvfb with a bot rival and the
// net HUD, screenshots it through the fight until a KO, and checks a shot
// mid-fight (the arena, both fighters large and with volume, the HUD below
// the world), one with hit sparks and one of the KO moment. It logs the
// game's tick and frame rates from the demo's periodic lines.
func TestWindowFight(t *testing.T) {
	bin := demoBinary(t)
	dir := t.TempDir()
	logf := filepath.Join(dir, "demo.log")
	xvfbScript(t, fmt.Sprintf(`cd %q
%q -bot -hud -listen 127.0.0.1:0 >demo.log 2>&1 &
pid=$!
i=0
while ! grep -q 'round set.*peer=you' demo.log; do
  i=$((i+1)); if [ $i -gt %d ] || ! kill -0 $pid 2>/dev/null; then echo "the demo did not start a round"; cat demo.log; kill $pid; exit 1; fi
  sleep 0.1
done
sleep 4.5
for k in 1 2 3 4; do import -window root mid-$k.png; sleep 0.4; done
n=0
while ! grep -q 'round over.*peer=you.*KO' demo.log; do
  n=$((n+1)); if [ $n -gt %d ] || ! kill -0 $pid 2>/dev/null; then echo "no KO"; cat demo.log; kill $pid; exit 1; fi
  import -window root shot-$n.png
done
import -window root shot-ko1.png
import -window root shot-ko2.png
kill $pid
wait $pid 2>/dev/null
exit 0
`, dir, bin, polls(t), polls(t)/3))
	logs, _ := os.ReadFile(logf)
	for _, l := range strings.Split(string(logs), "\n") {
		if strings.Contains(l, "peer=you") && strings.Contains(l, "tps=") {
			i := strings.Index(l, "tps=")
			j := strings.Index(l[i:], " path=")
			if j < 0 {
				j = min(len(l)-i, 30)
			}
			t.Logf("periodic line: %s", l[i:i+j])
		}
	}
	// A single instant can catch a fighter flashed white by a hit or
	// curled up on the ground, so of four shots mid-fight the one that
	// shows the most of both fighters is checked.
	midPath, mid := bestMidShot(t, dir)
	checkScreenshot(t, mid)
	if a := count(mid, colAge, image.Rect(0, hudTop, 1280, 720)); a.n < 50 {
		t.Errorf("no net graph in the HUD (%d px of the state age's colour)", a.n)
	}
	if f := count(mid, colF1, image.Rect(0, hudTop, 1280, 720)); f.n > 0 {
		t.Errorf("a fighter drawn over the HUD (%d px)", f.n)
	}
	// The shot with the most of the K.O. text's colour, and among the
	// others (a hit before the KO) the one with the most spark pixels.
	shots, _ := filepath.Glob(filepath.Join(dir, "shot-*.png"))
	world := image.Rect(0, topBar, 1280, hudTop)
	var hitShot, koShot string
	var hitN, koN int
	for _, p := range shots {
		img := loadPNG(t, p)
		ko := count(img, colBad, world).n
		if ko > koN {
			koN, koShot = ko, p
		}
		if n := count(img, colSpark, world).n + count(img, colSparkHi, world).n; n > hitN && ko < 500 {
			hitN, hitShot = n, p
		}
	}
	t.Logf("%d shots; the hit: %s (%d spark px); the KO: %s (%d px of the K.O. text)", len(shots), filepath.Base(hitShot), hitN, filepath.Base(koShot), koN)
	keepShots(t, map[string]string{"fight-hud": midPath, "hit": hitShot, "ko": koShot})
	if hitN < 40 {
		t.Errorf("no hit sparks in any of %d shots (at most %d px)", len(shots), hitN)
	}
	if koN < 1500 {
		t.Errorf("no K.O. text in any of %d shots (at most %d px)", len(shots), koN)
	}
}

// bestMidShot loads the mid-fight shots in dir and returns the one with
// the most pixels of the less visible fighter.
func bestMidShot(t *testing.T, dir string) (string, image.Image) {
	t.Helper()
	shots, _ := filepath.Glob(filepath.Join(dir, "mid-*.png"))
	if len(shots) == 0 {
		t.Fatal("no mid-fight screenshot")
	}
	var best string
	var bestImg image.Image
	bestN := -1
	for _, p := range shots {
		img := loadPNG(t, p)
		if n := fightersShown(img); n > bestN {
			best, bestImg, bestN = p, img, n
		}
	}
	return best, bestImg
}

// fightersShown is how many pixels of its colour the less visible fighter
// shows in the world region of a screenshot.
func fightersShown(img image.Image) int {
	world := image.Rect(0, topBar, 1280, hudTop)
	return min(count(img, colF1, world).n, count(img, colF2, world).n)
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
// they are where a match puts them, framed large by the camera: each
// fighter spans at least 150 px (with the HUD on) and fills thousands of pixels (a
// body with volume, not a stick figure).
func checkScreenshot(t *testing.T, img image.Image) {
	b := img.Bounds()
	if b.Dx() < 1280 || b.Dy() < 720 {
		t.Fatalf("screenshot is %v", b)
	}
	world := image.Rect(0, topBar, 1280, hudTop)
	arena := count(img, colArena, world)
	p1, p2 := count(img, colF1, world), count(img, colF2, world)
	t.Logf("arena %d px in %v; fighter 1 %d px in %v; fighter 2 %d px in %v", arena.n, arena.box, p1.n, p1.box, p2.n, p2.box)
	if arena.n < 20000 || arena.box.Dx() < b.Dx()/2 {
		t.Fatalf("no arena: %d px of its colour in %v", arena.n, arena.box)
	}
	ground := arena.box.Max.Y
	for i, p := range []region{p1, p2} {
		if p.n < 3000 {
			t.Errorf("fighter %d: %d pixels of its colour", i+1, p.n)
			continue
		}
		if p.box.Dy() < 150 && p.box.Dx() < 150 {
			t.Errorf("fighter %d spans only %v: too small", i+1, p.box)
		}
		if p.box.Max.Y > ground || p.box.Min.Y < topBar {
			t.Errorf("fighter %d at %v, outside the world (ground at y=%d)", i+1, p.box, ground)
		}
	}
}
