package main

import (
	"bytes"
	"encoding/json"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/demo/internal/demotest"
	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/physics"
)

// The demo is tested as users run it: the real binary, its flags, its
// output. Everything stays on loopback: the embedded signaling server
// listens on 127.0.0.1:0 and WebRTC, given a loopback signaling URL,
// gathers loopback candidates only.

// demoBinary builds the demo and, next to it, its window program, once per
// test binary (with -race when the tests run with it).
func demoBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped in -short mode: it builds and runs the demo's binaries")
	}
	demotest.Binary(t, demotest.WindowPkg, demotest.RaceOn)
	return demotest.Binary(t, demotest.DemoPkg, demotest.RaceOn)
}

func TestMain(m *testing.M) {
	code := m.Run()
	demotest.Cleanup()
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

// The window tests run the window program under a virtual X server and
// judge what it drew only in frames known to show what they check: a
// screenshot taken after the game logged the state it checks, and that
// differs from an earlier such screenshot, shows a frame drawn in that
// state (a window drawing at 0.1 frames per second can show a frame of
// long before). What a single instant may or may not catch (a hit's
// sparks) is judged by the game's state in its log.

// windowDemo starts the window program (the demo, which runs it, with
// args) on a virtual X server and returns it and the display.
func windowDemo(t *testing.T, args ...string) (*demotest.Proc, string) {
	t.Helper()
	bin := demoBinary(t)
	display := demotest.Xvfb(t)
	cmd := exec.CommandContext(testwait.Context(t), bin, args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "DISPLAY=") && !strings.HasPrefix(e, "WAYLAND_DISPLAY=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "DISPLAY="+display)
	cmd.WaitDelay = 10 * time.Second
	return demotest.Start(t, "demo", cmd), display
}

// maxShots bounds the screenshots a window test takes waiting for a frame
// it can judge: attempts, not time.
const maxShots = 150

// keepShots writes the screenshots to $DEMO_SCREENSHOTS, if set.
func keepShots(t *testing.T, shots map[string][]byte) {
	dir := os.Getenv("DEMO_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range shots {
		if b == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Logf("screenshots in %s", dir)
}

// TestWindowWaiting opens the window with nobody to pair with: it shows
// that it waits for a rival, how one joins, and the controls. The waiting
// screen stays until a rival comes, so screenshots are taken after the
// demo logged that it waits until one shows it, at most maxShots.
func TestWindowWaiting(t *testing.T) {
	p, display := windowDemo(t, "-listen", "127.0.0.1:0")
	p.WaitLog(t, 0, "looking for a rival")
	var warn, panel int
	var png []byte
	for i := 0; i < maxShots; i++ {
		img, b := demotest.Screenshot(t, display)
		warn = demotest.Count(img, demotest.ColWarn, img.Bounds()).N
		// The controls panel at the bottom right: its heading in ColWarn.
		panel = demotest.Count(img, demotest.ColWarn, image.Rect(900, 400, 1280, 720)).N
		png = b
		if warn >= 300 && panel >= 50 {
			t.Logf("the waiting screen in screenshot %d", i+1)
			break
		}
	}
	keepShots(t, map[string][]byte{"waiting": png})
	if warn < 300 {
		t.Errorf("no waiting line in %d screenshots (%d px of its colour)", maxShots, warn)
	}
	if panel < 50 {
		t.Errorf("no controls panel in %d screenshots (%d px of its heading's colour at the bottom right)", maxShots, panel)
	}
}

// TestWindowFight opens the real window with a bot rival and the net HUD
// and plays a round, which the bot ends by knocking the idle player out
// (or, on a machine too loaded to tick enough, on time). The game's log
// says what happened: the round set, hits dealt and taken (the summaries
// of -log-summaries) and the round's end. The screenshots are judged
// where the frame is known: a frame drawn during the fight (after the
// round's start, before its end) shows the arena, both fighters large and
// with volume, the HUD's net graph below the world and no fighter over
// it; a frame drawn after the round's end shows the K.O. text or the
// result's head line.
func TestWindowFight(t *testing.T) {
	p, display := windowDemo(t, "-bot", "-hud", "-log-summaries", "-listen", "127.0.0.1:0")
	_, from := p.WaitLog(t, 0, "round set", "peer=you")
	// The countdown's banner covers the middle of the world: frames are
	// judged from the fight's start on (the game's clock follows the
	// wall clock).
	if l, _ := p.Lines(from - 1); len(l) > 0 {
		if d, ok := attrDuration(l[0], "starts_in="); ok {
			time.Sleep(d + time.Second)
		}
	}

	// The fight: screenshots until the round is over; the first is the
	// reference, and each that differs from the one before is a frame
	// drawn during the fight.
	var mid image.Image
	var midPNG []byte
	known, bestN, sparkN := 0, -1, 0
	over := func() bool { return p.Find(from, "round over", "peer=you") >= 0 }
	var prev image.Image
	for shots := 0; !over() && known < 6 && shots < maxShots; shots++ {
		img, b := demotest.Screenshot(t, display)
		if over() {
			break // the frame may be of the round's end
		}
		if prev != nil && !demotest.SamePixels(prev, img) {
			known++
			if n := demotest.FightersShown(img); n > bestN {
				mid, midPNG, bestN = img, b, n
			}
			world := image.Rect(0, demotest.TopBar, 1280, demotest.HUDTop)
			sparkN = max(sparkN, demotest.Count(img, demotest.ColSpark, world).N+demotest.Count(img, demotest.ColSparkHi, world).N)
		}
		prev = img
	}
	if known == 0 {
		t.Fatalf("no frame drawn during the fight (%d screenshots)", maxShots)
	}
	t.Logf("%d frames of the fight judged; at most %d px of hit sparks in them", known, sparkN)
	checkScreenshot(t, mid)
	hud := image.Rect(0, demotest.HUDTop, 1280, 720)
	if a := demotest.Count(mid, demotest.ColAge, hud); a.N < 50 {
		t.Errorf("no net graph in the HUD (%d px of the state age's colour)", a.N)
	}
	if f := demotest.Count(mid, demotest.ColF1, hud); f.N > 0 {
		t.Errorf("a fighter drawn over the HUD (%d px)", f.N)
	}

	// The round's end, from the log, and hits in the summaries. A KO
	// takes ticks: a loaded machine can tick so slowly that the round
	// ends on time first (the result's banner then says so), and hits
	// are asserted once it played fightTicks, as in the headless tests.
	_, end := p.WaitLog(t, from, "round over", "peer=you")
	l, _ := p.Lines(end - 1)
	result := l[0]
	byKO := strings.Contains(result, "by KO") || strings.Contains(result, "double KO")
	_, sum := p.WaitLog(t, end, "msg=summary", "player=you")
	l, _ = p.Lines(sum - 1)
	s, ok := demotest.ParseSummary(l[0])
	if !ok {
		t.Fatalf("summary line: %s", l[0])
	}
	t.Logf("summary: %s, round %d, %d ticks, hits dealt %d, taken %d, %q", s.Peer, s.Round, s.Ticks, s.HitsDealt, s.HitsTaken, s.Rounds)
	if len(s.Rounds) == 0 || !strings.HasPrefix(s.Rounds[0], "round 1: ") {
		t.Errorf("no result of round 1 in the summary: %q", s.Rounds)
	}
	switch {
	case s.Ticks >= fightTicks && s.HitsDealt+s.HitsTaken == 0:
		t.Errorf("no hit landed in %d ticks", s.Ticks)
	case !byKO:
		t.Logf("the round ended on time, not by KO, after %d ticks (a loaded machine): %s", s.Ticks, result)
	}
	for _, line := range strings.Split(p.Log(), "\n") {
		if i := strings.Index(line, "tps="); i >= 0 && strings.Contains(line, "peer=you") {
			j := strings.Index(line[i:], " path=")
			if j < 0 {
				j = min(len(line)-i, 30)
			}
			t.Logf("periodic line: %s", line[i:i+j])
		}
	}

	// After the round's end: the K.O. text (after a KO), then the
	// result's banner, until the player asks for a rematch (nobody does
	// here).
	var koPNG []byte
	koN, bannerN := 0, 0
	prev = nil
	for shots := 0; koPNG == nil && shots < maxShots; shots++ {
		img, b := demotest.Screenshot(t, display)
		if prev != nil && !demotest.SamePixels(prev, img) {
			world := image.Rect(0, demotest.TopBar, 1280, demotest.HUDTop)
			// The K.O. text and a loss's head line are in ColBad, a
			// win's in ColGood.
			koN = demotest.Count(img, demotest.ColBad, world).N
			bannerN = max(koN, demotest.Count(img, demotest.ColGood, world).N)
			koPNG = b
		}
		prev = img
	}
	keepShots(t, map[string][]byte{"fight-hud": midPNG, "ko": koPNG})
	if koPNG == nil {
		t.Fatalf("no frame drawn after the round's end (%d screenshots)", maxShots)
	}
	// The K.O. text is large (1500 px and more); the result's head line
	// ("YOU LOSE by KO", about 850 px) is smaller. A draw's is in ColWarn.
	if !strings.Contains(result, "draw") {
		t.Logf("after the round's end: %d px of the colour of the K.O. text and a loss, %d px of the result's head line", koN, bannerN)
		if bannerN < resultBannerPx {
			t.Errorf("neither the K.O. text nor the result's head line in a frame drawn after the round's end (%d px)", bannerN)
		}
	}
}

// resultBannerPx is the least the result's head line shows of its colour.
const resultBannerPx = 300

// attrDuration reads a duration attribute (name=1.5s) of a log line.
func attrDuration(line, name string) (time.Duration, bool) {
	i := strings.Index(line, name)
	if i < 0 {
		return 0, false
	}
	v := strings.Fields(line[i+len(name):])
	if len(v) == 0 {
		return 0, false
	}
	d, err := time.ParseDuration(v[0])
	return d, err == nil
}

// checkScreenshot finds the arena (walls and ground) and the two fighters'
// colours (torso, head and near limbs; far limbs are darker) and checks
// they are where a match puts them, framed large by the camera: each
// fighter spans at least 120 px (with the HUD on; the camera keeps 2 m of
// sky above the heads for the banners, so a standing fighter is about
// 150 px tall) and fills thousands of pixels (a body with volume, not a
// stick figure, which would be a few hundred).
func checkScreenshot(t *testing.T, img image.Image) {
	b := img.Bounds()
	if b.Dx() < 1280 || b.Dy() < 720 {
		t.Fatalf("screenshot is %v", b)
	}
	world := image.Rect(0, demotest.TopBar, 1280, demotest.HUDTop)
	arena := demotest.Count(img, demotest.ColArena, world)
	p1, p2 := demotest.Count(img, demotest.ColF1, world), demotest.Count(img, demotest.ColF2, world)
	t.Logf("arena %d px in %v; fighter 1 %d px in %v; fighter 2 %d px in %v", arena.N, arena.Box, p1.N, p1.Box, p2.N, p2.Box)
	if arena.N < 20000 || arena.Box.Dx() < b.Dx()/2 {
		t.Fatalf("no arena: %d px of its colour in %v", arena.N, arena.Box)
	}
	ground := arena.Box.Max.Y
	for i, p := range []demotest.Region{p1, p2} {
		if p.N < 2000 {
			t.Errorf("fighter %d: %d pixels of its colour", i+1, p.N)
			continue
		}
		if p.Box.Dy() < 120 && p.Box.Dx() < 120 {
			t.Errorf("fighter %d spans only %v: too small", i+1, p.Box)
		}
		if p.Box.Max.Y > ground || p.Box.Min.Y < demotest.TopBar {
			t.Errorf("fighter %d at %v, outside the world (ground at y=%d)", i+1, p.Box, ground)
		}
	}
}
