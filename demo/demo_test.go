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
	// countdown run out and the fight start, then screenshot. The wait for
	// the round has no limit but the test binary's deadline (each check
	// takes at least 0.1 s); the countdown is 3 s of game time, which
	// follows the wall clock, so 4.5 s later the fight has started however
	// slowly the machine draws it.
	polls := 1 << 30
	if d, ok := testwait.Deadline(t); ok {
		polls = int(time.Until(d) / (100 * time.Millisecond))
	}
	script := fmt.Sprintf(`%q -bot -listen 127.0.0.1:0 >%q 2>&1 &
pid=$!
i=0
while ! grep -q 'round set.*peer=you' %q; do
  i=$((i+1)); if [ $i -gt %d ] || ! kill -0 $pid 2>/dev/null; then echo "demo did not start a round"; kill $pid 2>/dev/null; exit 1; fi
  sleep 0.1
done
sleep 4.5
import -window root %q
rc=$?
kill $pid
wait $pid 2>/dev/null
exit $rc
`, bin, logf, logf, polls, shot)
	cmd := exec.CommandContext(testwait.Context(t), "xvfb-run", "-a", "-s", "-screen 0 1280x720x24", "sh", "-c", script)
	cmd.WaitDelay = 10 * time.Second // after a kill at the deadline
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
