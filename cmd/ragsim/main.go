// Command ragsim plays whole matches between two full ragsync peers over an
// impaired network, in virtual time, and measures how well each peer's copy of
// the rival follows the rival's true state.
//
// Each peer has its own Box2D world, its own bot-controlled fighter, a local
// clock (B's runs -skew-ppm faster, up to ±5,000 ppm, and starts 10 s off)
// by which it ticks, as the demo does, a clocksync
// calibrator, and a ragsync.Match with the real replicator, codec and
// correction. A shared crate changes owner when a fighter touches it. The
// packets cross a internal/netsim link; nothing touches a socket, and a run is
// deterministic: the same flags and seed print the same output.
//
//	go run ./cmd/ragsim -scenario all -method all -seconds 60 -seed 1 -json
//	go run ./cmd/ragsim -scenario custom -rtt 120ms -jitter 25ms -loss 0.03 -burst 3 -method ragsync
//
// Scenarios (round-trip figures; each direction gets half the RTT and half
// the jitter): lan (10 ms ± 1 ms), broadband (60 ms ± 10 ms, 1 % loss),
// mobile (150 ms ± 30 ms, 5 % loss, 1 % duplicates, reordering), spike
// (broadband with a 2 s blackout every 15 s), awful (300 ms ± 80 ms, 15 %
// loss); beyond netsim's presets: asym (10 ms ± 2 A→B, 80 ms ± 10 B→A, 1 %
// loss: the game clock is 35 ms off), bursty (broadband's delays, 1 %
// loss and 6 % more in bursts of 8 packets), drift (broadband with B's clock
// 1000 ppm fast), blackouts (broadband with a 0.5 s blackout every 4 s),
// handover (broadband with a 3 s blackout every 20 s); and
// custom (the -rtt, -jitter, -delay-ab, -delay-ba, -loss, -burst,
// -burst-loss, -dup, -reorder, -blackout flags). -scenario presets names
// the first five, extra the next five, all both.
//
// Methods: snap, midpoint, midpoint-spring ("seed" is accepted too: its
// former name), ragsync and follow (the default); see package correction.
//
// -seeds 1,2,3 plays every match with each seed and prints, per scenario and
// method, the mean of every figure over the seeds (seeds lists them).
//
// Output, one object per (scenario, method):
//
//	rms_error_m, p95_error_m  distance between each rival body on each peer,
//	                          where the game draws it (Replicator.Shown: the
//	                          body, or a method's smoothed pose), and its
//	                          owner's true position at the same game time
//	                          (the owner's ticks interpolated); the game
//	                          clocks agree only to within half the path's
//	                          asymmetry, which this hides
//	rms_true_m, p95_true_m    the same at the same true instant (the
//	                          simulator's master clock)
//	rms_body_true_m           rms_true_m for the physics bodies, which
//	                          collide and strike, rather than the drawn pose
//	visual_delay_ab_ms,       the lag d that best aligns B's copy of A's
//	visual_delay_ba_ms        objects with A (ab), and A's copy of B's with
//	                          B (ba): the copy at true time t is compared
//	                          with the owner at t − d, and d minimises the
//	                          rms distance (searched from −100 to 600 ms,
//	                          to 0.1 ms); rms_aligned_m is the rms at those
//	                          lags, the copy's distortion once its lag is
//	                          forgiven. On an asymmetric path the two
//	                          differ: each includes its own one-way delay
//	                          and, for methods that place the rival by game
//	                          time, the game clock's half-asymmetry bias
//	                          (package clocksync), with opposite signs
//	pop_p99_m, pop_max_m      the displacement the correction itself imposes
//	                          on a rival body in one tick (correction's
//	                          Stats.Pop: a teleport plus the velocity change
//	                          it makes over the tick), over every corrected
//	                          body and tick: what the eye sees as a pop
//	                          (ragsim has no round resets to leave out)
//	max_jump_m                the largest single-tick displacement of a rival
//	                          body beyond its true motion that tick (at the
//	                          same game time): a limb's velocity mismatch as
//	                          much as a teleport
//	hard_snaps_per_s          object corrections per second and peer that
//	                          used the hard path (position set)
//	clock_error_p95_ms        |game time A − game time B| at the same instant
//	hit_agreement, hits       share of distinct hits both peers registered
//	                          (same attacker, victim and attack), and how
//	                          many distinct hits there were
//	damage_agreement          of the hits seen on the attacker's screen (its
//	                          world saw its fighter land them) or applied as
//	                          damage (by the victim's owner: a confirmed hit
//	                          report or a hit its world detected), the share
//	                          that were both: |A ∩ D| / |A ∪ D|, paired as
//	                          for hit_agreement
//	refused                   the rival's states, hit reports, hits and
//	                          claims the rules of its own fighter refused
//	                          (ownership.Stats.Refused): 0 in honest play
//	kbps_per_direction        bytes sent per peer (states and clock pings)
//	position_disconnects      runs of critical position gaps (correction.Monitor)
//	loss_pct, transfers, kos, rejected   measured loss, crate claims, knockouts,
//	                          malformed, unauthorized and invalid states
//
// Rounds: 2 s after a fighter is knocked out (its owner sees it at once, the
// rival when the state arrives), each peer declares a new round through
// Match.ResetRound, which heals both fighters.
//
// The wall-clock speed (times faster than real time) goes to stderr, so the
// standard output stays reproducible.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ragsync/ragsync/correction"
	"github.com/ragsync/ragsync/internal/netsim"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ragsim:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

