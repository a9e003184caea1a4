package game

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/physics"
	"github.com/ragsync/ragsync/signaling/server"
)

// botApp runs a -bot match (two players in this process, through srv)
// until both play, and returns it.
func botApp(t *testing.T, url string, extra ...string) *App {
	t.Helper()
	args := append([]string{"-headless", "-bot", "-signal", url, "-round", "20s"}, extra...)
	cfg, err := ParseFlags(args, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Headless, cfg.TrustSignal = true, true
	app := NewApp(cfg, slog.New(slog.DiscardHandler))
	ctx := testwait.Context(t)
	for !(app.Local() != nil && app.Bot() != nil && app.Local().Synced() && app.Bot().Synced() &&
		app.Local().FeedSent() > 0 && app.Bot().FeedSent() > 0) {
		if app.Setup() == SetupFailed || ctx.Err() != nil {
			app.Close()
			t.Fatalf("no match: %v %v", app.Err(), ctx.Err())
		}
		app.Update(Controls{})
		time.Sleep(physics.TickDuration)
	}
	return app
}

// sent is the bytes both players sent so far (the sessions' own counters)
// and uploaded to the feed, and the ticks they ran.
func sent(a *App) (session, feed, ticks uint64) {
	for _, p := range []*Player{a.Local(), a.Bot()} {
		st := p.Session().Stats()
		for _, l := range []*p2p.LinkStats{&st.WebRTC, &st.TCP} {
			session += l.TxBytes
		}
		feed += p.FeedSent()
		ticks += p.Match().Stats().Ticks
	}
	return
}

// play runs n ticks of the app at 60 Hz.
func play(a *App, n int, _ []*Watcher) {
	tick := time.NewTicker(physics.TickDuration)
	defer tick.Stop()
	for range n {
		a.Update(Controls{})
		<-tick.C
	}
}

// watch runs the watchers, each on its own goroutine as its own program
// would, until stop is closed.
func watch(ws []*Watcher, stop chan struct{}, done *sync.WaitGroup) {
	for _, w := range ws {
		done.Add(1)
		go func() {
			defer done.Done()
			tick := time.NewTicker(physics.TickDuration)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					w.Update()
				}
			}
		}()
	}
}

