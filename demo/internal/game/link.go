package game

import (
	"sync/atomic"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/p2p/netsim"
	"github.com/ragsync/ragsync/signaling"
)

// TCP latest-only classes (p2p.Session.SendClass): state packets replace
// each other while the relay socket is busy, but must never replace a round
// message, so the two travel in different classes.
const (
	classState = 0
	classGame  = 1
)

func classOf(p []byte) int {
	if len(p) > 0 && p[0] == ownership.KindState {
		return classState
	}
	return classGame
}

// link is the ragsync.Link a Match runs over: the session, optionally with
// what this peer sends going through a real-time netsim pipe first (the
// -lag/-jitter/-loss flags). Pings and the clock calibration are the
// session's own and are not impaired, so the link RTT stays the transport's
// while the game's states feel the impairment.
type link struct {
	s       *p2p.Session
	pipe    *netsim.Pipe
	sendErr atomic.Uint64 // sends the session refused from the pipe goroutine
}

func newLink(s *p2p.Session, impair *netsim.Config, seed uint64) (*link, error) {
	l := &link{s: s}
	if impair != nil {
		pipe, err := netsim.NewPipe(*impair, seed, nil, func(p []byte) {
			if err := s.SendClass(classOf(p), p); err != nil {
				l.sendErr.Add(1)
			}
		})
		if err != nil {
			return nil, err
		}
		l.pipe = pipe
	}
	return l, nil
}

func (l *link) Send(p []byte) error {
	if l.pipe != nil {
		return l.pipe.Send(p)
	}
	return l.s.SendClass(classOf(p), p)
}

func (l *link) Poll(fn func(p []byte)) int { return l.s.Poll(fn) }

func (l *link) GameTime() (clocksync.GameTime, bool) { return l.s.GameTime() }
func (l *link) Role() signaling.Role                 { return l.s.Role() }
func (l *link) StartMatch()                          { l.s.StartMatch() }

// close stops the pipe (the session is closed by its owner).
func (l *link) close() {
	if l.pipe != nil {
		l.pipe.Close()
	}
}