// presetScenarios in output order.
var presetScenarios = []string{"lan", "broadband", "mobile", "spike", "awful"}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ragsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "all", "a link: lan, broadband, mobile, spike, awful (netsim's presets), asym, bursty, drift, blackouts, handover (extra), custom (the -rtt... flags); or presets, extra, all (presets and extra); or a comma-separated list")
	method := fs.String("method", "all", "snap, midpoint, midpoint-spring, ragsync, follow, all, or a comma-separated list")
	seconds := fs.Float64("seconds", 60, "match length in virtual seconds")
	seed := fs.Uint64("seed", 1, "random seed (network, bots)")
	seedList := fs.String("seeds", "", "comma-separated seeds, e.g. 1,2,3: play each and print the mean of every figure per scenario and method (overrides -seed)")
	parallel := fs.Int("parallel", runtime.GOMAXPROCS(0), "matches played at once")
	asJSON := fs.Bool("json", false, "print one JSON object per line instead of a table")
	skew := fs.Float64("skew-ppm", 50, "how much faster peer B's clock runs, in ppm")
	rtt := fs.Duration("rtt", 60*time.Millisecond, "custom: round-trip time")
	jitter := fs.Duration("jitter", 0, "custom: round-trip jitter (± each way: half of it)")
	delayAB := fs.Duration("delay-ab", -1, "custom: one-way delay A→B (negative: half of -rtt)")
	delayBA := fs.Duration("delay-ba", -1, "custom: one-way delay B→A (negative: half of -rtt)")
	loss := fs.Float64("loss", 0, "custom: packet loss per direction (0..1)")
	burst := fs.Float64("burst", 0, "custom: mean length of loss bursts in packets; without -burst-loss, -loss comes in such bursts")
	burstLoss := fs.Float64("burst-loss", 0, "custom: share of packets lost inside bursts (of mean length -burst, default 4), on top of -loss's independent loss")
	dup := fs.Float64("dup", 0, "custom: duplicate probability (0..1)")
	reorder := fs.Float64("reorder", 0, "custom: probability that a packet is held back 20 ms (0..1)")
	var corr correction.Config
	def := corr.WithDefaults() // for the flags' help
	fs.Float64Var(&corr.Stiffness, "stiffness", 0, "correction spring stiffness k in 1/s² (0: the method's default)")
	fs.Float64Var(&corr.DampingRatio, "damping", 0, fmt.Sprintf("ragsync damping ratio ζ (0: %v, which with the default stiffness matches the target's velocity every tick)", def.DampingRatio))
	fs.Float64Var(&corr.MaxSoftError, "max-soft-error", 0, fmt.Sprintf("position error in m above which corrections snap (0: %v)", def.MaxSoftError))
	fs.Float64Var(&corr.HardBlend, "hard-blend", 0, fmt.Sprintf("share of the error a ragsync hard correction removes per tick (0: %v)", def.HardBlend))
	fs.Float64Var(&corr.MaxCorrectionSpeed, "max-correction-speed", 0, fmt.Sprintf("ragsync: cap on the spring's pull in m/s (0: %v, negative: none)", def.MaxCorrectionSpeed))
	fs.Float64Var(&corr.ImpactDeltaV, "impact-dv", 0, fmt.Sprintf("velocity change in m/s that counts as an impact (0: %v)", def.ImpactDeltaV))
	fs.Float64Var(&corr.PositionGain, "position-gain", 0, fmt.Sprintf("follow: share of the position error removed per tick (0: %v)", def.PositionGain))
	fs.Float64Var(&corr.VelocityGain, "velocity-gain", 0, fmt.Sprintf("follow: share of the velocity error removed per tick (0: %v)", def.VelocityGain))
	fs.Float64Var(&corr.SmoothingMaxStep, "smoothing-max-step", 0, fmt.Sprintf("how far in m the drawn pose may move per tick beyond its body's motion (0: %v for follow, no drawn pose for the others; negative: no drawn pose)", def.SmoothingMaxStep))
	fs.Float64Var(&corr.SmoothingMaxOffset, "smoothing-max-offset", 0, fmt.Sprintf("how far in m the drawn pose may lag its body, for states up to 40 ms old (0: %v)", def.SmoothingMaxOffset))
	fs.DurationVar(&corr.VelocityFade, "velocity-fade", 0, fmt.Sprintf("follow: time constant of a root body's velocity difference, for extrapolating it (0: %v, negative: none)", def.VelocityFade))
	fs.DurationVar(&corr.GainAge, "gain-age", 0, fmt.Sprintf("follow: states older than this get proportionally smaller gains (0: %v, negative: never)", def.GainAge))
	fs.DurationVar(&corr.InputHold, "input-hold", 0, fmt.Sprintf("follow: how long a remote fighter acts on its owner's last state and input (0: %v)", def.InputHold))
	fs.DurationVar(&corr.MaxExtrapolation, "max-extrapolation", 0, fmt.Sprintf("ragsync latency compensation cap (0: %v, negative: none)", def.MaxExtrapolation))
	blackout := fs.String("blackout", "", "custom: DURATION/PERIOD, e.g. 2s/15s: the link is down for DURATION every PERIOD")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if !(*seconds > 0) || *seconds > 24*3600 {
		return fmt.Errorf("%w: -seconds %v must be in (0, 86400]", errUsage, *seconds)
	}
	custom, err := customLink(linkFlags{rtt: *rtt, jitter: *jitter, delayAB: *delayAB, delayBA: *delayBA,
		loss: *loss, burst: *burst, burstLoss: *burstLoss, dup: *dup, reorder: *reorder, blackout: *blackout}, *skew)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	seeds := []uint64{*seed}
	if *seedList != "" {
		if seeds, err = parseSeeds(*seedList); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	if *parallel < 1 {
		return fmt.Errorf("%w: -parallel %d must be at least 1", errUsage, *parallel)
	}
	scenarios, err := parseScenarios(*scenario, custom, *skew)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	methods, err := parseMethods(*method)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := corr.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}

	var opts []Options
	for _, sc := range scenarios {
		for _, m := range methods {
			for _, sd := range seeds {
				opts = append(opts, Options{Scenario: sc, Method: m, Correction: corr, Duration: time.Duration(*seconds * float64(time.Second)), Seed: sd})
			}
		}
	}
	begin := time.Now()
	all, err := runAll(opts, *parallel)
	if err != nil {
		return err
	}
	wall := time.Since(begin)
	results := all
	if len(seeds) > 1 {
		results = nil
		for i := 0; i < len(all); i += len(seeds) {
			results = append(results, Mean(all[i:i+len(seeds)]))
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	} else {
		printTable(stdout, results)
	}
	virtual := *seconds * float64(len(all))
	fmt.Fprintf(stderr, "ragsim: %d matches, %.0f s of play in %.1f s: %.0f× faster than real time\n",
		len(all), virtual, wall.Seconds(), virtual/wall.Seconds())
	return nil
}

