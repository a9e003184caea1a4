//go:build !js

package game

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/lanaddr"
	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/physics"
)

func testServer(t *testing.T) *embeddedServer {
	t.Helper()
	srv, err := startServer("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func testPlayer(name, url, room string) *Player {
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	// WebRTC gets a minute to open instead of 5 s, so that a loaded
	// machine does not start the session on TCP.
	return NewPlayer(PlayerConfig{Name: name, Signal: url, Room: room, Bot: BotHard, Seed: 7, Log: log,
		P2P: p2p.Config{Prefer: p2p.TransportWebRTC, UDP4Only: true, WebRTCTimeout: time.Minute}})
}

// hostPrivateRoom starts a server (testServer) and a player "a" that
// creates a private room on it (-room new), and returns once a waits in
// its room, with the room's code. a closes with the test.
func hostPrivateRoom(t *testing.T) (srv *embeddedServer, url string, a *Player, code string) {
	t.Helper()
	srv = testServer(t)
	url = srv.LocalURL()
	a = testPlayer("a", url, "new")
	t.Cleanup(a.Close)
	a.Start()
	tickUntil(t, "a waits in its room", func() bool { return a.Status() == StatusWaiting && a.Room() != "" }, a)
	return srv, url, a, a.Room()
}

// tickUntil runs the players at about 60 Hz until cond holds. It has no
// time limit of its own, only the test binary's (testwait): a loaded
// machine pairs and syncs later, not never.
func tickUntil(t *testing.T, what string, cond func() bool, ps ...*Player) {
	t.Helper()
	end, bounded := testwait.Deadline(t)
	for !cond() {
		if bounded && time.Now().After(end) {
			var st []string
			for _, p := range ps {
				st = append(st, p.Name()+": "+p.Status().String())
			}
			t.Fatalf("%s: gave up near the test binary's deadline (%s)", what, strings.Join(st, ", "))
		}
		for _, p := range ps {
			p.Update(Controls{})
		}
		time.Sleep(physics.TickDuration)
	}
}

func playing(p *Player) bool { return p.Match() != nil && p.Synced() && p.Status() == StatusConnected }

// A player whose rival leaves shows it, goes back to waiting on Confirm,
// and pairs with the next player in a fresh match.
func TestRivalLostAndNewRival(t *testing.T) {
	leaktest.Check(t)
	srv := testServer(t)
	url := srv.LocalURL()
	a, b := testPlayer("a", url, ""), testPlayer("b", url, "")
	defer a.Close()
	a.Start()
	// a shows Waiting before its quick-match request reaches the server:
	// wait for the server to have it queued, so that a is the one who
	// waited (however late a loaded machine sends it).
	tickUntil(t, "a waits", func() bool { return a.Status() == StatusWaiting && srv.Stats().Queued == 1 }, a)
	b.Start()
	tickUntil(t, "a and b play", func() bool { return playing(a) && playing(b) }, a, b)
	if a.Me() != 1 || b.Me() != 2 {
		t.Errorf("peer ids a %d, b %d: the one who waited is the offerer, peer 1", a.Me(), b.Me())
	}
	tickUntil(t, "round 1 on both", func() bool {
		na, _, _ := a.Rules().Round()
		nb, _, _ := b.Rules().Round()
		return na == 1 && nb == 1
	}, a, b)

	b.Close() // b quits: its session says bye
	tickUntil(t, "a sees b gone", func() bool { return a.Status() == StatusLost }, a)
	if a.Err() == nil {
		t.Error("no reason given for the lost rival")
	}
	// Nothing more happens until the player confirms.
	for range 30 {
		a.Update(Controls{})
	}
	if a.Status() != StatusLost {
		t.Fatalf("status %v without confirming", a.Status())
	}
	a.Update(Controls{Confirm: true})
	tickUntil(t, "a waits again", func() bool { return a.Status() == StatusWaiting && srv.Stats().Queued == 1 }, a)

	c := testPlayer("c", url, "")
	defer c.Close()
	c.Start()
	tickUntil(t, "a and c play", func() bool { return playing(a) && playing(c) }, a, c)
	if n, _, _ := a.Rules().Round(); n > 1 || len(a.Results()) != 0 {
		t.Errorf("the new match carries the old one: round %d, results %v", n, a.Results())
	}
	// WebRTC is preferred; a stall of its data channel longer than
	// FailoverAfter on a loaded machine moves the session to TCP until
	// WebRTC pings as well again: a working failover, not a failure.
	s := a.Summary()
	failedOver := s.Transport == "tcp" && s.Switches > 0
	if (s.Transport != "webrtc" && !failedOver) || s.Status != "connected" {
		t.Errorf("summary %+v", s)
	}
}

// A player creates a private room (-room new) and shows its code; the
// rival joins with the code; a third player with the same code is refused
// with a clear error, and Confirm retries.
func TestPrivateRoom(t *testing.T) {
	leaktest.Check(t)
	_, url, a, code := hostPrivateRoom(t)
	b, c := testPlayer("b", url, code), testPlayer("c", url, code)
	defer b.Close()
	defer c.Close()
	b.Start()
	tickUntil(t, "a and b play", func() bool { return playing(a) && playing(b) }, a, b)
	if a.Me() != 1 || b.Me() != 2 || b.Room() != code {
		t.Errorf("creator peer %d, joiner peer %d in room %q (code %q)", a.Me(), b.Me(), b.Room(), code)
	}
	c.Start()
	tickUntil(t, "c refused", func() bool { return c.Status() == StatusFailed }, a, b, c)
	if c.Err() == nil || !strings.Contains(c.Err().Error(), code) {
		t.Errorf("error %v does not name the room", c.Err())
	}
	c.Update(Controls{Confirm: true})
	if c.Status() != StatusConnecting && c.Status() != StatusWaiting {
		t.Errorf("after Confirm: %v", c.Status())
	}
	tickUntil(t, "c refused again", func() bool { return c.Status() == StatusFailed }, a, b, c)
	if !playing(a) || !playing(b) {
		t.Error("the third player disturbed the match")
	}
}

func TestEmbeddedServerURLs(t *testing.T) {
	leaktest.Check(t)
	srv := testServer(t)
	if u := srv.LocalURL(); !strings.HasPrefix(u, "http://127.0.0.1:") || !IsLoopbackURL(u) {
		t.Errorf("local URL %q", u)
	}
	if s := srv.ShareURLs(); len(s) != 0 {
		t.Errorf("a loopback server is shared as %v", s)
	}
	// No timeout of its own: the test binary's bounds the context.
	if err := healthy(testwait.Context(t), srv.LocalURL(), time.Hour); err != nil {
		t.Errorf("health check: %v", err)
	}
	for _, ip := range lanaddr.IPv4s() {
		if ip.IsLoopback() || ip.To4() == nil {
			t.Errorf("LAN address %v", ip)
		}
	}
	for u, want := range map[string]bool{"http://127.0.0.1:8080": true, "ws://localhost/x": true, "http://[::1]:1": true,
		"http://192.168.1.2:8080": false, "::bad": false} {
		t.Run(u, func(t *testing.T) {
			if IsLoopbackURL(u) != want {
				t.Errorf("IsLoopbackURL(%q) != %v", u, want)
			}
		})
	}
}

// A player with RetryPairing (autoplay: nobody presses a key) pairs
// again by itself after a failed pairing, and plays when a rival comes.
func TestRetryPairing(t *testing.T) {
	srv := testServer(t)
	url := srv.LocalURL()
	a := testPlayer("a", "http://127.0.0.1:1/%zz", "") // a URL p2p refuses: the pairing fails at once
	a.cfg.RetryPairing = 50 * time.Millisecond
	t.Cleanup(a.Close)
	a.Start()
	tickUntil(t, "a's pairing fails", func() bool { return a.Status() == StatusFailed }, a)
	a.cfg.Signal = url // the next one reaches the server
	tickUntil(t, "a pairs again", func() bool { return a.Status() == StatusWaiting || a.Status() == StatusConnecting }, a)
	b := testPlayer("b", url, "")
	t.Cleanup(b.Close)
	b.Start()
	tickUntil(t, "both play", func() bool { return playing(a) && playing(b) }, a, b)
}
