package ragsync

import (
	"math"
	"sync"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/feed"
	"github.com/ragsync/ragsync/ownership"
)

// FeedRound is the game's round state that a spectator feed frame carries
// (Match.AppendFeedFrame): the match itself has no rounds, the game's rules
// do. The zero value means no round and no timer.
type FeedRound struct {
	// Round is the game's round number (0 before the first).
	Round uint32
	// Start is the game time the round's fight starts (after its
	// countdown), and Length how long it lasts (0: no timer; at most 24
	// h, rounded down to the millisecond). Start is within 24 h of the
	// frame's game time.
	Start  clocksync.GameTime
	Length time.Duration
}

// ErrBadFeedFrame is wrapped by every error about a spectator feed frame:
// one Match.AppendFeedFrame cannot encode, or one a Spectator refuses (the
// error says which byte and field, and carries the offending value).
var ErrBadFeedFrame = feed.ErrMalformed

// feedScratch is AppendFeedFrame's scratch frame (a Match has no field for
// one), so that building a frame allocates nothing once it has grown. Its
// lock serializes the encoding of matches on different goroutines (a few
// microseconds each).
var feedScratch struct {
	sync.Mutex
	f feed.Frame
}

// AppendFeedFrame appends to dst this peer's spectator feed frame for the
// last Tick and returns the extended slice: the states of everything this
// peer owns (its fighter, with its HP, action and attack, and the props it
// holds, with their ownership epochs), stamped with the tick's game time,
// the game's round state, and the hits and damage its fighter took and the
// hits it dealt. Call it after Tick, at most once per tick, and send the
// frame to the spectator feed (a Spectator, a replay file); a feed of
// both players' frames is the whole match. The format is documented in
// PROTOCOL.md ("Spectator feed frames"); a frame of a fighter and a prop is
// about 80 bytes.
//
// It returns ErrNotSynced before the match's first synced tick, and an
// error wrapping ErrBadFeedFrame (dst unchanged) for a round it cannot
// encode. It allocates only if dst lacks capacity.
func (m *Match) AppendFeedFrame(dst []byte, round FeedRound) ([]byte, error) {
	if !m.started {
		return dst, ErrNotSynced
	}
	feedScratch.Lock()
	defer feedScratch.Unlock()
	f := &feedScratch.f
	st := m.rep.Stats()
	f.Side = uint8(m.side)
	f.Round, f.RoundStart, f.RoundLength = round.Round, round.Start, round.Length.Truncate(time.Millisecond)
	f.HitsTaken, f.Damage, f.HitsDealt = clamp32(st.HitsTaken), clamp32(st.Damage), clamp32(st.HitsDealt)
	f.Claims = f.Claims[:0]
	f.Snapshot.Reset(m.now, uint32(m.stats.Ticks))
	for _, o := range m.world.Objects() { // in increasing id order
		if m.rep.Mode(o.ID()) != ownership.ModeOwned {
			continue
		}
		f.Snapshot.Add(o)
		if o.Fighter() == nil {
			_, epoch := m.rep.Owner(o.ID())
			f.Claims = append(f.Claims, feed.Claim{ID: o.ID(), Epoch: epoch})
		}
	}
	return feed.Append(dst, m.world, f)
}

func clamp32(v uint64) uint32 { return uint32(min(v, math.MaxUint32)) }
