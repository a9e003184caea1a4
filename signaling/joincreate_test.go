package signaling

import (
	"errors"
	"testing"

	"github.com/ragsync/ragsync/internal/leaktest"
)

// Two players who agreed on a code both join-or-create it, in either order:
// the first creates the room (offerer), the second joins (answerer); a third
// gets room_full.
func TestJoinOrCreateRoom(t *testing.T) {
	leaktest.Check(t)
	_, url := startServer(t, Config{MaxRooms: 2})
	a, b, c := dial(t, url, ClientConfig{}), dial(t, url, ClientConfig{}), dial(t, url, ClientConfig{})
	ra, err := a.JoinOrCreateRoom(ctxT(t), "brawl7")
	if err != nil || ra != RoleOfferer {
		t.Fatalf("first player: %v, %v; want offerer", ra, err)
	}
	rb, err := b.JoinOrCreateRoom(ctxT(t), "BRAWL7")
	if err != nil || rb != RoleAnswerer {
		t.Fatalf("second player: %v, %v; want answerer", rb, err)
	}
	pa := next(t, a, EventPaired).Pairing
	pb := next(t, b, EventPaired).Pairing
	if pa.Room != "BRAWL7" || pb.Room != "BRAWL7" || pa.Role != RoleOfferer || pb.Role != RoleAnswerer || pa.Token == pb.Token {
		t.Errorf("pairings %+v / %+v", pa, pb)
	}
	if _, err := c.JoinOrCreateRoom(ctxT(t), "brawl7"); !errors.Is(err, ErrRoomFull) {
		t.Errorf("third player: %v, want room_full", err)
	}
	if _, err := c.JoinOrCreateRoom(ctxT(t), "no!"); !errors.Is(err, ErrBadRoomCode) {
		t.Errorf("bad code: %v", err)
	}
	// Plain join still refuses a missing room; create counts toward MaxRooms.
	if err := c.JoinRoom(ctxT(t), "ZZZZZZ"); !errors.Is(err, ErrRoomNotFound) {
		t.Errorf("plain join of a missing room: %v", err)
	}
	if _, err := c.JoinOrCreateRoom(ctxT(t), "ARENA2"); err != nil {
		t.Fatal(err)
	}
	d := dial(t, url, ClientConfig{})
	if _, err := d.JoinOrCreateRoom(ctxT(t), "ARENA3"); !errors.Is(err, ErrTooManyRooms) {
		t.Errorf("room limit: %v", err)
	}
}

func TestCreateFlagOnlyInJoin(t *testing.T) {
	if _, err := DecodeMessage([]byte(`{"type":"quick","create":true}`)); !errors.Is(err, ErrBadMessage) {
		t.Errorf("create in quick: %v", err)
	}
	m, err := DecodeMessage([]byte(`{"type":"join","room":"abcdef","create":true}`))
	if err != nil || !m.Create || m.Room != "ABCDEF" {
		t.Errorf("join with create: %+v, %v", m, err)
	}
}
