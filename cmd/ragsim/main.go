// Command ragsim plays whole matches between two full ragsync peers over an
// impaired network, in virtual time, and measures how well each peer's copy of
// the rival follows the rival's true state.
//
// Each peer has its own Box2D world, its own bot-controlled fighter, a local
// clock (B's runs -skew-ppm faster and starts 10 s off), a clocksync
// calibrator, and a ragsync.Match with the real replicator, codec and
// correction. A shared crate changes owner when a fighter touches it. The
// packets cross a p2p/netsim link; nothing touches a socket, and a run is
// deterministic: the same flags and seed print the same output.
//
//	go run ./cmd/ragsim -scenario all -method all -seconds 60 -seed 1 -json
//	go run ./cmd/ragsim -scenario custom -rtt 120ms -jitter 25ms -loss 0.03 -burst 3 -method ragsync
//
// Scenarios (round-trip figures; each direction gets half the RTT and half
// the jitter): lan (10 ms ± 1 ms), broadband (60 ms ± 10 ms, 1 % loss),
// mobile (150 ms ± 30 ms, 5 % loss, 1 % duplicates, reordering), spike
// (broadband with a 2 s blackout every 15 s), awful (300 ms ± 80 ms, 15 %
// loss), and custom (the -rtt, -jitter, -loss, -burst, -dup, -reorder,
// -blackout flags).
//
// Methods: snap, midpoint, midpoint-spring ("seed" is accepted too: its
// former name), ragsync; see package correction.
//
// Output, one object per (scenario, method):
//
//	rms_error_m, p95_error_m  distance between each rival body on each peer
//	                          and its owner's true position at the same game
//	                          time (the owner's ticks interpolated)
//	max_jump_m                the largest single-tick displacement of a rival
//	                          body beyond its true motion that tick: a pop
//	hard_snaps_per_s          object corrections per second and peer that
//	                          used the hard path (position set)
//	clock_error_p95_ms        |game time A − game time B| at the same instant
//	hit_agreement, hits       share of distinct hits both peers registered
//	                          (same attacker, victim and attack), and how
//	                          many distinct hits there were
//	kbps_per_direction        bytes sent per peer (states and clock pings)
//	position_disconnects      runs of critical position gaps (correction.Monitor)
//	loss_pct, transfers, kos, rejected   measured loss, crate claims, knockouts,
//	                          refused states
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
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ragsync/ragsync/correction"
	"github.com/ragsync/ragsync/p2p/netsim"
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
	scenario := fs.String("scenario", "all", "lan, broadband, mobile, spike, awful, custom, all, or a comma-separated list")
	method := fs.String("method", "all", "snap, midpoint, midpoint-spring, ragsync, all, or a comma-separated list")
	seconds := fs.Float64("seconds", 60, "match length in virtual seconds")
	seed := fs.Uint64("seed", 1, "random seed (network, bots)")
	asJSON := fs.Bool("json", false, "print one JSON object per line instead of a table")
	skew := fs.Float64("skew-ppm", 50, "how much faster peer B's clock runs, in ppm")
	rtt := fs.Duration("rtt", 60*time.Millisecond, "custom: round-trip time")
	jitter := fs.Duration("jitter", 0, "custom: round-trip jitter (± each way: half of it)")
	loss := fs.Float64("loss", 0, "custom: packet loss per direction (0..1)")
	burst := fs.Float64("burst", 0, "custom: if > 0, -loss comes in bursts of this mean length (packets)")
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
	maxExtrap := fs.Duration("max-extrapolation", 0, fmt.Sprintf("ragsync latency compensation cap (0: %v, negative: none)", def.MaxExtrapolation))
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
	custom, err := customLink(*rtt, *jitter, *loss, *burst, *dup, *reorder, *blackout)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	scenarios, err := parseScenarios(*scenario, custom, *skew)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	methods, err := parseMethods(*method)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	corr.MaxExtrapolation = *maxExtrap
	if err := corr.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}

	var opts []Options
	for _, sc := range scenarios {
		for _, m := range methods {
			opts = append(opts, Options{Scenario: sc, Method: m, Correction: corr, Duration: time.Duration(*seconds * float64(time.Second)), Seed: *seed})
		}
	}
	begin := time.Now()
	results, err := runAll(opts)
	if err != nil {
		return err
	}
	wall := time.Since(begin)
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
	virtual := *seconds * float64(len(results))
	fmt.Fprintf(stderr, "ragsim: %d matches, %.0f s of play in %.1f s: %.0f× faster than real time\n",
		len(results), virtual, wall.Seconds(), virtual/wall.Seconds())
	return nil
}

