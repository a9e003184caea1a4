package p2p

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The initial choice: the lower 3-probe maximum wins, but TCP must beat
// WebRTC by more than SwitchMargin and 10 %; closer is a tie, and WebRTC
// takes ties.
func TestInitialChoice(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		webrtc, tcp time.Duration
		want        TransportKind
		reason      string
	}{
		{500 * time.Microsecond, 200 * time.Microsecond, TransportWebRTC, "tie"}, // loopback noise
		{20 * ms, 16 * ms, TransportWebRTC, "tie"},                               // within 15 ms
		{30 * ms, 20 * ms, TransportWebRTC, "tie"},                               // within 15 ms
		{100 * ms, 92 * ms, TransportWebRTC, "tie"},                              // 8 ms < 10 %
		{100 * ms, 80 * ms, TransportTCP, "lower"},
		{40 * ms, 20 * ms, TransportTCP, "lower"},
		{20 * ms, 30 * ms, TransportWebRTC, "lower or equal"},
		{20 * ms, 20 * ms, TransportWebRTC, "lower or equal"},
	} {
		t.Run(fmt.Sprintf("webrtc %v tcp %v", c.webrtc, c.tcp), func(t *testing.T) {
			o := &offererRole{}
			o.cfg.SwitchMargin = defaultSwitchMargin
			var links [2]linkState
			for i, d := range []time.Duration{c.webrtc, c.tcp} {
				ls := &links[i]
				ls.state = LinkUp
				ls.probe.n, ls.probe.max = 3, d
			}
			got, reason := o.initialChoice(&links)
			if got != c.want || !strings.Contains(reason, c.reason) {
				t.Errorf("%v (%s), want %v (%s)", got, reason, c.want, c.reason)
			}
		})
	}
}
