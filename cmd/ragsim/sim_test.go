package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/correction"
	"github.com/ragsync/ragsync/p2p/netsim"
)

func preset(t *testing.T, name string) Scenario {
	t.Helper()
	cfg, err := netsim.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return Scenario{Name: name, Link: cfg, SkewPPM: 50}
}

func mustRun(t *testing.T, o Options) Result {
	t.Helper()
	r, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The same options give exactly the same match.
func TestRunIsDeterministic(t *testing.T) {
	o := Options{Scenario: preset(t, "mobile"), Method: correction.MethodRagsync, Duration: 10 * time.Second, Seed: 7}
	a, b := mustRun(t, o), mustRun(t, o)
	if a != b {
		t.Fatalf("two runs differ:\n%+v\n%+v", a, b)
	}
	o.Seed = 8
	if c := mustRun(t, o); c == a {
		t.Error("a different seed gave the identical match")
	}
}

// A match on a LAN is a real fight that both peers see alike.
func TestLANMatchIsSane(t *testing.T) {
	r := mustRun(t, Options{Scenario: preset(t, "lan"), Method: correction.MethodRagsync, Duration: 20 * time.Second, Seed: 1})
	if r.Hits < 5 {
		t.Errorf("only %d hits in 20 s of bots fighting", r.Hits)
	}
	if r.HitAgreement < 0.8 {
		t.Errorf("hit agreement %.2f on a LAN", r.HitAgreement)
	}
	if r.RMSErrorM > 0.05 || r.RMSErrorM == 0 {
		t.Errorf("rms error %v m on a LAN", r.RMSErrorM)
	}
	if r.ClockErrorP95Ms > 1 {
		t.Errorf("clock error p95 %v ms on a LAN", r.ClockErrorP95Ms)
	}
	if r.KbpsPerDirection < 10 || r.KbpsPerDirection > 100 {
		t.Errorf("%v kbps per direction", r.KbpsPerDirection)
	}
	if r.Rejected != 0 || r.PositionDisconnects != 0 {
		t.Errorf("rejected %d, position disconnects %d", r.Rejected, r.PositionDisconnects)
	}
}

// ragsync beats the midpoint spring on rms error in broadband and mobile,
// with no worse pops.
func TestRagsyncBeatsMidpointSpring(t *testing.T) {
	for _, sc := range []string{"broadband", "mobile"} {
		t.Run(sc, func(t *testing.T) {
			o := Options{Scenario: preset(t, sc), Duration: 30 * time.Second, Seed: 3}
			o.Method = correction.MethodMidpointSpring
			spring := mustRun(t, o)
			o.Method = correction.MethodRagsync
			ours := mustRun(t, o)
			t.Logf("%s: rms %.3f vs midpoint-spring %.3f, max jump %.3f vs %.3f", sc, ours.RMSErrorM, spring.RMSErrorM, ours.MaxJumpM, spring.MaxJumpM)
			if ours.RMSErrorM >= spring.RMSErrorM {
				t.Errorf("%s: ragsync rms %.3f m, midpoint-spring %.3f m", sc, ours.RMSErrorM, spring.RMSErrorM)
			}
			if ours.MaxJumpM > spring.MaxJumpM {
				t.Errorf("%s: ragsync max jump %.3f m, midpoint-spring %.3f m", sc, ours.MaxJumpM, spring.MaxJumpM)
			}
		})
	}
}

func TestCLIJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"-scenario", "custom", "-rtt", "80ms", "-jitter", "20ms", "-loss", "0.05", "-burst", "3",
		"-dup", "0.01", "-reorder", "0.02", "-blackout", "1s/6s", "-skew-ppm", "100",
		"-method", "seed,ragsync", "-seconds", "8", "-json"} // "seed": the old name of midpoint-spring
	if err := run(args, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	sc := bufio.NewScanner(&out)
	var methods []string
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("bad JSON line %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"scenario", "method", "rms_error_m", "p95_error_m", "max_jump_m", "hard_snaps_per_s",
			"clock_error_p95_ms", "hit_agreement", "kbps_per_direction", "position_disconnects"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line lacks %q: %s", k, sc.Text())
			}
		}
		if m["scenario"] != "custom" {
			t.Errorf("scenario %v", m["scenario"])
		}
		if m["loss_pct"].(float64) < 4 {
			t.Errorf("custom loss and blackouts gave only %v%% loss", m["loss_pct"])
		}
		methods = append(methods, m["method"].(string))
	}
	if strings.Join(methods, ",") != "midpoint-spring,ragsync" {
		t.Errorf("methods %v", methods)
	}
	if !strings.Contains(errOut.String(), "faster than real time") {
		t.Errorf("no speed summary on stderr: %q", errOut.String())
	}
}

func TestCLITable(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-scenario", "lan", "-method", "snap", "-seconds", "3"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "rms m") || !strings.Contains(lines[1], "snap") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestCLIRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-scenario", "moon"},
		{"-method", "teleport"},
		{"-seconds", "0"},
		{"-seconds", "NaN"},
		{"-loss", "1.5", "-scenario", "custom"},
		{"-burst", "0.5", "-loss", "0.1", "-scenario", "custom"},
		{"-blackout", "15s/2s", "-scenario", "custom"},
		{"-blackout", "soon", "-scenario", "custom"},
		{"-skew-ppm", "5000"},
		{"-stiffness", "-3"},
		{"extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(args, &out, &errOut)
			if !errors.Is(err, errUsage) {
				t.Errorf("%q: %v, want a usage error", args, err)
			}
			if out.Len() != 0 {
				t.Errorf("%q printed results", args)
			}
		})
	}
}

// The flags' help quotes correction's real defaults.
func TestCLIHelpQuotesDefaults(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-h"}, &out, &errOut); !errors.Is(err, errUsage) {
		t.Fatalf("-h: %v", err)
	}
	help := errOut.String()
	usage := func(t *testing.T, flag string) string {
		_, rest, ok := strings.Cut(help, "  -"+flag+" ")
		if !ok {
			t.Fatalf("no -%s in the help:\n%s", flag, help)
		}
		lines := strings.SplitN(rest, "\n", 3)
		if len(lines) < 2 {
			t.Fatalf("-%s has no usage line", flag)
		}
		return lines[1]
	}
	def := correction.Config{}.WithDefaults()
	for flag, want := range map[string]string{
		"damping":              fmt.Sprintf("(0: %v", def.DampingRatio),
		"hard-blend":           fmt.Sprintf("(0: %v", def.HardBlend),
		"max-extrapolation":    fmt.Sprintf("(0: %v", def.MaxExtrapolation),
		"max-soft-error":       fmt.Sprintf("(0: %v", def.MaxSoftError),
		"max-correction-speed": fmt.Sprintf("(0: %v", def.MaxCorrectionSpeed),
		"impact-dv":            fmt.Sprintf("(0: %v", def.ImpactDeltaV),
	} {
		t.Run(flag, func(t *testing.T) {
			if u := usage(t, flag); !strings.Contains(u, want) {
				t.Errorf("-%s: %q does not quote the default %q", flag, strings.TrimSpace(u), want)
			}
		})
	}
}
