package clocksync_test

import (
	"fmt"
	"time"

	"github.com/ragsync/ragsync/clocksync"
)

// Two peers calibrate over a perfect 20 ms link in virtual time. The
// follower's clock reads 42 s less than the leader's.
func Example() {
	var truth clocksync.ManualClock // true time
	leaderClock := &clocksync.SkewedClock{Base: &truth, Offset: 100 * time.Second}
	followerClock := &clocksync.SkewedClock{Base: &truth, Offset: 58 * time.Second}

	leader, _ := clocksync.NewCalibrator(clocksync.Config{Leader: true}, leaderClock)
	follower, _ := clocksync.NewCalibrator(clocksync.Config{}, followerClock)

	buf := make([]byte, 0, 64)
	for range 10 {
		ping, wait := follower.Poll(buf[:0]) // due at once, then every 62.5 ms
		truth.Advance(20 * time.Millisecond) // the ping travels
		pong, err := leader.Handle(ping, nil)
		if err != nil {
			panic(err)
		}
		truth.Advance(20 * time.Millisecond) // the pong travels back
		if _, err := follower.Handle(pong, nil); err != nil {
			panic(err)
		}
		truth.Advance(wait - 40*time.Millisecond)
	}
	follower.StartMatch()
	leader.StartMatch()

	lg, _ := leader.GameTime()
	fg, synced := follower.GameTime()
	est := follower.Stats().Estimate
	fmt.Println("synced:", synced)
	fmt.Println("offset:", est.Offset, "±", est.Uncertainty.Round(time.Millisecond))
	fmt.Println("game clocks differ by", fg.Sub(lg))
	fmt.Println("RTT:", follower.Stats().RTT.Min)

	// A state stamped with the leader's game time, arriving 25 ms later.
	var f clocksync.Filter
	fmt.Println(f.Check(lg, fg.Add(25*time.Millisecond)))
	fmt.Println(f.Check(lg, fg.Add(26*time.Millisecond)))
	// Output:
	// synced: true
	// offset: 42s ± 20ms
	// game clocks differ by 0s
	// RTT: 40ms
	// accepted
	// duplicate
}

// An RTTEstimator takes round trips with the time they were measured at;
// its quantiles cover the last 10 s of the time it is asked at, so the
// round trips of an outage stop counting 10 s after it.
func ExampleRTTEstimator() {
	var rtt clocksync.RTTEstimator
	at := time.Duration(0)
	for i := range 100 { // 10 s of pings, one in ten delayed by an outage
		at += 100 * time.Millisecond
		d := 30 * time.Millisecond
		if i%10 == 0 {
			d = 900 * time.Millisecond
		}
		rtt.Add(at, d)
	}
	s := rtt.Stats(at)
	fmt.Println("p50", s.P50, "p95", s.P95, "max", s.Max, "of", s.Recent)
	for range 100 { // 10 s more, recovered
		at += 100 * time.Millisecond
		rtt.Add(at, 30*time.Millisecond)
	}
	s = rtt.Stats(at)
	fmt.Println("p50", s.P50, "p95", s.P95, "max", s.Max, "of", s.Recent)
	// Output:
	// p50 30ms p95 900ms max 900ms of 100
	// p50 30ms p95 30ms max 30ms of 100
}
