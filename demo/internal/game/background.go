package game

import (
	"sync/atomic"
	"time"

	"github.com/ragsync/ragsync/p2p"
)

// A browser gives a hidden tab no animation frames, and so stops the web
// demo's game loop: its fighter stands still and its states stop, while
// its session goes on (its timers, throttled to about once a second,
// also run whenever a packet arrives, so it answers the rival's pings at
// once). The page tells its rival, which says "the rival's tab is in the
// background" instead of taking the silence of its states for a fault.
//
// The message is a game message of 3 bytes (sent on the session, not
// impaired by -lag/-loss):
//
//	byte  bgKind ('B')
//	byte  bgVersion (1)
//	byte  1: the sender's page is hidden; 0: it is shown again
//
// The page sends it when its visibility changes, and "hidden" again every
// bgRepeat while hidden (messages may be lost); the rival holds "hidden"
// for bgHold after the last one. A peer that does not know the message
// refuses it as a bad round message (a debug line) and plays on.
const (
	bgKind    byte = 'B'
	bgVersion byte = 1
	bgRepeat       = time.Second
	bgHold         = 3500 * time.Millisecond
)

// appendBackground appends the background message saying hidden.
func appendBackground(dst []byte, hidden bool) []byte {
	b := byte(0)
	if hidden {
		b = 1
	}
	return append(dst, bgKind, bgVersion, b)
}

// parseBackground decodes a background message; ok is false for any
// other packet.
func parseBackground(p []byte) (hidden, ok bool) {
	if len(p) != 3 || p[0] != bgKind || p[1] != bgVersion || p[2] > 1 {
		return false, false
	}
	return p[2] == 1, true
}

// onBackground records the rival's background message, received at wall.
func (p *Player) onBackground(hidden bool, wall time.Time) {
	if hidden {
		p.rivalBgUntil = wall.Add(bgHold)
	} else {
		p.rivalBgUntil = time.Time{}
	}
	p.bgTick(wall)
}

// bgTick updates RivalInBackground at wall and logs its changes.
func (p *Player) bgTick(wall time.Time) {
	on := wall.Before(p.rivalBgUntil)
	if on == p.rivalBg {
		return
	}
	p.rivalBg = on
	if on {
		p.log.Info("the rival's tab is in the background: its fighter stands still until it is back")
	} else {
		p.log.Info("the rival's tab is back")
	}
}

// RivalInBackground reports whether the rival said its page is hidden (a
// browser tab in the background).
func (p *Player) RivalInBackground() bool { return p.rivalBg }

// pageSession is the session a page's background messages go on: the
// local player's, as the game loop last saw it. The loop stores it each
// tick; the page's visibility watcher (a browser only) reads it from
// outside the loop, which a hidden page does not run.
type pageSession struct{ s atomic.Pointer[p2p.Session] }

func (ps *pageSession) set(s *p2p.Session) {
	if ps.s.Load() != s {
		ps.s.Store(s)
	}
}
