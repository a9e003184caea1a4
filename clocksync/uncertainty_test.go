package clocksync

import (
	"fmt"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/netsim"
)

// TestUncertaintyContainsTruth: what a session reports as the clock offset
// and its uncertainty (Estimate.OffsetAt and UncertaintyAt, read at any
// moment, from the first sample on) contains the true offset at least 95 %
// of the time, in virtual time on a 300 ± 80 ms RTT link with loss, over
// 60 s from a 10 s initial offset and 100 ppm of drift; on a symmetric and
// on an asymmetric link (one way 100 ms, the other 200 ms).
func TestUncertaintyContainsTruth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ab, ba netsim.Config
	}{
		{"symmetric", netsim.RoundTrip(300*time.Millisecond, 80*time.Millisecond, 0.05), netsim.RoundTrip(300*time.Millisecond, 80*time.Millisecond, 0.05)},
		{"asymmetric", netsim.Config{Latency: 100 * time.Millisecond, Jitter: 40 * time.Millisecond, Loss: 0.05},
			netsim.Config{Latency: 200 * time.Millisecond, Jitter: 40 * time.Millisecond, Loss: 0.05}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(5) {
				t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
					s := newSim(t, simConfig{ab: tc.ab, ba: tc.ba, seed: seed,
						leaderOffset: 1000 * time.Second, followerOffset: 990 * time.Second, followerPPM: 100})
					var in, all int
					var worst time.Duration
					s.run(60*time.Second, 100*time.Millisecond, func(time.Duration) {
						est := s.follower.Stats().Estimate
						if est.Samples == 0 {
							return
						}
						now := s.fc.Now()
						truth := s.lc.Now() - now
						err := est.OffsetAt(now) - truth
						all++
						if max(err, -err) <= est.UncertaintyAt(now) {
							in++
						} else {
							worst = max(worst, max(err, -err)-est.UncertaintyAt(now))
						}
					})
					share := float64(in) / float64(all)
					t.Logf("%s, seed %d: the uncertainty contains the true offset %.1f %% of %d readings (worst miss by %v)", tc.name, seed, 100*share, all, worst)
					if share < 0.95 {
						t.Errorf("contains the true offset %.1f %% of the time, want ≥ 95 %%", 100*share)
					}
				})
			}
		})
	}
}
