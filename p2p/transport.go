package p2p

import (
	"context"
	"errors"

	"github.com/pion/webrtc/v4"
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
	sendCandidate(ctx context.Context, c webrtc.ICECandidateInit) error
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
