package game

import (
	"fmt"
	"os"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/replay"
	"github.com/ragsync/ragsync/physics"
)

// recorder writes a match to a replay file (-record, package
// internal/replay): the feed frames of both players, stamped with the game
// time the recorder got them. The file is created with the first frame
// (the header needs its time). It is written from the game loop, buffered.
type recorder struct {
	path string
	side uint8 // 0 a spectator, 1 or 2 that side's player
	f    *os.File
	w    *replay.Writer
	last clocksync.GameTime
	n    int
	err  error
}

func newRecorder(path string) *recorder { return &recorder{path: path} }

// add appends frame, got at game time stamp (made non-decreasing).
func (r *recorder) add(stamp clocksync.GameTime, frame []byte) {
	if r == nil || r.err != nil {
		return
	}
	if r.w == nil {
		f, err := os.Create(r.path)
		if err != nil {
			r.err = fmt.Errorf("-record: %w", err)
			return
		}
		r.f = f
		r.w, r.err = replay.NewWriter(f, replay.Header{Fighters: [2]physics.ObjectID{Fighter1, Fighter2},
			Props: []physics.ObjectID{CrateID, BallID}, Start: stamp, Recorder: r.side})
		if r.err != nil {
			return
		}
		r.last = stamp
	}
	stamp = max(stamp, r.last)
	if stamp.Sub(r.last) > replay.MaxGap {
		stamp = r.last.Add(replay.MaxGap)
	}
	r.last = stamp
	if err := r.w.Append(stamp, frame); err != nil {
		r.err = fmt.Errorf("-record %s: %w", r.path, err)
		return
	}
	r.n++
}

// close flushes and closes the file.
func (r *recorder) close() error {
	if r == nil || r.f == nil {
		return r.errOrNil()
	}
	if r.err == nil {
		r.err = r.w.Flush()
	}
	if err := r.f.Close(); r.err == nil {
		r.err = err
	}
	r.f = nil
	return r.err
}

func (r *recorder) errOrNil() error {
	if r == nil {
		return nil
	}
	return r.err
}
