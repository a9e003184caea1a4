package clocksync

import (
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/netsim"
)

// TestPresets runs every netsim preset with 100 ppm of drift: 10 s of
// calibration, 2 min of match; the error stays within a bound that grows
// with the link's jitter.
func TestPresets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p95, max time.Duration
	}{
		{"lan", 100 * time.Microsecond, 200 * time.Microsecond},
		{"broadband", 500 * time.Microsecond, time.Millisecond},
		{"spike", 500 * time.Microsecond, time.Millisecond},
		{"mobile", time.Millisecond, 2 * time.Millisecond},
		{"awful", 2 * time.Millisecond, 4 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link, err := netsim.Preset(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			s := offsetSim(t, link, 1, 100)
			calibrate(s, 10*time.Second)
			st := summarize(match(s, 2*time.Minute))
			fs := s.follower.Stats()
			t.Logf("%-9s p95 %-9v max %-9v | RTT min %v smoothed %v, pings lost %d/%d, drift %.1f ppm",
				tc.name, st.p95, st.max, fs.RTT.Min, fs.RTT.Smoothed, fs.PingsLost, fs.PingsSent, fs.Estimate.DriftPPM)
			if st.p95 > tc.p95 || st.max > tc.max {
				t.Errorf("%s: p95 %v max %v, want ≤ %v, %v", tc.name, st.p95, st.max, tc.p95, tc.max)
			}
		})
	}
}
