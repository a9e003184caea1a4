package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
)

// dialDroppable dials like dial, and returns with the client a drop that
// ends its connection the way a crash or a network failure does: no close
// frame, no leave.
func dialDroppable(t testing.TB, url string) (*signaling.Client, func()) {
	var mu sync.Mutex
	var conns []net.Conn
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
		return c, err
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c := dial(t, url, signaling.ClientConfig{HTTPClient: &http.Client{Transport: tr}})
	return c, func() {
		mu.Lock()
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
		<-c.Done()
	}
}

// TestRejoin: a paired player whose connection drops keeps its place; the
// other player hears of it at once ("dropped"), nobody else can take the
// place, and the player takes it back with its relay token: both are
// paired again, in the same roles, and the relay tokens still work. If it
// does not come back within RejoinGrace, the pairing ends.
func TestRejoin(t *testing.T) {
	leaktest.Check(t)
	_, url := startServer(t, Config{RejoinGrace: time.Minute})
	a := dial(t, url, signaling.ClientConfig{})
	b, drop := dialDroppable(t, url)
	pa, pb := pairByCode(t, a, b)
	drop()
	if ev := next(t, a, signaling.EventPeerLeft); ev.Reason != "dropped" || ev.Room != pa.Room {
		t.Fatalf("peer_left %+v", ev)
	}
	c := dial(t, url, signaling.ClientConfig{})
	var se *signaling.Error
	if err := c.JoinRoom(ctxT(t), string(pa.Room)); !errors.As(err, &se) || se.Code != signaling.ErrRoomFull {
		t.Fatalf("a stranger joining a room with a kept place: %v", err)
	}
	// An offer while the answerer is away is refused, not lost silently.
	if err := a.SendOffer(ctxT(t), "v=0"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, a, signaling.EventError); ev.Err.Code != signaling.ErrWrongState {
		t.Fatalf("offer while away: %+v", ev.Err)
	}

	b2 := dial(t, url, signaling.ClientConfig{})
	if role, err := b2.Rejoin(ctxT(t), pb.Token); err != nil || role != signaling.RoleAnswerer {
		t.Fatalf("rejoin: %v, %v", role, err)
	}
	for _, p := range []struct {
		c    *signaling.Client
		role signaling.Role
	}{{a, signaling.RoleOfferer}, {b2, signaling.RoleAnswerer}} {
		if pr := next(t, p.c, signaling.EventPaired).Pairing; pr.Room != pa.Room || pr.Role != p.role {
			t.Fatalf("paired again: %+v", pr)
		}
	}
	if err := a.SendOffer(ctxT(t), "v=0 again"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, b2, signaling.EventOffer); ev.SDP != "v=0 again" {
		t.Fatalf("offer after rejoin: %+v", ev)
	}
	// The pairing's tokens still attach to the relay.
	ra, rb, err := dialRelayPair(t, signaling.ClientConfig{}, url, pa, pb)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, ra, rb, "after rejoin")

	// A second connection with the token takes the place from the first.
	b3 := dial(t, url, signaling.ClientConfig{})
	if _, err := b3.Rejoin(ctxT(t), pb.Token); err != nil {
		t.Fatal(err)
	}
	<-b2.Done()
	next(t, b3, signaling.EventPaired)
	next(t, a, signaling.EventPaired)

	// The answerer leaves for good: the offerer is told, the token no
	// longer rejoins.
	b3.Close()
	if ev := next(t, a, signaling.EventPeerLeft); ev.Reason != "disconnected" {
		t.Fatalf("peer_left after close: %+v", ev)
	}
	b4 := dial(t, url, signaling.ClientConfig{})
	if _, err := b4.Rejoin(ctxT(t), pb.Token); !errors.As(err, &se) || se.Code != signaling.ErrBadToken {
		t.Fatalf("rejoin after the pairing ended: %v", err)
	}
}

func TestRejoinGraceRunsOut(t *testing.T) {
	leaktest.Check(t)
	_, url := startServer(t, Config{RejoinGrace: 100 * time.Millisecond})
	a := dial(t, url, signaling.ClientConfig{})
	b, drop := dialDroppable(t, url)
	pa, pb := pairByCode(t, a, b)
	drop()
	if ev := next(t, a, signaling.EventPeerLeft); ev.Reason != "dropped" {
		t.Fatalf("%+v", ev)
	}
	if ev := next(t, a, signaling.EventPeerLeft); ev.Reason != "disconnected" {
		t.Fatalf("after the grace: %+v", ev)
	}
	b2 := dial(t, url, signaling.ClientConfig{})
	var se *signaling.Error
	if _, err := b2.Rejoin(ctxT(t), pb.Token); !errors.As(err, &se) || se.Code != signaling.ErrBadToken {
		t.Fatalf("rejoin after the grace: %v", err)
	}
	// The room is the offerer's again, open to a new player.
	c := dial(t, url, signaling.ClientConfig{})
	if err := c.JoinRoom(ctxT(t), string(pa.Room)); err != nil {
		t.Fatal(err)
	}
	if pr := next(t, a, signaling.EventPaired).Pairing; pr.Role != signaling.RoleOfferer {
		t.Fatalf("%+v", pr)
	}
}

// TestRejoinAfterRestart: the server restarts (same secret); both players
// reconnect and rejoin with their tokens, in either order, and are paired
// again in their room and roles, though the new server never saw them.
func TestRejoinAfterRestart(t *testing.T) {
	leaktest.Check(t)
	url2, pa, pb := pairThenRestart(t)
	b2 := dial(t, url2, signaling.ClientConfig{})
	if role, err := b2.Rejoin(ctxT(t), pb.Token); err != nil || role != signaling.RoleAnswerer {
		t.Fatalf("answerer rejoins first: %v %v", role, err)
	}
	a2 := dial(t, url2, signaling.ClientConfig{})
	if role, err := a2.Rejoin(ctxT(t), pa.Token); err != nil || role != signaling.RoleOfferer {
		t.Fatalf("offerer rejoins: %v %v", role, err)
	}
	for _, c := range []*signaling.Client{a2, b2} {
		if pr := next(t, c, signaling.EventPaired).Pairing; pr.Room != pa.Room {
			t.Fatalf("paired in %s, want %s", pr.Room, pa.Room)
		}
	}
	if err := a2.SendOffer(ctxT(t), "v=0"); err != nil {
		t.Fatal(err)
	}
	next(t, b2, signaling.EventOffer)
	ra, rb, err := dialRelayPair(t, signaling.ClientConfig{}, url2, pa, pb)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, ra, rb, "after restart and rejoin")
	// Another secret does not know the pairing.
	_, url3 := startServer(t, Config{Secret: []byte("another secret, 16+ bytes")})
	c := dial(t, url3, signaling.ClientConfig{})
	var se *signaling.Error
	if _, err := c.Rejoin(ctxT(t), pa.Token); !errors.As(err, &se) || se.Code != signaling.ErrBadToken {
		t.Fatalf("rejoin on a server with another secret: %v", err)
	}
}
