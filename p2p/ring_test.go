package p2p

import "testing"

// TestRingNotify: every push leaves a token for Session.Received, pushes
// coalesce into one token, and a push never blocks on it.
func TestRingNotify(t *testing.T) {
	r := newMsgRing(4, 16)
	select {
	case <-r.notify:
		t.Fatal("token before any push")
	default:
	}
	for range 10 { // more than the ring and the channel hold: must not block
		r.push([]byte("x"))
	}
	select {
	case <-r.notify:
	default:
		t.Fatal("no token after pushes")
	}
	select {
	case <-r.notify:
		t.Fatal("pushes did not coalesce into one token")
	default:
	}
	if allocs := testing.AllocsPerRun(100, func() { r.push([]byte("y")) }); allocs != 0 {
		t.Fatalf("push allocates %v times", allocs)
	}
}
