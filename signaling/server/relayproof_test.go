package server

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
	"github.com/ragsync/ragsync/signaling/internal/wire"
)

// TestStolenRelayToken: a thief on another address who has a player's
// relay token (the wire part, as a log or a proxy might show it) but not
// its seat key gets bad_token from the raw relay, the WebSocket relay and
// rejoin, and the owner's relay stream and seat are untouched.
func TestStolenRelayToken(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{})
	a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	pa, pb := pairByCode(t, a, b)
	ra, rb, err := dialRelayPair(t, signaling.ClientConfig{}, url, pa, pb)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip := func(what string) {
		t.Helper()
		buf := make([]byte, 4)
		for _, p := range [][2]io.ReadWriter{{ra, rb}, {rb, ra}} {
			if _, err := p[0].Write([]byte("ping")); err != nil {
				t.Fatalf("%s: write: %v", what, err)
			}
			readDeadline(t, rb)
			readDeadline(t, ra)
			if _, err := io.ReadFull(p[1], buf); err != nil || string(buf) != "ping" {
				t.Fatalf("%s: owner's relay: %q %v", what, buf, err)
			}
		}
	}
	roundTrip("before the theft")

	stolen := wireToken(pa.Token)
	forged := stolen + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	thief := newFrom(t, "127.0.0.9")
	for name, tok := range map[string]signaling.RelayToken{"without a key": stolen, "with a forged key": forged, "with the other seat's key": stolen + "." + signaling.RelayToken(pb.Token[len(wireToken(pb.Token))+1:])} {
		if _, err := signaling.DialRelay(ctxT(t), url, tok, thief.relayDialer()); !errors.Is(err, signaling.ErrBadToken) {
			t.Errorf("raw relay %s: %v, want bad_token", name, err)
		}
		if _, err := signaling.DialRelayWebSocket(ctxT(t), url, tok, thief.relayDialer()); !errors.Is(err, signaling.ErrBadToken) {
			t.Errorf("WebSocket relay %s: %v, want bad_token", name, err)
		}
		c := thief.dial(t, url)
		if _, err := c.Rejoin(ctxT(t), tok); !errors.Is(err, signaling.ErrBadToken) {
			t.Errorf("rejoin %s: %v, want bad_token", name, err)
		}
	}
	// The server refused the forged proofs itself (not only the client
	// for want of a key).
	if st := s.Stats(); st.RelaysRefused < 4 {
		t.Errorf("relays refused %d, want the forged attempts", st.RelaysRefused)
	}
	roundTrip("after the theft")
	// The owner still holds its seat: its signaling goes on, no token_used.
	if err := b.SendCandidate(ctxT(t), signaling.Candidate{Candidate: "candidate:1 1 udp 1 198.51.100.7 5000 typ host"}); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, a, signaling.EventCandidate); ev.Candidate.Candidate == "" {
		t.Fatal("no candidate")
	}
}

// TestRelayChallenge: a raw relay challenge is answered once, within its
// TTL, and only if this server (its secret) issued it.
func TestRelayChallenge(t *testing.T) {
	clk := newFakeClock()
	s, err := New(Config{Now: clk.Now, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := New(Config{Now: clk.Now, Logger: testLogger(t)})
	ch := s.newChallenge()
	if err := s.checkChallenge(ch); err != nil {
		t.Fatal(err)
	}
	if err := other.checkChallenge(ch); err == nil {
		t.Error("another secret's challenge accepted")
	}
	if err := s.useChallenge(ch); err != nil {
		t.Fatal(err)
	}
	if err := s.useChallenge(ch); err == nil {
		t.Error("a challenge answered twice (a replayed proof)")
	}
	late := s.newChallenge()
	clk.advance(relayChallengeTTL + time.Second)
	if err := s.checkChallenge(late); err == nil {
		t.Error("an expired challenge accepted")
	}
	for _, bad := range []string{"", "x", ch[:len(ch)-2] + "AA"} {
		if err := s.checkChallenge(bad); err == nil {
			t.Errorf("challenge %q accepted", bad)
		}
	}
	// The proof is bound to the token, the purpose and the challenge.
	tok := mintRelayToken(s.tokenKey, relayClaims{instance: 1, pairing: 2, room: "BRAWL7", side: 0, expiry: clk.Now().Add(time.Hour)})
	key := s.seatKey(string(tok))
	good := wire.Proof(key, wire.ProofRelay, "c1", string(tok))
	if err := s.checkProof(tok, wire.ProofRelay, "c1", good); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{
		"other challenge": wire.Proof(key, wire.ProofRelay, "c2", string(tok)),
		"other purpose":   wire.Proof(key, wire.ProofRejoin, "c1", string(tok)),
		"empty":           "",
	} {
		if err := s.checkProof(tok, wire.ProofRelay, "c1", p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A server with the same secret derives the same seat key (resume).
	same, _ := New(Config{Secret: s.cfg.Secret, Logger: testLogger(t)})
	if same.seatKey(string(tok)) != key {
		t.Error("seat keys differ between servers with one secret")
	}
}
