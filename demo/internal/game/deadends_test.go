//go:build !js

package game

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testkit"
	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/physics"
)

// The demo has no dead ends: a private room's code outlives a lost rival,
// a code nobody holds says so and waits, and a player whose server's host
// quit can host instead. Everything runs on loopback.

// After a rival leaves a private room, looking for a new rival waits in the
// same room, under the same code, and a rival who comes with that code
// finds the player.
func TestRoomCodeKeptAfterLostRival(t *testing.T) {
	leaktest.Check(t)
	srv, url, a, code := hostPrivateRoom(t)
	b := testPlayer("b", url, code)
	b.Start()
	tickUntil(t, "a and b play", func() bool { return playing(a) && playing(b) }, a, b)
	b.Close() // the rival quits
	tickUntil(t, "a sees b gone", func() bool { return a.Status() == StatusLost }, a)

	a.Update(Controls{Confirm: true}) // "look for a new rival"
	tickUntil(t, "a waits again", func() bool { return a.Status() == StatusWaiting && srv.Stats().Rooms == 1 }, a)
	if a.Room() != code {
		t.Fatalf("a waits in room %q, want its code %q kept", a.Room(), code)
	}
	if a.NobodyInRoom() {
		t.Error("a's own room reported as a wrong code")
	}
	c := testPlayer("c", url, code) // the rival comes back with the old code
	defer c.Close()
	c.Start()
	tickUntil(t, "a and c play", func() bool { return playing(a) && playing(c) }, a, c)
	if c.Room() != code || a.Me() != 1 || c.Me() != 2 {
		t.Errorf("c in room %q (want %q), peers a %d c %d", c.Room(), code, a.Me(), c.Me())
	}
}

// Joining a code nobody holds says so after a moment (a held room pairs at
// once) and waits in that room: a rival who then comes with the code pairs.
func TestWrongRoomCode(t *testing.T) {
	leaktest.Check(t)
	srv := testServer(t)
	url := srv.LocalURL()
	clk := testkit.NewClock(time.Unix(1_700_000_000, 0))
	a := testPlayer("a", url, "ABCDEF")
	a.cfg.Now = clk.Now
	defer a.Close()
	a.Start()
	tickUntil(t, "a waits", func() bool { return a.Status() == StatusWaiting && srv.Stats().Rooms == 1 }, a)
	if a.NobodyInRoom() {
		t.Fatal("nobody-in-room said before the player waited at all")
	}
	clk.Advance(nobodyAfter)
	a.Update(Controls{})
	if !a.NobodyInRoom() {
		t.Fatalf("no word that nobody was in room ABCDEF after %v (status %v)", nobodyAfter, a.Status())
	}
	b := testPlayer("b", url, "ABCDEF")
	defer b.Close()
	b.Start()
	tickUntil(t, "a and b play", func() bool { return playing(a) && playing(b) }, a, b)
	if a.NobodyInRoom() || a.Room() != "ABCDEF" {
		t.Errorf("in a match: nobody-in-room %v, room %q", a.NobodyInRoom(), a.Room())
	}
}

// appUntil runs apps at about 60 Hz until cond holds (no limit but the test
// binary's), feeding each tick's controls.
func appUntil(t *testing.T, what string, cond func() bool, apps ...*App) {
	t.Helper()
	end, bounded := testwait.Deadline(t)
	for !cond() {
		if bounded && time.Now().After(end) {
			var st []string
			for _, a := range apps {
				st = append(st, a.statusLine())
			}
			t.Fatalf("%s: gave up near the test binary's deadline (%s)", what, strings.Join(st, "; "))
		}
		for _, a := range apps {
			a.Update(Controls{})
		}
		time.Sleep(physics.TickDuration)
	}
}

func testApp(t *testing.T, args ...string) *App {
	t.Helper()
	cfg, err := ParseFlags(args, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = NewLogger(&testWriter{t}, false)
	}
	return NewApp(cfg, log)
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// When the player whose demo runs the signaling server quits, the other
// player is told the server is gone (not "try again" forever), and Enter
// hosts a server in its own demo, where a new rival can join it.
func TestHostQuits(t *testing.T) {
	leaktest.Check(t)
	host := testApp(t, "-listen", "127.0.0.1:0")
	appUntil(t, "the host's server runs", func() bool { return host.Setup() == SetupDone }, host)
	emb, _ := host.Embedded()
	if !emb {
		t.Fatal("the host embeds no server")
	}
	guest := testApp(t, "-signal", host.SignalURL(), "-listen", "127.0.0.1:0")
	defer guest.Close()
	appUntil(t, "host and guest play", func() bool { return host.Connected() && guest.Connected() }, host, guest)

	oldURL := guest.SignalURL()
	host.Close() // the host quits: its game, its session and its server go
	appUntil(t, "the guest is told", func() bool { return guest.ServerGone() }, guest)
	if st := guest.Local().Status(); st != StatusLost && st != StatusFailed {
		t.Fatalf("guest status %v", st)
	}
	what, _ := Explain(guest.Local().Err())
	t.Logf("the guest's screen: rival lost: %s; the server is gone", what)

	guest.Update(Controls{Confirm: true}) // Enter: host here
	if guest.Setup() != SetupHosting {
		t.Fatalf("after Enter: setup %v, want hosting", guest.Setup())
	}
	appUntil(t, "the guest hosts and waits", func() bool {
		return guest.Setup() == SetupDone && guest.Local().Status() == StatusWaiting
	}, guest)
	if emb, _ := guest.Embedded(); !emb || guest.SignalURL() == oldURL || guest.ServerGone() {
		t.Fatalf("embedded %v, url %s (was %s), server gone %v", emb, guest.SignalURL(), oldURL, guest.ServerGone())
	}
	rival := testPlayer("rival", guest.SignalURL(), "")
	defer rival.Close()
	rival.Start()
	end, bounded := testwait.Deadline(t)
	for !(guest.Connected() && playing(rival)) {
		if bounded && time.Now().After(end) {
			t.Fatalf("the new rival did not pair with the guest: %s, rival %v", guest.statusLine(), rival.Status())
		}
		guest.Update(Controls{})
		rival.Update(Controls{})
		time.Sleep(physics.TickDuration)
	}
}
