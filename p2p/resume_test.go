package p2p

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
)

// resumeBoth: after the answerer's crash (its session and the survivor's
// ended), a stranger with the room code cannot take a seat, both players
// take theirs back with Config.Resume and their seat tokens, in the same
// roles, and talk again; once the match has ended, a token gets
// ErrSeatLost.
func resumeBoth(t *testing.T, url string, ca, cb Config, tokA, tokB, room string) {
	t.Helper()
	if tokA == "" || tokB == "" || tokA == tokB {
		t.Fatalf("seat tokens: %d and %d bytes, equal %v", len(tokA), len(tokB), tokA == tokB)
	}
	ctx, cancel := testwait.ContextFrom(context.Background(), t)
	defer cancel()
	stranger, err := Connect(ctx, url, room, cb)
	var se *signaling.Error
	if err == nil || !errors.As(err, &se) || se.Code != signaling.ErrRoomFull {
		if stranger != nil {
			stranger.Close()
		}
		t.Fatalf("a stranger with the room code: %v, want room full", err)
	}
	var wg sync.WaitGroup
	var a, b *Session
	var errA, errB error
	wg.Add(2)
	go func() {
		defer wg.Done()
		c := ca
		c.Resume = tokA
		a, errA = Connect(ctx, url, room, c)
	}()
	go func() {
		defer wg.Done()
		time.Sleep(2 * time.Second) // the crashed process starts again
		c := cb
		c.Resume = tokB
		b, errB = Connect(ctx, url, QuickMatch, c)
	}()
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("resuming: survivor %v, returning %v", errA, errB)
	}
	if a.Role() != signaling.RoleOfferer || b.Role() != signaling.RoleAnswerer || !a.Resumed() || !b.Resumed() {
		t.Errorf("resumed as %v/%v (resumed %v/%v), want the same roles", a.Role(), b.Role(), a.Resumed(), b.Resumed())
	}
	tr := startTraffic(a, b, 16*time.Millisecond)
	tr.waitBoth(t, 20)
	tr.halt()
	// A deliberate goodbye ends the match: the token is spent.
	b.Close()
	a.Close()
	c := cb
	c.Resume = tokB
	s, err := Connect(ctx, url, room, c)
	if s != nil {
		s.Close()
	}
	if !errors.Is(err, ErrSeatLost) {
		t.Errorf("a token after the match ended: %v, want ErrSeatLost", err)
	}
}