// runAll runs the matches, parallel at a time, keeping the output order.
func runAll(opts []Options, parallel int) ([]Result, error) {
	results := make([]Result, len(opts))
	errs := make([]error, len(opts))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = Run(o)
		}()
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// linkFlags are the custom link's flags.
type linkFlags struct {
	rtt, jitter, delayAB, delayBA        time.Duration
	loss, burst, burstLoss, dup, reorder float64
	blackout                             string
}

// customLink returns the custom scenario (its B→A direction differs only if
// -delay-ab and -delay-ba differ).
func customLink(f linkFlags, skew float64) (Scenario, error) {
	for name, p := range map[string]float64{"loss": f.loss, "dup": f.dup, "reorder": f.reorder, "burst-loss": f.burstLoss} {
		if !(p >= 0 && p <= 1) {
			return Scenario{}, fmt.Errorf("-%s %v must be in [0, 1]", name, p)
		}
	}
	if f.rtt < 0 || f.jitter < 0 {
		return Scenario{}, fmt.Errorf("-rtt and -jitter must not be negative")
	}
	if !(f.burst >= 0) || (f.burst > 0 && f.burst < 1) {
		return Scenario{}, fmt.Errorf("-burst %v must be 0 or at least 1 packet", f.burst)
	}
	c := netsim.RoundTrip(f.rtt, f.jitter, f.loss)
	switch {
	case f.burstLoss > 0:
		c.BurstLoss, c.BurstLen = f.burstLoss, f.burst
	case f.burst > 0:
		c.BurstLoss, c.BurstLen, c.Loss = f.loss, f.burst, 0
	}
	c.Duplicate = f.dup
	c.Reorder = f.reorder
	if f.blackout != "" {
		d, p, ok := strings.Cut(f.blackout, "/")
		dur, err1 := time.ParseDuration(d)
		per, err2 := time.ParseDuration(p)
		if !ok || err1 != nil || err2 != nil || dur <= 0 || per <= dur {
			return Scenario{}, fmt.Errorf("-blackout %q: want DURATION/PERIOD with 0 < DURATION < PERIOD, e.g. 2s/15s", f.blackout)
		}
		c.BlackoutFor, c.BlackoutEvery, c.BlackoutPhase = dur, per, per/2
	}
	ba := c
	if f.delayAB >= 0 {
		c.Latency = f.delayAB
	}
	if f.delayBA >= 0 {
		ba.Latency = f.delayBA
	}
	sc := Scenario{Name: "custom", Link: c, SkewPPM: skew}
	if ba.Latency != c.Latency {
		sc.BA = &ba
	}
	for _, cfg := range []*netsim.Config{&c, &ba} {
		if err := cfg.Validate(); err != nil {
			return Scenario{}, err
		}
	}
	return sc, nil
}

