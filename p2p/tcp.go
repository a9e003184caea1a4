package p2p

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/ragsync/ragsync/p2p/internal/relay"
	"github.com/ragsync/ragsync/p2p/internal/wire"
)

// tcpTransport is the TCP fallback: session messages as length-prefixed
// frames (package p2p/internal/relay) over a stream relayed by the
// signaling server. Data messages go through the relay's latest-only
// sender, keyed by the first byte of their payload (the game message's
// kind), so while the socket is busy only the newest message of each kind
// waits; pings, pongs and control messages go through its small FIFO
// control queue, written first, so they are never superseded.
type tcpTransport struct {
	conn net.Conn // the TLS connection over raw
	raw  net.Conn // the relayed stream
	snd  *relay.Sender
	rd   *relay.Reader
	h    linkHandler
	max  int

	// queued counts frames accepted by the sender (for flushing on close).
	queued atomic.Uint64

	// sendErr is the first send error; the read loop reports it (see fail).
	sendErr atomic.Pointer[error]

	mu       sync.Mutex
	closed   bool
	downOnce sync.Once
	wg       sync.WaitGroup
	done     chan struct{} // closed when the read loop has ended
}

// newTCPTransport runs the session over conn, the TLS connection over the
// relayed stream raw (conn itself in tests without TLS).
func newTCPTransport(conn, raw net.Conn, maxMsg int, h linkHandler) *tcpTransport {
	t := &tcpTransport{
		conn: conn,
		raw:  raw,
		done: make(chan struct{}),
		snd:  relay.NewSender(conn, relay.SenderConfig{ControlQueue: 32}),
		// Frames up to the relay's maximum are read (and those longer
		// than a session message skipped and counted), so an oversized
		// frame does not cost the stream.
		rd:  relay.NewReader(conn, relay.MaxFrameLen),
		h:   h,
		max: maxMsg + wire.HeaderLen,
	}
	return t
}

// start starts the read loop.
func (t *tcpTransport) start() {
	t.wg.Add(1)
	go t.readLoop(t.max)
}

func (t *tcpTransport) kind() TransportKind { return TransportTCP }

func (t *tcpTransport) readLoop(max int) {
	defer t.wg.Done()
	defer close(t.done)
	buf := make([]byte, max)
	for {
		p, err := t.rd.ReadFrame(buf)
		if err != nil {
			var fe *relay.FrameSizeError
			if errors.As(err, &fe) && fe.Skipped {
				t.h.onMalformed(TransportTCP)
				continue
			}
			if se := t.sendErr.Load(); se != nil {
				err = *se // the stream was closed because sending failed
			} else if isTLSFailure(err) {
				err = fmt.Errorf("%w: %w", errRelayRejected, err)
			} else if errors.Is(err, io.EOF) {
				err = fmt.Errorf("p2p: tcp: peer closed the relay stream: %w", err)
			} else {
				err = fmt.Errorf("p2p: tcp: read: %w", err)
			}
			t.down(err)
			return
		}
		t.h.onMessage(TransportTCP, p)
	}
}

// send queues a ping, pong or control message on the control FIFO.
func (t *tcpTransport) send(p []byte) error { return t.queued1(t.snd.SendControl(p)) }

// sendData queues a data message (header and payload) in the latest-only
// slot of its payload's first byte (one more slot for empty payloads).
func (t *tcpTransport) sendData(p []byte) error {
	key := relay.NumKeys - 1
	if len(p) > wire.HeaderLen {
		key = int(p[wire.HeaderLen])
	}
	return t.queued1(t.snd.Send(key, p))
}

func (t *tcpTransport) queued1(err error) error {
	switch {
	case err == nil:
		t.queued.Add(1)
		return nil
	case errors.Is(err, relay.ErrControlQueueFull):
		return errTransportBusy
	default:
		t.fail(fmt.Errorf("p2p: tcp: send: %w", err))
		return errTransportDown
	}
}

// fail handles a send error: it records it and closes the stream, so that
// the read loop fails and reports the transport down with this error.
// Senders call it with the session's locks held (pings and control
// messages under Session.mu, data under Session.sendMu), so it must not
// call the handler itself: onDown takes Session.mu.
func (t *tcpTransport) fail(err error) {
	t.sendErr.CompareAndSwap(nil, &err)
	_ = t.raw.Close()
}

// errRelayRejected wraps the error of a relay stream that ended because
// its TLS layer refused what arrived (a forged, altered or replayed frame).
var errRelayRejected = errors.New("p2p: relay: TLS refused a record")

// superseded returns how many data messages the latest-only sender has
// replaced before writing them.
func (t *tcpTransport) superseded() uint64 { return t.snd.Stats().Superseded }

// unwritten reports whether accepted frames are still waiting to be written.
func (t *tcpTransport) unwritten() bool {
	st := t.snd.Stats()
	return st.Frames+st.Superseded < t.queued.Load()
}

func (t *tcpTransport) down(err error) {
	t.downOnce.Do(func() {
		t.mu.Lock()
		closed := t.closed
		t.mu.Unlock()
		if !closed {
			t.h.onDown(TransportTCP, err)
		}
	})
}

func (t *tcpTransport) close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	// Closing the relayed stream, not the TLS connection: the bye has
	// said goodbye, and a TLS close_notify could block on a peer that
	// does not read.
	err := t.raw.Close()
	_ = t.snd.Close()
	t.wg.Wait()
	return err
}