// TestSpectatorsDoNotGrowUpload: 100 spectators watch a bot match through
// the server's feed; the players' bytes sent per second (their sessions'
// and feed uploads' own counters) stay within 5 % of a match without
// spectators, and every spectator sees both fighters. Two matches, A and
// B, play at once: in the first window the 100 spectators watch B, in the
// second A. Each window compares the watched match with the unwatched one
// under the same load, and each match is once watched and once not, so
// neither the machine's load nor one match's play (who holds a prop: its
// states cost bytes) decides the figure: the change is the geometric mean
// of the two windows' ratios.
func TestSpectatorsDoNotGrowUpload(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time match on loopback")
	}
	leaktest.Check(t)
	srv, err := server.Start("127.0.0.1:0", server.Config{MaxConnsPerAddr: 1000, MaxHandshakesPerAddr: 1000, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a := botApp(t, srv.URL())
	defer a.Close()
	b := botApp(t, srv.URL())
	defer b.Close()
	both := func(n int) {
		tick := time.NewTicker(physics.TickDuration)
		defer tick.Stop()
		for range n {
			a.Update(Controls{})
			b.Update(Controls{})
			<-tick.C
		}
	}
	const window = 480 // ticks: 8 s
	// measure has the spectators watch room and returns the bytes per
	// second both players of watched and of other sent meanwhile.
	measure := func(watched, other *App) (w, o float64, ws []*Watcher) {
		ws = make([]*Watcher, 100)
		for i := range ws {
			if ws[i], err = NewSpectate(srv.URL(), watched.Local().Room(), ""); err != nil {
				t.Fatal(err)
			}
		}
		stop := make(chan struct{})
		var running sync.WaitGroup
		watch(ws, stop, &running)
		for i := 0; i < 3000 && watched.Local().Watchers() < len(ws); i++ {
			both(10)
		}
		ws0, wf0, _ := sent(watched)
		os0, of0, _ := sent(other)
		t0 := time.Now()
		both(window)
		ws1, wf1, _ := sent(watched)
		os1, of1, _ := sent(other)
		el := time.Since(t0).Seconds()
		close(stop)
		running.Wait()
		for _, w := range ws {
			w.Close()
		}
		return float64(ws1+wf1-ws0-wf0) / el, float64(os1+of1-os0-of0) / el, ws
	}
	bW, aU, _ := measure(b, a)
	aW, bU, ws := measure(a, b)
	change := math.Sqrt(aW/bU*bW/aU) - 1
	t.Logf("FIGURE players' bytes sent per second (sessions + feed uploads), 100 spectators: window 1 B watched %.0f, A not %.0f; window 2 A watched %.0f, B not %.0f; watched vs not %+.2f %%",
		bW, aU, aW, bU, 100*change)
	if math.Abs(change) > 0.05 {
		t.Errorf("the players' upload changed by %.1f %% with %d spectators", 100*change, len(ws))
	}
	for i, w := range ws {
		st := w.States()
		if st[0] == 0 || st[1] == 0 || w.Err() != nil {
			t.Errorf("spectator %d: states %v, err %v", i, st, w.Err())
		}
		if v := w.View(); !v.Seen[0] || !v.Seen[1] {
			t.Errorf("spectator %d does not show both fighters: %+v", i, v.Seen)
		}
	}
}

// TestRecordReplayRoundTrip: a bot match recorded (-record), replayed
// headless, gives the players' own final HP, KOs and hits.
func TestRecordReplayRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time match on loopback")
	}
	srv, err := server.Start("127.0.0.1:0", server.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "match.rsrp")
	app := botApp(t, srv.URL(), "-record", file)
	play(app, 600, nil)
	sums := app.Summaries()
	app.Close()

	cfg, err := ParseFlags([]string{"-headless", "-replay", file, "-json"}, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := RunHeadless(context.Background(), cfg, &out, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	i := bytes.IndexByte(out.Bytes(), '{')
	var rep WatchReport
	if i < 0 || json.Unmarshal(out.Bytes()[i:], &rep) != nil {
		t.Fatalf("no JSON report:\n%s", out.String())
	}
	w := rep.Watch
	t.Logf("FIGURE replay of %.1f s: %v states, HP %v, KOs %v, hits dealt %v taken %v", w.Seconds, w.SpectatedStates, w.HP, w.KOs, w.HitsDealt, w.HitsTaken)
	for _, s := range sums {
		k := s.PeerID - 1
		if s.HP != w.HP[k] || s.KOs != w.KOs[k] || s.HitsDealt != w.HitsDealt[k] || s.HitsTaken != w.HitsTaken[k] || s.Damage != w.Damage[k] {
			t.Errorf("side %d: player says HP %d KOs %d dealt %d taken %d damage %d; replay HP %d KOs %d dealt %d taken %d damage %d",
				k+1, s.HP, s.KOs, s.HitsDealt, s.HitsTaken, s.Damage, w.HP[k], w.KOs[k], w.HitsDealt[k], w.HitsTaken[k], w.Damage[k])
		}
	}
}

// TestNoSpectators: a player started with -no-spectators has the server
// refuse spectators for its room.
func TestNoSpectators(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time match on loopback")
	}
	srv, err := server.Start("127.0.0.1:0", server.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	app := botApp(t, srv.URL(), "-no-spectators")
	defer app.Close()
	w, err := NewSpectate(srv.URL(), app.Local().Room(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := testwait.Context(t)
	for w.Err() == nil && ctx.Err() == nil {
		play(app, 5, nil)
		w.Update()
	}
	if err := w.Err(); err == nil || !strings.Contains(err.Error(), "no_spectators") {
		t.Fatalf("spectator: %v, want no_spectators", err)
	}
	if st := w.States(); st[0]+st[1] != 0 {
		t.Fatalf("a refused spectator got %v states", st)
	}
}

func TestFeedURL(t *testing.T) {
	for _, tc := range []struct{ signal, want string }{
		{"http://127.0.0.1:8080", "ws://127.0.0.1:8080/feed?room=ABCDEF&side=2&v=1"},
		{"https://example.org/ws", "wss://example.org/feed?room=ABCDEF&side=2&v=1"},
	} {
		got, err := feedURL(tc.signal, "ABCDEF", 2)
		if err != nil || got != tc.want {
			t.Errorf("feedURL(%q) = %q, %v; want %q", tc.signal, got, err, tc.want)
		}
	}
	if _, err := feedURL("ftp://x", "ABCDEF", 0); err == nil {
		t.Error("feedURL accepted ftp")
	}
}
