package main

import (
	"encoding/json"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragsync/ragsync/demo/internal/demotest"
	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling/server"
)

// TestSpectateAndReplay: two headless demos play in a room, each
// recording (-record); a third watches them (-headless -spectate CODE
// -duration 10s -json) and reports the states it got of each fighter.
// The spectator records too (-record). Then each recording, replayed
// headless (-replay FILE -json), gives its
// recorder's own final HP, KOs and hits.
func TestSpectateAndReplay(t *testing.T) {
	bin := demoBinary(t)
	srv, err := server.Start("127.0.0.1:0", server.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	const room = "SPECTA"
	player := func(name string) *demotest.Proc {
		return demotest.Start(t, name, exec.CommandContext(testwait.Context(t), bin, "-headless", "-json", "-signal", srv.URL(),
			"-room", room, "-round", "20s", "-duration", "16s", "-connect-timeout", "60s", "-record", filepath.Join(dir, name+".rsrp")))
	}
	a, b := player("a"), player("b")
	a.WaitLog(t, 0, "playing")
	spec := exec.CommandContext(testwait.Context(t), bin, "-headless", "-json", "-signal", srv.URL(), "-spectate", room,
		"-duration", "10s", "-connect-timeout", "60s", "-record", filepath.Join(dir, "spectator.rsrp"))
	out, err := spec.Output()
	t.Logf("spectator:\n%s", out)
	if err != nil {
		t.Fatalf("spectator: %v", err)
	}
	w := watchReport(t, string(out))
	if w.SpectatedStates[0] < 60 || w.SpectatedStates[1] < 60 || w.Rejected != 0 {
		t.Errorf("spectated states %v, rejected %d", w.SpectatedStates, w.Rejected)
	}
	out, err = exec.CommandContext(testwait.Context(t), bin, "-headless", "-json", "-replay", filepath.Join(dir, "spectator.rsrp")).Output()
	if err != nil {
		t.Fatalf("replay of the spectator's recording: %v\n%s", err, out)
	}
	if r := watchReport(t, string(out)); r.SpectatedStates[0] < w.SpectatedStates[0]/2 || r.SpectatedStates[1] < w.SpectatedStates[1]/2 || r.Rejected != 0 {
		t.Errorf("the spectator's recording replays %v states (%d rejected); it saw %v", r.SpectatedStates, r.Rejected, w.SpectatedStates)
	}
	sums := map[string]game.Summary{"a": a.Summary(t), "b": b.Summary(t)}
	for name, s := range sums {
		out, err := exec.CommandContext(testwait.Context(t), bin, "-headless", "-json", "-replay", filepath.Join(dir, name+".rsrp")).Output()
		if err != nil {
			t.Fatalf("replay of %s: %v\n%s", name, err, out)
		}
		r := watchReport(t, string(out))
		k := s.PeerID - 1
		t.Logf("FIGURE %s (side %d): player HP %d KOs %d dealt %d taken %d; its replay HP %v KOs %v dealt %v taken %v",
			name, k+1, s.HP, s.KOs, s.HitsDealt, s.HitsTaken, r.HP, r.KOs, r.HitsDealt, r.HitsTaken)
		if r.HP[k] != s.HP || r.KOs[k] != s.KOs || r.HitsDealt[k] != s.HitsDealt || r.HitsTaken[k] != s.HitsTaken || r.Damage[k] != s.Damage {
			t.Errorf("%s: the replay disagrees with the player's own summary", name)
		}
		if o := sums[map[string]string{"a": "b", "b": "a"}[name]]; r.HP[1-k] != o.HP || r.HitsTaken[1-k] != o.HitsTaken {
			t.Errorf("%s: the replay's rival (HP %d, taken %d) disagrees with the rival's summary (HP %d, taken %d)",
				name, r.HP[1-k], r.HitsTaken[1-k], o.HP, o.HitsTaken)
		}
	}
}

func watchReport(t *testing.T, out string) game.WatchSummary {
	t.Helper()
	i := strings.Index(out, "\n{")
	var rep game.WatchReport
	if i < 0 || json.Unmarshal([]byte(out[i+1:]), &rep) != nil {
		t.Fatalf("no JSON report in:\n%s", out)
	}
	return rep.Watch
}
