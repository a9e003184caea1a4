package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
)

// TestEarlyOffer: an offer that comes with quick, create or join reaches
// the answerer right after paired, and makes its sender the offerer
// (arriving second in quick match, or joining a room) unless the other
// player brought one too; a spare offer yields to one that is not.
func TestEarlyOffer(t *testing.T) {
	leaktest.Check(t)
	_, url := startServer(t, Config{})
	if c := dial(t, url, signaling.ClientConfig{}); c.TURN() {
		t.Error("a server without TURN says it has it")
	}
	const offA, offB = "v=0 offer of A", "v=0 offer of B"

	// quick: pair the players a (waits) and b (arrives), each with or
	// without an early offer; want the offerer and the offer b or a gets.
	cases := []struct {
		name      string
		a, b      string // early offers
		aSpare    bool   // a's is spare (SetSpareOffer)
		bSpare    bool
		bOffers   bool
		wantOffer string // the early offer the answerer gets ("" none)
	}{
		{name: "none", wantOffer: ""},
		{name: "waiting player's", a: offA, wantOffer: offA},
		{name: "arriving player's", b: offB, bOffers: true, wantOffer: offB},
		{name: "both: the waiting player's", a: offA, b: offB, wantOffer: offA},
		{name: "both spare: the waiting player's", a: offA, aSpare: true, b: offB, bSpare: true, wantOffer: offA},
		{name: "a spare one against none", b: offB, bSpare: true, bOffers: true, wantOffer: offB},
		{name: "the arriving player's against a spare one", a: offA, aSpare: true, b: offB, bOffers: true, wantOffer: offB},
		{name: "the waiting player's against a spare one", a: offA, b: offB, bSpare: true, wantOffer: offA},
	}
	for _, tc := range cases {
		t.Run("quick/"+tc.name, func(t *testing.T) {
			a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
			setOffer := func(c *signaling.Client, sdp string, spare bool) {
				if spare {
					c.SetSpareOffer(sdp)
				} else {
					c.SetOffer(sdp)
				}
			}
			setOffer(a, tc.a, tc.aSpare)
			if err := a.QuickMatch(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			setOffer(b, tc.b, tc.bSpare)
			if err := b.QuickMatch(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			pa, pb := next(t, a, signaling.EventPaired).Pairing, next(t, b, signaling.EventPaired).Pairing
			off, ans := a, b
			if tc.bOffers {
				off, ans = b, a
				if pb.Role != signaling.RoleOfferer || pa.Role != signaling.RoleAnswerer {
					t.Fatalf("roles a %v b %v, want b the offerer", pa.Role, pb.Role)
				}
			} else if pa.Role != signaling.RoleOfferer || pb.Role != signaling.RoleAnswerer {
				t.Fatalf("roles a %v b %v, want a the offerer", pa.Role, pb.Role)
			}
			if tc.wantOffer != "" {
				if ev := next(t, ans, signaling.EventOffer); ev.SDP != tc.wantOffer {
					t.Fatalf("answerer got offer %q, want %q", ev.SDP, tc.wantOffer)
				}
			}
			// Nothing else was queued for either: the next message each
			// gets is the other's.
			exchange(t, off, ans)
		})
	}

	t.Run("create", func(t *testing.T) {
		a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
		a.SetOffer(offA)
		code, err := a.CreateRoom(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		b.SetOffer(offB) // both brought one: the creator offers, b's is discarded
		if role, err := b.JoinOrCreateRoom(ctxT(t), string(code)); err != nil || role != signaling.RoleAnswerer {
			t.Fatalf("join: %v %v", role, err)
		}
		next(t, a, signaling.EventPaired)
		next(t, b, signaling.EventPaired)
		if ev := next(t, b, signaling.EventOffer); ev.SDP != offA {
			t.Fatalf("joiner got %q", ev.SDP)
		}
		exchange(t, a, b)
	})

	t.Run("joiner's", func(t *testing.T) {
		// Only the joiner brings an early offer: it offers, and the
		// creator (told offerer in joined) is told answerer in paired.
		a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
		code, err := a.CreateRoom(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		b.SetOffer(offB)
		if role, err := b.JoinOrCreateRoom(ctxT(t), string(code)); err != nil || role != signaling.RoleOfferer {
			t.Fatalf("join: %v %v, want the offerer", role, err)
		}
		if p := next(t, a, signaling.EventPaired).Pairing; p.Role != signaling.RoleAnswerer {
			t.Fatalf("creator paired as %v", p.Role)
		}
		if p := next(t, b, signaling.EventPaired).Pairing; p.Role != signaling.RoleOfferer {
			t.Fatalf("joiner paired as %v", p.Role)
		}
		if ev := next(t, a, signaling.EventOffer); ev.SDP != offB {
			t.Fatalf("creator got %q", ev.SDP)
		}
		exchange(t, b, a)
	})

	t.Run("join creating", func(t *testing.T) {
		a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
		a.SetOffer(offA)
		if role, err := a.JoinOrCreateRoom(ctxT(t), "EARLY2"); err != nil || role != signaling.RoleOfferer {
			t.Fatalf("create: %v %v", role, err)
		}
		if err := b.JoinRoom(ctxT(t), "EARLY2"); err != nil {
			t.Fatal(err)
		}
		next(t, a, signaling.EventPaired)
		next(t, b, signaling.EventPaired)
		if ev := next(t, b, signaling.EventOffer); ev.SDP != offA {
			t.Fatalf("joiner got %q", ev.SDP)
		}
	})

	t.Run("too big", func(t *testing.T) {
		a := dial(t, url, signaling.ClientConfig{})
		a.SetOffer("v=0" + strings.Repeat("x", 64<<10)) // 64 KiB: signaling's limit on an sdp field
		err := a.QuickMatch(ctxT(t))
		var se *signaling.Error
		if !errors.As(err, &se) || (se.Code != signaling.ErrBadMessage && se.Code != signaling.ErrMessageTooBig) {
			t.Fatalf("quick with an oversized early offer = %v, want bad_message or message_too_big", err)
		}
	})
}

// TestLateEarlyOffer: an offer sent while waiting (queued, or alone in a
// room) counts as an early offer that came with the join: it makes its
// sender the offerer (over a joiner's early offer too) and the answerer
// gets it right after paired.
func TestLateEarlyOffer(t *testing.T) {
	leaktest.Check(t)
	_, url := startServer(t, Config{})
	const offA, offB = "v=0 late offer of A", "v=0 offer of B"
	// sendLate sends a's late offer and waits until the server has it: a
	// second quick is refused after it (a connection's messages are
	// handled in order).
	sendLate := func(t *testing.T, a *signaling.Client) {
		t.Helper()
		if err := a.SendOffer(ctxT(t), offA); err != nil {
			t.Fatal(err)
		}
		var se *signaling.Error
		if err := a.QuickMatch(ctxT(t)); !errors.As(err, &se) || se.Code != signaling.ErrWrongState {
			t.Fatalf("second quick = %v, want wrong_state", err)
		}
	}
	for _, bOffer := range []string{"", offB} {
		t.Run("quick/b brings "+map[bool]string{true: "one", false: "none"}[bOffer != ""], func(t *testing.T) {
			a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
			if err := a.QuickMatch(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			sendLate(t, a)
			b.SetOffer(bOffer)
			if err := b.QuickMatch(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			if p := next(t, a, signaling.EventPaired).Pairing; p.Role != signaling.RoleOfferer {
				t.Fatalf("a paired as %v", p.Role)
			}
			next(t, b, signaling.EventPaired)
			if ev := next(t, b, signaling.EventOffer); ev.SDP != offA {
				t.Fatalf("answerer got offer %q, want a's late one", ev.SDP)
			}
			exchange(t, a, b)
		})
	}
	t.Run("room", func(t *testing.T) {
		// Without its late offer the creator would be the answerer of a
		// joiner bringing one.
		a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
		code, err := a.CreateRoom(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.SendOffer(ctxT(t), offA); err != nil {
			t.Fatal(err)
		}
		var se *signaling.Error
		if _, err := a.CreateRoom(ctxT(t)); !errors.As(err, &se) || se.Code != signaling.ErrWrongState {
			t.Fatalf("second create = %v, want wrong_state", err)
		}
		b.SetOffer(offB)
		if role, err := b.JoinOrCreateRoom(ctxT(t), string(code)); err != nil || role != signaling.RoleAnswerer {
			t.Fatalf("join: %v %v, want the answerer", role, err)
		}
		next(t, a, signaling.EventPaired)
		next(t, b, signaling.EventPaired)
		if ev := next(t, b, signaling.EventOffer); ev.SDP != offA {
			t.Fatalf("joiner got %q", ev.SDP)
		}
		exchange(t, a, b)
	})
	t.Run("not waiting", func(t *testing.T) {
		// An offer from a player who is nowhere is still refused.
		a := dial(t, url, signaling.ClientConfig{})
		if err := a.SendOffer(ctxT(t), offA); err != nil {
			t.Fatal(err)
		}
		ev := next(t, a, signaling.EventError)
		if ev.Err.Code != signaling.ErrWrongState || ev.Err.Ref != signaling.TypeOffer {
			t.Fatalf("got %v", ev.Err)
		}
	})
}
