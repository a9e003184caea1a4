package game

import (
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/physics"
)

// checkGoroutines fails the test if goroutines started during it are
// still running a few seconds after it ends.
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if after := settleGoroutines(before, 5*time.Second); after > before {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Errorf("%d goroutines before, %d after:\n%s", before, after, buf[:n])
		}
	})
}

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
	return NewPlayer(PlayerConfig{Name: name, Signal: url, Room: room, Bot: true, Seed: 7, Log: log,
		P2P: p2p.Config{Prefer: p2p.TransportWebRTC, UDP4Only: true}})
}

// tickUntil runs the players at about 60 Hz until cond holds.
func tickUntil(t *testing.T, what string, limit time.Duration, cond func() bool, ps ...*Player) {
	t.Helper()
	end := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(end) {
			var st []string
			for _, p := range ps {
				st = append(st, p.Name()+": "+p.Status().String())
			}
			t.Fatalf("%s: not within %v (%s)", what, limit, strings.Join(st, ", "))
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
	checkGoroutines(t)
	srv := testServer(t)
	url := srv.LocalURL()
	a, b := testPlayer("a", url, ""), testPlayer("b", url, "")
	defer a.Close()
	a.Start()
	tickUntil(t, "a waits", 10*time.Second, func() bool { return a.Status() == StatusWaiting }, a)
	b.Start()
	tickUntil(t, "a and b play", 20*time.Second, func() bool { return playing(a) && playing(b) }, a, b)
	if a.Me() != 1 || b.Me() != 2 {
		t.Errorf("peer ids a %d, b %d: the one who waited is the offerer, peer 1", a.Me(), b.Me())
	}
	tickUntil(t, "round 1 on both", 10*time.Second, func() bool {
		na, _, _ := a.Rules().Round()
		nb, _, _ := b.Rules().Round()
		return na == 1 && nb == 1
	}, a, b)

	b.Close() // b quits: its session says bye
	tickUntil(t, "a sees b gone", 10*time.Second, func() bool { return a.Status() == StatusLost }, a)
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
	tickUntil(t, "a waits again", 10*time.Second, func() bool { return a.Status() == StatusWaiting }, a)

	c := testPlayer("c", url, "")
	defer c.Close()
	c.Start()
	tickUntil(t, "a and c play", 20*time.Second, func() bool { return playing(a) && playing(c) }, a, c)
	if n, _, _ := a.Rules().Round(); n > 1 || len(a.Results()) != 0 {
		t.Errorf("the new match carries the old one: round %d, results %v", n, a.Results())
	}
	if s := a.Summary(); s.Transport != "webrtc" || s.Status != "connected" {
		t.Errorf("summary %+v", s)
	}
}

// A player creates a private room (-room new) and shows its code; the
// rival joins with the code; a third player with the same code is refused
// with a clear error, and Confirm retries.
func TestPrivateRoom(t *testing.T) {
	checkGoroutines(t)
	srv := testServer(t)
	url := srv.LocalURL()
	a := testPlayer("a", url, "new")
	defer a.Close()
	a.Start()
	tickUntil(t, "a waits in its room", 10*time.Second, func() bool { return a.Status() == StatusWaiting && a.Room() != "" }, a)
	code := a.Room()
	b, c := testPlayer("b", url, code), testPlayer("c", url, code)
	defer b.Close()
	defer c.Close()
	b.Start()
	tickUntil(t, "a and b play", 20*time.Second, func() bool { return playing(a) && playing(b) }, a, b)
	if a.Me() != 1 || b.Me() != 2 || b.Room() != code {
		t.Errorf("creator peer %d, joiner peer %d in room %q (code %q)", a.Me(), b.Me(), b.Room(), code)
	}
	c.Start()
	tickUntil(t, "c refused", 10*time.Second, func() bool { return c.Status() == StatusFailed }, a, b, c)
	if c.Err() == nil || !strings.Contains(c.Err().Error(), code) {
		t.Errorf("error %v does not name the room", c.Err())
	}
	c.Update(Controls{Confirm: true})
	if c.Status() != StatusConnecting && c.Status() != StatusWaiting {
		t.Errorf("after Confirm: %v", c.Status())
	}
	tickUntil(t, "c refused again", 10*time.Second, func() bool { return c.Status() == StatusFailed }, a, b, c)
	if !playing(a) || !playing(b) {
		t.Error("the third player disturbed the match")
	}
}

func TestEmbeddedServerURLs(t *testing.T) {
	checkGoroutines(t)
	srv := testServer(t)
	if u := srv.LocalURL(); !strings.HasPrefix(u, "http://127.0.0.1:") || !isLoopbackURL(u) {
		t.Errorf("local URL %q", u)
	}
	if s := srv.ShareURLs(); len(s) != 0 {
		t.Errorf("a loopback server is shared as %v", s)
	}
	if err := healthy(t.Context(), srv.LocalURL(), time.Second); err != nil {
		t.Errorf("health check: %v", err)
	}
	for _, ip := range lanIPv4s() {
		if ip.IsLoopback() || ip.To4() == nil {
			t.Errorf("LAN address %v", ip)
		}
	}
	for u, want := range map[string]bool{"http://127.0.0.1:8080": true, "ws://localhost/x": true, "http://[::1]:1": true,
		"http://192.168.1.2:8080": false, "::bad": false} {
		if isLoopbackURL(u) != want {
			t.Errorf("isLoopbackURL(%q) != %v", u, want)
		}
	}
}
