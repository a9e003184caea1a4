package p2p

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/pion/webrtc/v4"
)

// link is one path to the peer. send must not block and must not keep
// p after returning.
type link interface {
	kind() TransportKind
	// send sends a ping, pong or control message (on TCP: the FIFO
	// control queue, never superseded).
	send(p []byte) error
	// sendData sends a data message of the given latest-only class (on
	// TCP, a newer message of the class replaces an unsent older one).
	sendData(class int, p []byte) error
	close() error
	// testKill makes the transport die as if the network had failed.
	testKill()
	// setTestDrop makes the transport drop everything it sends and
	// receives, while staying open (a silent path).
	setTestDrop(drop bool)
}

type dropFlag = atomic.Bool

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
	sendCandidate(ctx context.Context, c webrtc.ICECandidateInit) error
}

// Transport errors.
var (
	// ErrTransportBusy: the transport's send buffer is full; the message
	// was dropped (counted in Stats.SendDropped).
	ErrTransportBusy = errors.New("p2p: transport busy, message dropped")
	// ErrTransportDown: the transport is not open.
	ErrTransportDown = errors.New("p2p: transport not open")
)
