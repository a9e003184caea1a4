package server

import (
	"errors"
	"testing"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
)

// Two players who agreed on a code both join-or-create it, in either order:
// the first creates the room (offerer), the second joins (answerer); a third
// gets room_full.
func TestJoinOrCreateRoom(t *testing.T) {
	leaktest.Check(t)
	_, url := startServer(t, Config{MaxRooms: 2})
	a, b, c := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	ra, err := a.JoinOrCreateRoom(ctxT(t), "brawl7")
	if err != nil || ra != signaling.RoleOfferer {
		t.Fatalf("first player: %v, %v; want offerer", ra, err)
	}
	rb, err := b.JoinOrCreateRoom(ctxT(t), "BRAWL7")
	if err != nil || rb != signaling.RoleAnswerer {
		t.Fatalf("second player: %v, %v; want answerer", rb, err)
	}
	pa := next(t, a, signaling.EventPaired).Pairing
	pb := next(t, b, signaling.EventPaired).Pairing
	if pa.Room != "BRAWL7" || pb.Room != "BRAWL7" || pa.Role != signaling.RoleOfferer || pb.Role != signaling.RoleAnswerer || pa.Token == pb.Token {
		t.Errorf("pairings %+v / %+v", pa, pb)
	}
	if _, err := c.JoinOrCreateRoom(ctxT(t), "brawl7"); !errors.Is(err, signaling.ErrRoomFull) {
		t.Errorf("third player: %v, want room_full", err)
	}
	if _, err := c.JoinOrCreateRoom(ctxT(t), "no!"); !errors.Is(err, signaling.ErrBadRoomCode) {
		t.Errorf("bad code: %v", err)
	}
	// Plain join still refuses a missing room; create counts toward MaxRooms.
	if err := c.JoinRoom(ctxT(t), "ZZZZZZ"); !errors.Is(err, signaling.ErrRoomNotFound) {
		t.Errorf("plain join of a missing room: %v", err)
	}
	if _, err := c.JoinOrCreateRoom(ctxT(t), "ARENA2"); err != nil {
		t.Fatal(err)
	}
	d := dial(t, url, signaling.ClientConfig{})
	if _, err := d.JoinOrCreateRoom(ctxT(t), "ARENA3"); !errors.Is(err, signaling.ErrTooManyRooms) {
		t.Errorf("room limit: %v", err)
	}
}

func TestCreateFlagOnlyInJoin(t *testing.T) {
	if _, err := signaling.DecodeMessage([]byte(`{"type":"quick","create":true}`)); !errors.Is(err, signaling.ErrBadMessage) {
		t.Errorf("create in quick: %v", err)
	}
	m, err := signaling.DecodeMessage([]byte(`{"type":"join","room":"abcdef","create":true}`))
	if err != nil || !m.Create || m.Room != "ABCDEF" {
		t.Errorf("join with create: %+v, %v", m, err)
	}
}
