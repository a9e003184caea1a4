package netsim_test

import (
	"fmt"
	"time"

	"github.com/ragsync/ragsync/internal/netsim"
)

// A simulator drives a Link in virtual time: it sends a packet every tick,
// and jumps from arrival to arrival. The same seed gives the same trace.
func Example() {
	link, err := netsim.NewLink(netsim.Config{
		Latency: 40 * time.Millisecond,
		Jitter:  15 * time.Millisecond, // packets 16 ms apart can overtake each other
		Loss:    0.2,
	}, 8)
	if err != nil {
		panic(err)
	}
	for i := range 8 { // 8 packets at 60 Hz
		link.Send(time.Duration(i)*16*time.Millisecond, []byte{byte(i)})
	}
	for {
		at, ok := link.NextArrival()
		if !ok {
			break
		}
		link.Deliver(at, func(p []byte) { fmt.Printf("packet %d arrives at %v\n", p[0], at.Round(time.Millisecond)) })
	}
	st := link.Stats()
	fmt.Printf("%d sent, %d delivered, %d lost, %d reordered\n", st.Sent, st.Delivered, st.LostRandom, st.Reordered)
	// Output:
	// packet 0 arrives at 39ms
	// packet 1 arrives at 71ms
	// packet 3 arrives at 84ms
	// packet 4 arrives at 114ms
	// packet 7 arrives at 141ms
	// packet 6 arrives at 146ms
	// 8 sent, 6 delivered, 2 lost, 1 reordered
}

// Presets describe whole round trips; RoundTrip turns quoted figures into
// the Config of one direction.
func ExampleRoundTrip() {
	c := netsim.RoundTrip(120*time.Millisecond, 30*time.Millisecond, 0.02)
	fmt.Println(c)
	mobile, _ := netsim.Preset("mobile")
	fmt.Println(mobile)
	// Output:
	// 60ms±15ms loss 2%
	// 75ms±15ms loss 5% dup 1% reorder 2%
}
