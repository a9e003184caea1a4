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
	est := follower.Estimate()
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
