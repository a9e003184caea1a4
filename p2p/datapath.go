package p2p

import (
	"sync"
	"time"

	"github.com/ragsync/ragsync/p2p/internal/stats"
	"github.com/ragsync/ragsync/p2p/internal/wire"
)

// dataPath is the session's data path: it numbers and sends the game's
// messages, counts every message sent (data and the session's own),
// accounts for what arrives (sequence, duplicates, loss, rates) and queues
// the data for Poll. It knows nothing of transports' states or of the
// peer's liveness: the session hands it the link to send on and the
// messages that arrived.
//
// Locks: txMu guards the send side, rxMu the receive side; both are
// leaves, taken with or without Session.mu but never together. The ring
// has its own locks (see msgRing).
type dataPath struct {
	maxMsg int

	txMu    sync.Mutex
	buf     []byte // the message being sent
	seq     uint32 // the next data message's number
	sent    uint64
	dropped uint64
	txRate  stats.RateMeter // all messages sent
	txLink  [2]uint64       // messages sent per link
	txLinkB [2]uint64

	rxMu       sync.Mutex
	rxSeq      stats.SeqTracker
	rxRate     stats.RateMeter // all valid messages received
	lossBase   [2]uint64       // expected, received at the last rate window
	lossRecent float64

	ring *msgRing
}

func newDataPath(maxMsg, queue int) *dataPath {
	d := &dataPath{
		maxMsg: maxMsg,
		buf:    make([]byte, 0, wire.HeaderLen+maxMsg),
		ring:   newMsgRing(queue, maxMsg),
	}
	d.rxSeq.Begin(0) // the peer's first data message is number 0
	return d
}

// send sends p as the next data message on l (nil: no link is open),
// counting it as sent or dropped. It does not block or allocate.
func (d *dataPath) send(l link, p []byte) {
	d.txMu.Lock()
	defer d.txMu.Unlock()
	if l == nil {
		d.dropped++
		return
	}
	b := wire.AppendHeader(d.buf[:0], wire.Header{Type: wire.MsgData, Seq: d.seq})
	b = append(b, p...)
	if err := l.sendData(b); err != nil {
		d.dropped++
		return
	}
	d.seq++
	d.sent++
	d.count(l.kind(), len(b))
}

// sendOther sends one of the session's own messages (ping, pong, control)
// on l, counting it if the transport took it.
func (d *dataPath) sendOther(l link, p []byte) {
	if l.send(p) != nil {
		return
	}
	d.txMu.Lock()
	d.count(l.kind(), len(p))
	d.txMu.Unlock()
}

// count adds n bytes sent on k. Called with txMu held.
func (d *dataPath) count(k TransportKind, n int) {
	d.txRate.Add(n)
	d.txLink[k.idx()]++
	d.txLinkB[k.idx()] += uint64(n)
}

// received counts a valid message of n bytes from the peer.
func (d *dataPath) received(n int) {
	d.rxMu.Lock()
	d.rxRate.Add(n)
	d.rxMu.Unlock()
}

// deliver takes data message seq: a new one is queued for Poll, a
// duplicate or one too late is only counted.
func (d *dataPath) deliver(seq uint32, payload []byte) {
	d.rxMu.Lock()
	res := d.rxSeq.Add(seq)
	d.rxMu.Unlock()
	if res.Deliver() {
		d.ring.push(payload)
	}
}

// tick updates the rates at now and, when a rate window closes, the
// recent loss over it.
func (d *dataPath) tick(now time.Duration) {
	d.txMu.Lock()
	d.txRate.Update(now)
	d.txMu.Unlock()
	d.rxMu.Lock()
	defer d.rxMu.Unlock()
	if !d.rxRate.Update(now) {
		return
	}
	e, r := d.rxSeq.Expected(), d.rxSeq.Received()
	de, dr := e-d.lossBase[0], r-d.lossBase[1]
	d.lossRecent = 0
	if de > 0 && dr < de {
		d.lossRecent = float64(de-dr) / float64(de)
	}
	d.lossBase = [2]uint64{e, r}
}

// poll hands every queued message to fn (see Session.Poll).
func (d *dataPath) poll(fn func(p []byte)) int {
	d.ring.consMu.Lock()
	defer d.ring.consMu.Unlock()
	n := 0
	for {
		m, ok := d.ring.popSwap()
		if !ok {
			return n
		}
		fn(m)
		n++
	}
}

// stats fills the data path's part of st.
func (d *dataPath) stats(st *Stats) {
	d.rxMu.Lock()
	st.Received = d.rxSeq.Received()
	st.Expected = d.rxSeq.Expected()
	st.Lost = d.rxSeq.Lost()
	st.Loss = d.rxSeq.Loss()
	st.LossRecent = d.lossRecent
	st.Duplicates = d.rxSeq.Duplicates()
	st.Reordered = d.rxSeq.Reordered()
	st.Late = d.rxSeq.Late()
	st.RxPacketsPerSec = d.rxRate.PacketsPerSec()
	st.RxBytesPerSec = d.rxRate.BytesPerSec()
	d.rxMu.Unlock()
	st.RecvOverflow = d.ring.droppedCount()
	d.txMu.Lock()
	st.Sent = d.sent
	st.SendDropped = d.dropped
	st.TxPacketsPerSec = d.txRate.PacketsPerSec()
	st.TxBytesPerSec = d.txRate.BytesPerSec()
	st.WebRTC.TxPackets, st.WebRTC.TxBytes = d.txLink[0], d.txLinkB[0]
	st.TCP.TxPackets, st.TCP.TxBytes = d.txLink[1], d.txLinkB[1]
	d.txMu.Unlock()
}
