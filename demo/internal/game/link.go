package game

import (
	"sync/atomic"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/netsim"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/signaling"
)

// link is the ragsync.Link a Match runs over: the session, optionally with
// what this peer sends going through a real-time netsim pipe first (the
// -lag/-jitter/-loss flags). Pings and the clock calibration are the
// session's own and are not impaired, so the link RTT stays the transport's
// while the game's states feel the impairment.
//
// The link numbers the state packets it sends, so the receiver can tell
// lost states from a sender that ticks slowly (see seqCounter). On the
// wire, a numbered state packet is
//
//	byte     seqKind ('q'; the Match's packets start with
//	         ownership.KindState or the round protocol's MsgKind)
//	2 bytes  the sender's sequence number of its state packets, big endian,
//	         wrapping
//	...      the Match's state packet as it was
//
// A state packet too large to carry the prefix within the session's
// message size goes as it is, unnumbered. The receiving link strips the
// prefix, counts the number and hands the Match its packet; anything else
// passes through untouched.
type link struct {
	s       *p2p.Session
	pipe    *netsim.Pipe
	sendErr atomic.Uint64 // sends the session refused from the pipe goroutine
	seqOut  uint16        // the number of the next state packet sent
	out     []byte        // the numbered packet being sent
	seqs    seqCounter    // the rival's state packets by sequence number (game loop only)
	fn      func(p []byte)
	seeFn   func(p []byte) // l.see, made once (a method value allocates)
}

// seqKind starts a numbered state packet (see link).
const seqKind byte = 'q'

// seqHeader is the size of the prefix of a numbered state packet.
const seqHeader = 3

func newLink(s *p2p.Session, impair *netsim.Config, seed uint64) (*link, error) {
	l := &link{s: s, out: make([]byte, 0, p2p.DefaultMaxMessageSize)}
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

// numberState appends to dst the numbered form of state packet p with
// sequence number seq, if p is a state packet that has room for the
// prefix; ok is false (and dst unchanged) otherwise.
func numberState(dst, p []byte, seq uint16) (out []byte, ok bool) {
	if len(p) == 0 || p[0] != ownership.KindState || len(p)+seqHeader > p2p.DefaultMaxMessageSize {
		return dst, false
	}
	return append(append(dst, seqKind, byte(seq>>8), byte(seq)), p...), true
}

// unnumber splits a numbered state packet into its sequence number and
// the Match's packet; ok is false for any other packet.
func unnumber(p []byte) (seq uint16, body []byte, ok bool) {
	if len(p) <= seqHeader || p[0] != seqKind {
		return 0, p, false
	}
	return uint16(p[1])<<8 | uint16(p[2]), p[seqHeader:], true
}

func (l *link) Send(p []byte) error {
	if out, ok := numberState(l.out[:0], p, l.seqOut); ok {
		l.out, p = out, out
		l.seqOut++
	}
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
	if seq, body, ok := unnumber(p); ok {
		l.seqs.add(seq)
		p = body
	}
	l.fn(p)
}

func (l *link) GameTime() (clocksync.GameTime, bool) { return l.s.GameTime() }

func (l *link) Role() signaling.Role { return l.s.Role() }

// Resumed reports that the session took back a seat: the Match then waits
// for the rival's resume snapshot (see resume.go).
func (l *link) Resumed() bool { return l.s.Resumed() }

// StartMatch starts the session's match clock (ragsync.Match calls it on
// its first synced tick).
func (l *link) StartMatch() { l.s.StartMatch() }

// close stops the pipe (the session is closed by its owner).
func (l *link) close() {
	if l.pipe != nil {
		l.pipe.Close()
	}
}
