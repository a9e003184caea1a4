package game

import (
	"sync/atomic"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/p2p/netsim"
	"github.com/ragsync/ragsync/signaling"
)

// link is the ragsync.Link a Match runs over: the session, optionally with
// what this peer sends going through a real-time netsim pipe first (the
// -lag/-jitter/-loss flags). Pings and the clock calibration are the
// session's own and are not impaired, so the link RTT stays the transport's
// while the game's states feel the impairment.
type link struct {
	s       *p2p.Session
	pipe    *netsim.Pipe
	sendErr atomic.Uint64 // sends the session refused from the pipe goroutine
	seqs    seqCounter    // the rival's state packets by sequence number (game loop only)
	fn      func(p []byte)
	seeFn   func(p []byte) // l.see, made once (a method value allocates)
}

func newLink(s *p2p.Session, impair *netsim.Config, seed uint64) (*link, error) {
	l := &link{s: s}
	l.seeFn = l.see
	if impair != nil {
		pipe, err := netsim.NewPipe(*impair, seed, nil, func(p []byte) {
			if err := s.Send(p); err != nil {
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
	return l.s.Send(p)
}

// Poll hands the received packets to fn, counting the rival's state
// packets by their sequence numbers on the way.
func (l *link) Poll(fn func(p []byte)) int {
	l.fn = fn
	n := l.s.Poll(l.seeFn)
	l.fn = nil
	return n
}

func (l *link) see(p []byte) {
	if seq, ok := stateSeq(p); ok {
		l.seqs.add(seq)
	}
	l.fn(p)
}

func (l *link) GameTime() (clocksync.GameTime, bool) { return l.s.GameTime() }

func (l *link) Role() signaling.Role { return l.s.Role() }

// StartMatch starts the session's match clock (ragsync.Match calls it on
// its first synced tick).
func (l *link) StartMatch() { l.s.StartMatch() }

// close stops the pipe (the session is closed by its owner).
func (l *link) close() {
	if l.pipe != nil {
		l.pipe.Close()
	}
}
