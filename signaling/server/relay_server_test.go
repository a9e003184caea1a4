package server

import (
	"errors"
	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// roundTrip checks that bytes flow both ways between two relay ends.
func roundTrip(t *testing.T, x, y net.Conn, msg string) {
	t.Helper()
	for _, p := range [][2]net.Conn{{x, y}, {y, x}} {
		if _, err := p[0].Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(msg))
		readDeadline(t, p[1])
		if _, err := io.ReadFull(p[1], buf); err != nil || string(buf) != msg {
			t.Fatalf("relayed %q, %v; want %q", buf, err, msg)
		}
	}
}

// expectEOF waits for the server to close the relay end c.
func expectEOF(t *testing.T, c net.Conn) {
	t.Helper()
	readDeadline(t, c)
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("relay stream still open")
	}
}

type dialResult struct {
	c   net.Conn
	err error
}

func dialAsync(t *testing.T, url string, tok signaling.RelayToken) chan dialResult {
	ch := make(chan dialResult, 1)
	go func() {
		c, err := signaling.DialRelay(ctxT(t), url, tok, signaling.ClientConfig{})
		if c != nil {
			t.Cleanup(func() { c.Close() })
		}
		ch <- dialResult{c, err}
	}()
	return ch
}

// TestRelayReattach: a player whose stream dropped re-attaches with the
// same token; the newer request replaces the older (waiting or
// established), and the peer re-attaches too.
func TestRelayReattach(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{})
	a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	pa, pb := pairByCode(t, a, b)
	ra, rb, err := dialRelayPair(t, signaling.ClientConfig{}, url, pa, pb)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, ra, rb, "first")

	// A's connection "drops" (as far as A knows) and A dials again: the
	// server closes the old stream, so B learns of it and dials again too.
	ra2 := dialAsync(t, url, pa.Token)
	expectEOF(t, rb)
	expectEOF(t, ra)
	rb2, err := signaling.DialRelay(ctxT(t), url, pb.Token, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer rb2.Close()
	r := <-ra2
	if r.err != nil {
		t.Fatal(r.err)
	}
	roundTrip(t, r.c, rb2, "second")

	// A newer waiting request replaces an older one: the older is told.
	waitA1 := dialAsync(t, url, pa.Token)
	expectEOF(t, rb2)
	waitFor(t, func() bool { return relayWaiting(s, pa.Token) })
	waitA2 := dialAsync(t, url, pa.Token)
	if r := <-waitA1; !errors.Is(r.err, signaling.ErrTokenUsed) || !strings.Contains(r.err.Error(), "replaced") {
		t.Fatalf("replaced request: %v", r.err)
	}
	waitFor(t, func() bool { return relayWaiting(s, pa.Token) })
	rb3, err := signaling.DialRelay(ctxT(t), url, pb.Token, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer rb3.Close()
	r = <-waitA2
	if r.err != nil {
		t.Fatal(r.err)
	}
	roundTrip(t, r.c, rb3, "third")
	if st := s.Stats(); st.Relays != 3 || st.RelaysActive != 1 {
		t.Fatalf("stats %+v", st)
	}

	// The pairing ends: the stream lives on, but cannot be re-attached.
	if err := b.Leave(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, r.c, rb3, "fourth")
	if _, err := signaling.DialRelay(ctxT(t), url, pa.Token, signaling.ClientConfig{}); !errors.Is(err, signaling.ErrBadToken) {
		t.Fatalf("re-attach after the pairing ended: %v", err)
	}
	r.c.Close()
	waitFor(t, func() bool { return s.Stats().RelaysActive == 0 })
	s.mu.Lock()
	n := len(s.rendezvous)
	s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d rendezvous left", n)
	}
}

// TestRelayTokenAcrossRestart: a server with the same secret accepts the
// tokens a previous one issued, so players re-dial the relay after a
// restart; another secret, or an expired token, is refused.
func TestRelayTokenAcrossRestart(t *testing.T) {
	leaktest.Check(t)
	url2, pa, pb := pairThenRestart(t)

	ra, rb, err := dialRelayPair(t, signaling.ClientConfig{}, url2, pa, pb)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, ra, rb, "after restart")

	_, url3 := startServer(t, Config{Secret: []byte("another secret, 16+ bytes")})
	if _, err := signaling.DialRelay(ctxT(t), url3, pa.Token, signaling.ClientConfig{}); !errors.Is(err, signaling.ErrBadToken) {
		t.Fatalf("other secret: %v", err)
	}
	late := func() time.Time { return time.Now().Add(13 * time.Hour) }
	_, url4 := startServer(t, Config{Secret: restartSecret, Now: late})
	if _, err := signaling.DialRelay(ctxT(t), url4, pa.Token, signaling.ClientConfig{}); !errors.Is(err, signaling.ErrBadToken) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired token: %v", err)
	}
}
