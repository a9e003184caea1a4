package p2p

import (
	"testing"
	"time"
)

// A gap between two runs of the loop much longer than its period is a
// local stall, and the peer's silence does not count it.
func TestLivenessStallsAreNotSilence(t *testing.T) {
	var l liveness
	if _, ok := l.loopRan(0); ok {
		t.Error("the first run is a stall")
	}
	if _, ok := l.loopRan(tickInterval); ok {
		t.Error("a run on time is a stall")
	}
	from, ok := l.loopRan(tickInterval + time.Second)
	if !ok || from != tickInterval {
		t.Fatalf("a 1 s gap: stall %v from %v, want from %v", ok, from, tickInterval)
	}
	var st stalls
	st.add(from, tickInterval+time.Second)
	l.lastRecv = 0
	if got := l.silence(tickInterval+time.Second+50*time.Millisecond, &st); got != 50*time.Millisecond {
		t.Errorf("silence %v, want 50ms (the stall does not count)", got)
	}
}
