package p2p

import (
	"strings"
	"testing"
)

// The first fingerprint the pump sees is pinned; an SDP with another one
// is refused, and the pinned one stays.
func TestSigPumpPinsTheFirstFingerprint(t *testing.T) {
	a, err := newIdentity()
	if err != nil {
		t.Fatal(err)
	}
	b, err := newIdentity()
	if err != nil {
		t.Fatal(err)
	}
	g := &sigPump{pinned: make(chan struct{})}
	if g.fingerprint() != nil {
		t.Fatal("pinned before any SDP")
	}
	if err := g.peerSDP(relayOnlySDP(a.fp)); err != nil {
		t.Fatalf("first SDP: %v", err)
	}
	select {
	case <-g.pinned:
	default:
		t.Fatal("pinned not closed")
	}
	if err := g.peerSDP(relayOnlySDP(a.fp)); err != nil {
		t.Errorf("the same fingerprint again: %v", err)
	}
	err = g.peerSDP(relayOnlySDP(b.fp))
	if err == nil || !strings.HasPrefix(err.Error(), "p2p: refusing an SDP") {
		t.Errorf("another fingerprint: %v, want a refusal", err)
	}
	if string(g.fingerprint()) != string(a.fp) {
		t.Error("the pinned fingerprint changed")
	}
	if err := g.peerSDP("v=0\r\n"); err == nil {
		t.Error("an SDP without a fingerprint was accepted")
	}
}
