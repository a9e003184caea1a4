package game

import (
	"fmt"
	"os"
	"time"

	"github.com/ragsync/ragsync"
	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/replay"
	"github.com/ragsync/ragsync/physics"
)

// Watcher shows a match without playing in it: live from the signaling
// server's spectator feed (-spectate CODE), or from a replay file
// (-replay FILE). It sends nothing to the players. Its world is never
// stepped: each Update writes the ragsync.Spectator's interpolated poses
// into it, so the window draws it like a player's.
type Watcher struct {
	arena *arena
	spec  *ragsync.Spectator
	feed  *feedConn // live; nil for a replay
	rec   *recorder
	room  string
	now   func() time.Time
	start time.Time
	view  ragsync.SpectatorView
	// states counts the frames accepted per side.
	states [2]uint64
	bad    uint64
	err    error
	got    [][]byte // this Update's frames

	// A replay: its reader, the playback clock (game time), speed and
	// pause.
	rp     *replay.Reader
	clock  clocksync.GameTime
	Speed  float64
	Paused bool
}

// spectatorDelay is how far behind the feed a spectator shows the match.
const spectatorDelay = 120 * time.Millisecond

func newWatcherWorld() (*arena, *ragsync.Spectator, error) {
	a, err := newArena()
	if err != nil {
		return nil, nil, err
	}
	s, err := ragsync.NewSpectator(a.world, ragsync.SpectatorConfig{Fighters: [2]physics.ObjectID{Fighter1, Fighter2}, Delay: spectatorDelay})
	if err != nil {
		return nil, nil, err
	}
	return a, s, nil
}

// NewSpectate watches room live through the feed of the signaling server
// at signal; record, if not empty, writes what it sees to a replay file.
func NewSpectate(signal, room, record string) (*Watcher, error) {
	a, s, err := newWatcherWorld()
	if err != nil {
		return nil, err
	}
	w := &Watcher{arena: a, spec: s, room: room, now: time.Now, Speed: 1}
	if record != "" {
		w.rec = newRecorder(record)
	}
	w.start = w.now()
	w.got = make([][]byte, 0, feedQueue)
	w.feed = dialFeed(signal, room, 0, nil)
	return w, nil
}

// OpenReplay opens a replay file, validated whole (a replay is untrusted
// input), to play from its start.
func OpenReplay(path string) (*Watcher, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-replay: %w", err)
	}
	rp, err := replay.NewReader(data)
	if err != nil {
		return nil, fmt.Errorf("-replay %s: %w", path, err)
	}
	a, s, err := newWatcherWorld()
	if err != nil {
		return nil, err
	}
	h := rp.Header()
	if h.Fighters != [2]physics.ObjectID{Fighter1, Fighter2} {
		return nil, fmt.Errorf("-replay %s: fighters %v are not this demo's", path, h.Fighters)
	}
	if err := rp.Verify(a.world); err != nil {
		return nil, fmt.Errorf("-replay %s: %w", path, err)
	}
	return &Watcher{arena: a, spec: s, rp: rp, clock: h.Start, Speed: 1}, nil
}

// stampTime maps a replay's game time to the spectator's clock.
func stampTime(t clocksync.GameTime) time.Time {
	return time.Unix(0, 0).Add(time.Duration(t) * time.Microsecond)
}

// Update takes what arrived (live) or advances the playback clock by one
// tick times Speed (a replay, unless Paused), and moves the view.
func (w *Watcher) Update() {
	if w.rp != nil {
		if !w.Paused {
			w.clock = w.clock.Add(time.Duration(float64(physics.TickDuration) * w.Speed))
		}
		w.playTo(w.clock)
		w.show(stampTime(w.clock))
		return
	}
	now := w.now()
	w.got = w.got[:0]
	for len(w.got) < cap(w.got) {
		b, ok := w.feed.Recv()
		if !ok {
			break
		}
		w.push(b, now)
		w.got = append(w.got, b)
	}
	if w.err == nil {
		w.err = w.feed.Err()
	}
	w.show(now)
	// A live spectator has no game clock of its own: it stamps what it
	// records with the newest frames' time as its view estimates it.
	if w.rec != nil && (w.view.Seen[0] || w.view.Seen[1]) {
		for _, b := range w.got {
			w.rec.add(w.view.Time.Add(spectatorDelay), b)
		}
	}
}

func (w *Watcher) push(b []byte, now time.Time) {
	if err := w.spec.Push(b, now); err != nil {
		w.bad++
		return
	}
	if s := b[2]; s == 1 || s == 2 { // Push checked it
		w.states[s-1]++
	}
}