// runAll runs the matches on all cores, keeping the output order.
func runAll(opts []Options) ([]Result, error) {
	results := make([]Result, len(opts))
	errs := make([]error, len(opts))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
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

func customLink(rtt, jitter time.Duration, loss, burst, dup, reorder float64, blackout string) (netsim.Config, error) {
	for name, p := range map[string]float64{"loss": loss, "dup": dup, "reorder": reorder} {
		if !(p >= 0 && p <= 1) {
			return netsim.Config{}, fmt.Errorf("-%s %v must be in [0, 1]", name, p)
		}
	}
	if rtt < 0 || jitter < 0 {
		return netsim.Config{}, fmt.Errorf("-rtt and -jitter must not be negative")
	}
	if burst < 0 || (burst > 0 && burst < 1) {
		return netsim.Config{}, fmt.Errorf("-burst %v must be 0 or at least 1 packet", burst)
	}
	c := netsim.RoundTrip(rtt, jitter, loss)
	if burst > 0 {
		c.BurstLoss, c.BurstLen, c.Loss = loss, burst, 0
	}
	c.Duplicate = dup
	c.Reorder = reorder
	if blackout != "" {
		d, p, ok := strings.Cut(blackout, "/")
		dur, err1 := time.ParseDuration(d)
		per, err2 := time.ParseDuration(p)
		if !ok || err1 != nil || err2 != nil || dur <= 0 || per <= dur {
			return netsim.Config{}, fmt.Errorf("-blackout %q: want DURATION/PERIOD with 0 < DURATION < PERIOD, e.g. 2s/15s", blackout)
		}
		c.BlackoutFor, c.BlackoutEvery, c.BlackoutPhase = dur, per, per/2
	}
	if err := c.Validate(); err != nil {
		return netsim.Config{}, err
	}
	return c, nil
}

func parseScenarios(s string, custom netsim.Config, skew float64) ([]Scenario, error) {
	if skew < -1000 || skew > 1000 {
		return nil, fmt.Errorf("-skew-ppm %v must be within ±1000", skew)
	}
	names := strings.Split(s, ",")
	if s == "all" {
		names = presetScenarios
	}
	var out []Scenario
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "custom" {
			out = append(out, Scenario{Name: "custom", Link: custom, SkewPPM: skew})
			continue
		}
		if !contains(presetScenarios, n) {
			return nil, fmt.Errorf("unknown scenario %q (want %s, custom or all)", n, strings.Join(presetScenarios, ", "))
		}
		cfg, err := netsim.Preset(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Scenario{Name: n, Link: cfg, SkewPPM: skew})
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func printTable(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tmethod\trms m\tp95 m\tmax jump m\thard/s\tclock p95 ms\thits\tagree\tkbps/dir\tpos disc\tloss %\tclaims\tKOs\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%.3f\t%.1f\t%.2f\t%d\t%.0f%%\t%.1f\t%d\t%.1f\t%d\t%d\t\n",
			r.Scenario, r.Method, r.RMSErrorM, r.P95ErrorM, r.MaxJumpM, r.HardSnapsPerS, r.ClockErrorP95Ms,
			r.Hits, 100*r.HitAgreement, r.KbpsPerDirection, r.PositionDisconnects, r.LossPct, r.Transfers, r.KOs)
	}
	tw.Flush()
}
