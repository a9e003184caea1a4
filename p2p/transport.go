package p2p

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// link is one path to the peer. send must not block and must not keep
// p after returning.
type link interface {
	kind() TransportKind
	// send sends a ping, pong or control message (on TCP: the FIFO
	// control queue, never superseded).
	send(p []byte) error
	// sendData sends a data message (on TCP, latest-only: it replaces an
	// unsent data message whose payload has the same first byte).
	sendData(p []byte) error
	close() error
}

// linkHandler receives what transports read. onMessage is called from the
// transport's read goroutine; p is valid only during the call. onDown is
// called at most once per transport, when it can no longer carry messages.
type linkHandler interface {
	onUp(k TransportKind)
	onMessage(k TransportKind, p []byte)
	// onMalformed reports a message the transport dropped before decoding
	// (too large, or a text message on the data channel).
	onMalformed(k TransportKind)
	onDown(k TransportKind, err error)
}

// signaler carries WebRTC negotiation messages to the peer. Implemented by
// the signaling client adapter and, in tests, by an in-process pipe.
type signaler interface {
	sendOffer(ctx context.Context, sdp string) error
	sendAnswer(ctx context.Context, sdp string) error
	sendCandidate(ctx context.Context, c iceCandidate) error
}

// Transport errors. Send counts them (Stats.SendDropped) and returns nil,
// as for a lost packet.
var (
	// errTransportBusy: the transport's send buffer is full; the message
	// was dropped.
	errTransportBusy = errors.New("p2p: transport busy, message dropped")
	// errTransportDown: the transport is not open.
	errTransportDown = errors.New("p2p: transport not open")
)

// transports holds the session's two transports, a WebRTC data channel
// and the TCP relay, and which of them are open, for the data path and
// the session's own messages to send on without a lock: every field is
// an atomic or fixed at start. Replacing a PeerConnection (rtc) and the
// relay's connection (tcp) is the session's job (under Session.mu); the
// transports call the session back through linkHandler.
type transports struct {
	rtc   atomic.Pointer[rtcTransport] // the current PeerConnection (nil without WebRTC)
	rtcOn bool                         // WebRTC is enabled here
	tcp   atomic.Pointer[tcpTransport] // the current relay connection
	open  [2]atomic.Pointer[linkBox]   // open links, by kind.idx()
	// enabled: our transports, as in the hello message (bit kind.idx()).
	enabled uint8
	// cancelTCP stops dialling the relay.
	cancelTCP context.CancelFunc
	// rejected counts relay streams whose TLS refused a record or the
	// handshake.
	rejected atomic.Uint64
}

// linkBox lets an interface value live in an atomic.Pointer.
type linkBox struct{ l link }

// current returns the transport of kind k, open or not.
func (t *transports) current(k TransportKind) link {
	switch k {
	case TransportWebRTC:
		return t.rtc.Load()
	case TransportTCP:
		return t.tcp.Load()
	}
	return nil
}

// setOpen records l as the open link of kind k (nil: k is not open).
func (t *transports) setOpen(k TransportKind, l link) {
	if l == nil {
		t.open[k.idx()].Store(nil)
		return
	}
	t.open[k.idx()].Store(&linkBox{l: l})
}

// get returns the open link of kind k, or nil.
func (t *transports) get(k TransportKind) link {
	if b := t.open[k.idx()].Load(); b != nil {
		return b.l
	}
	return nil
}

// sendLink returns the active link if it is open, else the other one if
// that is open (the answerer's emergency path while the offerer decides),
// else nil.
func (t *transports) sendLink(active TransportKind) link {
	if active == TransportUnknown {
		return nil
	}
	if l := t.get(active); l != nil {
		return l
	}
	return t.get(active.other())
}

// flush gives what is queued on the transports (a bye) up to d to leave.
func (t *transports) flush(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		pending := false
		if r := t.rtc.Load().rawChan(); r != nil && r.dc.BufferedAmount() > 0 {
			pending = true
		}
		if tc := t.tcp.Load(); tc != nil && tc.unwritten() {
			pending = true
		}
		if !pending {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// closeBoth closes rtc (the PeerConnection the caller took out of t.rtc)
// and the relay connection.
func (t *transports) closeBoth(rtc *rtcTransport) {
	if rtc != nil {
		_ = rtc.close()
	}
	if tc := t.tcp.Load(); tc != nil {
		_ = tc.close()
	}
}
