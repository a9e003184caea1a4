package p2p

import (
	"errors"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/clockwire"
	"github.com/ragsync/ragsync/p2p/internal/wire"
)

// pinger builds the session's own messages, numbered by one control
// sequence, in buffers it reuses (no allocation): timestamped pings, the
// pongs that answer the peer's, and control messages. It owns the clock
// calibrator, which stamps the pings and pongs and learns from the
// answers, and counts what the peer gets wrong. Used with Session.mu
// held; a pong is built in the buffer of the reader goroutine of its
// transport, which sends it after unlocking.
type pinger struct {
	cal   *clocksync.Calibrator
	seq   uint32
	buf   []byte    // the loop's message (pings, controls)
	pongs [2][]byte // per reader goroutine, by kind.idx()

	// What the peer got wrong.
	malformed   uint64 // messages dropped as malformed (any kind)
	peerErrors  uint64 // clock messages that break the protocol
	lastPeerErr string // the last of them
}

func newPinger(cal *clocksync.Calibrator) *pinger {
	p := &pinger{cal: cal, buf: make([]byte, 0, 256)}
	for i := range p.pongs {
		p.pongs[i] = make([]byte, 0, 256)
	}
	return p
}

func (p *pinger) next() uint32 {
	p.seq++
	return p.seq
}

// ping returns a ping stamped by the calibrator, and its t1 (now if the
// stamp cannot be read back).
func (p *pinger) ping(now time.Duration) ([]byte, time.Duration) {
	b := wire.AppendHeader(p.buf[:0], wire.Header{Type: wire.MsgPing, Seq: p.next()})
	b = p.cal.AppendPing(b)
	p.buf = b
	if pg, err := clockwire.ParsePing(b[wire.HeaderLen:]); err == nil {
		return b, pg.T1
	}
	return b, now
}

// pong returns the answer to the peer's ping payload that came in on k.
func (p *pinger) pong(k TransportKind, payload []byte) ([]byte, error) {
	b := wire.AppendHeader(p.pongs[k.idx()][:0], wire.Header{Type: wire.MsgPong, Seq: p.next()})
	b, err := p.cal.HandlePing(payload, b)
	if err != nil {
		return nil, err
	}
	p.pongs[k.idx()] = b
	return b, nil
}

// control returns control message c.
func (p *pinger) control(c wire.Control) []byte {
	b := wire.AppendHeader(p.buf[:0], wire.Header{Type: wire.MsgControl, Seq: p.next()})
	b = wire.AppendControl(b, c)
	p.buf = b
	return b
}

// refused counts a ping or pong the calibrator refused, and reports
// whether it is a new kind of protocol error by the peer (to log once).
// Malformed ones count as malformed; stale or unknown pongs (answers to
// pings that timed out, duplicates) only in the calibrator's Rejected
// counter.
func (p *pinger) refused(err error) (newPeerErr bool) {
	if errors.Is(err, clocksync.ErrMalformed) || errors.Is(err, clocksync.ErrBadTimestamps) || errors.Is(err, clocksync.ErrRoleConflict) {
		p.malformed++
	}
	// A peer that gets the protocol wrong (a third-party client, see
	// PROTOCOL.md) is told in Stats and the log, once per kind of error,
	// not left to wonder why the clock never syncs.
	if errors.Is(err, clocksync.ErrNoGameTime) || errors.Is(err, clocksync.ErrRoleConflict) {
		p.peerErrors++
		if msg := err.Error(); msg != p.lastPeerErr {
			p.lastPeerErr = msg
			return true
		}
	}
	return false
}