// playTo feeds the replay's frames stamped up to t.
func (w *Watcher) playTo(t clocksync.GameTime) {
	for {
		stamp, b, ok := w.rp.Next()
		if !ok {
			return
		}
		if stamp > t {
			w.rp.Seek(stamp) // not yet: back to it
			return
		}
		w.push(b, stampTime(stamp))
	}
}

// show moves the view to now and writes the poses into the world.
func (w *Watcher) show(now time.Time) {
	w.view = w.spec.View(now)
	for _, id := range Objects {
		if pose := w.spec.Pose(id); pose != nil {
			w.arena.world.Object(id).WriteState(pose)
		}
	}
	for k, id := range [2]physics.ObjectID{Fighter1, Fighter2} {
		if w.view.Seen[k] {
			w.arena.world.Fighter(id).SetRemoteState(w.view.Fighters[k]) // validated by the feed's decoder
		}
	}
}

// Seek moves a replay to game time t: a new spectator fed from a second
// before it.
func (w *Watcher) Seek(t clocksync.GameTime) {
	if w.rp == nil {
		return
	}
	t = min(max(t, w.rp.Header().Start), w.rp.End())
	_, s, err := newWatcherWorld()
	if err != nil {
		return
	}
	w.spec = s
	w.rp.Seek(t - clocksync.GameTimeOf(time.Second))
	w.clock = t
	w.playTo(t)
	w.show(stampTime(t))
}

// Done reports a replay played to its end (and past the view's delay).
func (w *Watcher) Done() bool {
	return w.rp != nil && w.clock > w.rp.End().Add(spectatorDelay+time.Second)
}

// Accessors for the window and the summary.

func (w *Watcher) World() *physics.World       { return w.arena.world }
func (w *Watcher) View() ragsync.SpectatorView { return w.view }
func (w *Watcher) Room() string                { return w.room }
func (w *Watcher) Replay() bool                { return w.rp != nil }
func (w *Watcher) Clock() clocksync.GameTime   { return w.clock }
func (w *Watcher) Err() error                  { return w.err }
func (w *Watcher) States() [2]uint64           { return w.states }
func (w *Watcher) Ended() bool                 { return w.feed != nil && w.feed.ended.Load() }
func (w *Watcher) Span() (start, end clocksync.GameTime) {
	if w.rp == nil {
		return 0, 0
	}
	return w.rp.Header().Start, w.rp.End()
}

// Watchers is how many spectators the server counts for the room (live).
func (w *Watcher) Watchers() int {
	if w.feed == nil {
		return 0
	}
	return int(w.feed.watchers.Load())
}

// Close stops the feed and finishes the recording.
func (w *Watcher) Close() error {
	if w.feed != nil {
		w.feed.Close()
	}
	return w.rec.close()
}

// WatchSummary is what a spectator or a replay prints at the end: per
// fighter (by side), as the players' own summaries count them.
type WatchSummary struct {
	Mode string `json:"mode"` // "spectate" or "replay"
	Room string `json:"room,omitempty"`
	// SpectatedStates counts the feed frames accepted per side.
	SpectatedStates [2]uint64 `json:"spectated_states"`
	Rejected        uint64    `json:"rejected_frames"`
	Watchers        int       `json:"spectators,omitempty"`
	Round           uint32    `json:"round"`
	HP              [2]int    `json:"hp"`
	KOs             [2]int    `json:"kos"`
	HitsDealt       [2]uint64 `json:"hits_dealt"`
	HitsTaken       [2]uint64 `json:"hits_taken"`
	Damage          [2]uint64 `json:"damage_taken"`
	Seconds         float64   `json:"seconds"`
	LastErr         string    `json:"last_error,omitempty"`
}

// Summary returns the figures shown so far.
func (w *Watcher) Summary() WatchSummary {
	v := w.view
	s := WatchSummary{Mode: "spectate", Room: w.room, SpectatedStates: w.states, Rejected: w.bad, Watchers: w.Watchers(),
		Round: v.Round, KOs: v.KOs, HitsDealt: v.HitsDealt, HitsTaken: v.HitsTaken, Damage: v.Damage}
	for k := range 2 {
		s.HP[k] = int(v.Fighters[k].HP)
	}
	if w.rp != nil {
		s.Mode = "replay"
		s.Seconds = w.rp.End().Sub(w.rp.Header().Start).Seconds()
	} else if !w.start.IsZero() {
		s.Seconds = w.now().Sub(w.start).Seconds()
	}
	if w.err != nil {
		s.LastErr = w.err.Error()
	}
	return s
}
