package p2p

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
)

// TestEarlyOffer: a player whose Connect sends an early offer that is not
// spare (as a browser's does) quick-matches with one that waited with a
// spare one (as Go's does): it is the offerer, the server hands its offer
// to the other with the pairing, and WebRTC connects on the early offer's
// PeerConnection, with no other offer (no renegotiation). So it does when
// it joins a room a Go player created. Between two Go players (both
// spare) the usual roles hold, on the offerer's early offer: the one who
// waited offers.
func TestEarlyOffer(t *testing.T) {
	leaktest.Check(t)
	url, srv, _ := startSignalingServer(t)
	ctx := testCtx(t)
	check := func(t *testing.T, off, ans *Session) {
		t.Helper()
		if off.Role() != signaling.RoleOfferer || ans.Role() != signaling.RoleAnswerer {
			t.Fatalf("roles %v, %v", off.Role(), ans.Role())
		}
		for _, s := range []*Session{off, ans} {
			waitUntil(t, "webrtc up", func() bool { return s.Stats().WebRTC.State == LinkUp })
			if n := s.Stats().WebRTCRenewals; n != 0 {
				t.Errorf("%v: %d webrtc renewals, want none", s.Role(), n)
			}
		}
		if gotA, gotB := exchange(t, off, ans, 50); gotA < 45 || gotB < 45 {
			t.Errorf("received %d, %d of 50", gotA, gotB)
		}
	}

	// quick pairs a waiting player and an arriving one, each sending an
	// early offer of its kind, and returns them once both run.
	quick := func(t *testing.T, waitingKind, arrivingKind offerKind) (waiting, arriving *Session) {
		var errW error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			waiting, errW = connect(ctx, url, QuickMatch, cfgWith(nil), defaultPlan(waitingKind))
		}()
		waitUntil(t, "the first player queued", func() bool { return srv.Stats().Queued == 1 })
		arriving, err := connect(ctx, url, QuickMatch, cfgWith(nil), defaultPlan(arrivingKind))
		wg.Wait()
		if err != nil || errW != nil {
			t.Fatalf("connect: arriving %v, waiting %v", err, errW)
		}
		t.Cleanup(func() { arriving.Close(); waiting.Close() })
		return waiting, arriving
	}
	adopted := func(t *testing.T, s *Session) {
		t.Helper()
		if rtc := s.tr.rtc.Load(); rtc == nil || rtc.early == nil {
			t.Error("the offerer's PeerConnection is not its early offer's")
		}
	}

	t.Run("quick", func(t *testing.T) {
		waiting, early := quick(t, offerSpare, offerFull)
		check(t, early, waiting)
		adopted(t, early)
	})

	t.Run("joiner", func(t *testing.T) {
		room, err := CreateRoom(ctx, url, cfgWith(nil))
		if err != nil {
			t.Fatal(err)
		}
		var creator *Session
		var errC error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			creator, errC = room.Connect(ctx)
		}()
		joiner, err := connect(ctx, url, room.Code(), cfgWith(nil), defaultPlan(offerFull))
		wg.Wait()
		if err != nil || errC != nil {
			t.Fatalf("connect: joiner %v, creator %v", err, errC)
		}
		t.Cleanup(func() { creator.Close(); joiner.Close() })
		check(t, joiner, creator)
		adopted(t, joiner)
	})

	t.Run("spare", func(t *testing.T) {
		waiting, second := quick(t, offerSpare, offerSpare)
		check(t, waiting, second)
		adopted(t, waiting)
	})
}

// TestLateEarlyOffer: an early offer that is not ready when its player
// joins is not lost. The player joins without it (after earlyOfferWait)
// and either sends it while it waits, so the server delivers it with the
// pairing ("late"), or, paired before it is made, waits for it and sends
// it as its offer ("after the pairing"). Either way WebRTC connects on
// the early offer's PeerConnection, with no renegotiation.
func TestLateEarlyOffer(t *testing.T) {
	leaktest.Check(t)
	url, srv, _ := startSignalingServer(t)
	ctx := testCtx(t)
	for _, c := range []struct {
		name       string
		beforePair bool // the offer is made before the other player comes
	}{{"late", true}, {"after the pairing", false}} {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			sent := make(chan struct{})
			plan := earlyPlan{kind: offerFull, wait: 20 * time.Millisecond, gate: release}
			plan.sentLate = func(cl *signaling.Client) {
				// The server handles a connection's messages in order:
				// once it refuses a second quick, it has the offer.
				var se *signaling.Error
				if err := cl.QuickMatch(ctx); !errors.As(err, &se) || se.Code != signaling.ErrWrongState {
					t.Errorf("second quick = %v, want wrong_state", err)
				}
				close(sent)
			}
			var early *Session
			var errE error
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				early, errE = connect(ctx, url, QuickMatch, cfgWith(nil), plan)
			}()
			waitUntil(t, "the early player queued", func() bool { return srv.Stats().Queued == 1 })
			if c.beforePair {
				close(release)
				<-sent
			}
			pairings := srv.Stats().Pairings
			var other *Session
			var err error
			wg.Add(1)
			go func() {
				defer wg.Done()
				other, err = connect(ctx, url, QuickMatch, cfgWith(nil), defaultPlan(offerNone))
			}()
			if !c.beforePair {
				waitUntil(t, "the pairing", func() bool { return srv.Stats().Pairings > pairings })
				close(release)
			}
			wg.Wait()
			if err != nil || errE != nil {
				t.Fatalf("connect: other %v, early %v", err, errE)
			}
			t.Cleanup(func() { early.Close(); other.Close() })
			if early.Role() != signaling.RoleOfferer {
				t.Fatalf("the early player is the %v", early.Role())
			}
			for _, s := range []*Session{early, other} {
				waitUntil(t, "webrtc up", func() bool { return s.Stats().WebRTC.State == LinkUp })
				if n := s.Stats().WebRTCRenewals; n != 0 {
					t.Errorf("%v: %d webrtc renewals, want none", s.Role(), n)
				}
			}
			if rtc := early.tr.rtc.Load(); rtc == nil || rtc.early == nil {
				t.Fatal("the offerer's PeerConnection is not its early offer's")
			} else if c.beforePair && !rtc.early.delivered {
				// After the pairing it may still have gone late (sent
				// before the client read paired: the server relayed it
				// as the offer), or by the session: either is right.
				t.Error("the late early offer was not delivered by the server")
			}
			if gotA, gotB := exchange(t, early, other, 50); gotA < 45 || gotB < 45 {
				t.Errorf("received %d, %d of 50", gotA, gotB)
			}
		})
	}
}