// parseSeeds parses a comma-separated list of seeds.
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("-seeds %q: %v", s, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// extraScenarios are links beyond netsim's presets, in output order. B's
// clock runs -skew-ppm fast in each, except drift's, which runs
// driftPPM fast.
var extraScenarios = []string{"asym", "bursty", "drift", "blackouts", "handover"}

const driftPPM = 1000

// maxSkewPPM bounds -skew-ppm: the drift clocksync tracks by default.
const maxSkewPPM = 5000

func extraScenario(name string, skew float64) Scenario {
	switch name {
	case "asym":
		// 90 ms round trip, but 10 ms A→B and 80 ms B→A: the game clock
		// is off by half the asymmetry (35 ms), which no endpoint can see.
		ab := netsim.Config{Latency: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.01}
		ba := netsim.Config{Latency: 80 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.01}
		return Scenario{Name: name, Link: ab, BA: &ba, SkewPPM: skew}
	case "bursty":
		// Broadband's delays, 1 % independent loss and 6 % more in bursts
		// of 8 packets on average (about 130 ms without states).
		c := netsim.Broadband
		c.BurstLoss, c.BurstLen = 0.06, 8
		return Scenario{Name: name, Link: c, SkewPPM: skew}
	case "drift":
		// Broadband with B's clock 1000 ppm fast (1 ms per second).
		return Scenario{Name: name, Link: netsim.Broadband, SkewPPM: driftPPM}
	case "blackouts":
		// Broadband with a 0.5 s blackout every 4 s.
		c := netsim.Broadband
		c.BlackoutFor, c.BlackoutEvery, c.BlackoutPhase = 500*time.Millisecond, 4*time.Second, 3*time.Second
		return Scenario{Name: name, Link: c, SkewPPM: skew}
	case "handover":
		// Broadband with a 3 s blackout every 20 s: a phone moving
		// between networks.
		c := netsim.Broadband
		c.BlackoutFor, c.BlackoutEvery, c.BlackoutPhase = 3*time.Second, 20*time.Second, 10*time.Second
		return Scenario{Name: name, Link: c, SkewPPM: skew}
	}
	panic("ragsim: unknown extra scenario " + name)
}

func parseScenarios(s string, custom Scenario, skew float64) ([]Scenario, error) {
	if !(skew >= -maxSkewPPM && skew <= maxSkewPPM) {
		return nil, fmt.Errorf("-skew-ppm %v must be within ±%d", skew, maxSkewPPM)
	}
	// A group name expands in place, so "presets,asym" works; a link named
	// twice is played once.
	var names []string
	for _, n := range strings.Split(s, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch n {
		case "all":
			names = append(names, presetScenarios...)
			names = append(names, extraScenarios...)
		case "presets":
			names = append(names, presetScenarios...)
		case "extra":
			names = append(names, extraScenarios...)
		default:
			names = append(names, n)
		}
	}
	var out []Scenario
	seen := make(map[string]bool)
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		switch {
		case n == "custom":
			out = append(out, custom)
		case slices.Contains(extraScenarios, n):
			out = append(out, extraScenario(n, skew))
		case slices.Contains(presetScenarios, n):
			cfg, err := netsim.Preset(n)
			if err != nil {
				return nil, err
			}
			out = append(out, Scenario{Name: n, Link: cfg, SkewPPM: skew})
		default:
			return nil, fmt.Errorf("unknown scenario %q (want %s, %s, custom, presets, extra or all)", n,
				strings.Join(presetScenarios, ", "), strings.Join(extraScenarios, ", "))
		}
	}
	return out, nil
}

func parseMethods(s string) ([]correction.Method, error) {
	if s == "all" {
		return correction.Methods, nil
	}
	var out []correction.Method
	for _, n := range strings.Split(s, ",") {
		m, err := correction.ParseMethod(strings.TrimSpace(n))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Mean returns the mean of every figure of rs (matches of one scenario and
// method with different seeds), with Seeds listing the seeds and Seed 0.
func Mean(rs []Result) Result {
	m := rs[0]
	mv := reflect.ValueOf(&m).Elem()
	seeds := make([]string, len(rs))
	for i, r := range rs {
		seeds[i] = strconv.FormatUint(r.Seed, 10)
		if i == 0 {
			continue
		}
		rv := reflect.ValueOf(r)
		for f := range mv.NumField() {
			if fv := mv.Field(f); fv.Kind() == reflect.Float64 {
				fv.SetFloat(fv.Float() + rv.Field(f).Float())
			}
		}
	}
	for f := range mv.NumField() {
		if fv := mv.Field(f); fv.Kind() == reflect.Float64 {
			fv.SetFloat(fv.Float() / float64(len(rs)))
		}
	}
	m.Seed, m.Seeds = 0, strings.Join(seeds, ",")
	return m
}

func printTable(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tmethod\trms m\tp95 m\trms true m\tp95 true m\tdelay ab ms\tdelay ba ms\taligned m\tpop p99 m\tpop max m\tmax jump m\thard/s\tclock p95 ms\thits\tagree\tkbps/dir\tpos disc\tloss %\tclaims\tKOs\tdmg agree\trefused\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f\t%.1f\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f\t%.2f\t%.0f\t%.0f%%\t%.1f\t%.0f\t%.1f\t%.0f\t%.0f\t%.0f%%\t%.0f\t\n",
			r.Scenario, r.Method, r.RMSErrorM, r.P95ErrorM, r.RMSTrueM, r.P95TrueM, r.VisualDelayABMs, r.VisualDelayBAMs, r.RMSAlignedM,
			r.PopP99M, r.PopMaxM, r.MaxJumpM, r.HardSnapsPerS, r.ClockErrorP95Ms,
			r.Hits, 100*r.HitAgreement, r.KbpsPerDirection, r.PositionDisconnects, r.LossPct, r.Transfers, r.KOs,
			100*r.DamageAgreement, r.Refused)
	}
	tw.Flush()
}
