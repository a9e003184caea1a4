package p2p

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/ragsync/ragsync/signaling/relay"
)

// TCPClasses is the number of latest-only message classes on the TCP
// transport (see Session.SendClass).
const TCPClasses = 4

// tcpTransport is the TCP fallback: session messages as length-prefixed
// frames (package signaling/relay) over a stream relayed by the signaling
// server. Data messages go through the relay's latest-only sender, one slot
// per class, so while the socket is busy only the newest message of each
// class waits; pings, pongs and control messages go through its small FIFO
// control queue, written first, so they are never superseded.
type tcpTransport struct {
	conn net.Conn
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

	// testDrop drops every message sent or received at this layer.
	testDrop dropFlag
}

func newTCPTransport(conn net.Conn, maxMsg int, h linkHandler) *tcpTransport {
	t := &tcpTransport{
		conn: conn,
		snd:  relay.NewSender(conn, relay.SenderConfig{Classes: TCPClasses, ControlQueue: 32}),
		// Frames up to the relay's maximum are read (and those longer
		// than a session message skipped and counted), so an oversized
		// frame does not cost the stream.
		rd:  relay.NewReader(conn, relay.MaxFrameLen),
		h:   h,
		max: maxMsg + HeaderLen,
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
			} else if errors.Is(err, io.EOF) {
				err = fmt.Errorf("p2p: tcp: peer closed the relay stream: %w", err)
			} else {
				err = fmt.Errorf("p2p: tcp: read: %w", err)
			}
			t.down(err)
			return
		}
		if t.testDrop.Load() {
			continue
		}
		t.h.onMessage(TransportTCP, p)
	}
}

// send queues a session message. class < 0 means the control FIFO (pings,
// pongs, control); otherwise the latest-only slot of that class.
func (t *tcpTransport) send(p []byte) error { return t.sendClass(-1, p) }

func (t *tcpTransport) sendData(class int, p []byte) error { return t.sendClass(class, p) }

func (t *tcpTransport) setTestDrop(drop bool) { t.testDrop.Store(drop) }

func (t *tcpTransport) sendClass(class int, p []byte) error {
	if t.testDrop.Load() {
		return nil
	}
	var err error
	if class < 0 {
		err = t.snd.SendControl(p)
	} else {
		err = t.snd.Send(class, p)
	}
	switch {
	case err == nil:
		t.queued.Add(1)
		return nil
	case errors.Is(err, relay.ErrControlQueueFull):
		return ErrTransportBusy
	default:
		t.fail(fmt.Errorf("p2p: tcp: send: %w", err))
		return ErrTransportDown
	}
}

// fail handles a send error: it records it and closes the stream, so that
// the read loop fails and reports the transport down with this error.
// Senders call it with the session's locks held (pings and control
// messages under Session.mu, data under Session.sendMu), so it must not
// call the handler itself: onDown takes Session.mu.
func (t *tcpTransport) fail(err error) {
	t.sendErr.CompareAndSwap(nil, &err)
	_ = t.conn.Close()
}

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
	err := t.conn.Close()
	_ = t.snd.Close()
	t.wg.Wait()
	return err
}

// testKill closes the stream without marking the transport closed (test hook).
func (t *tcpTransport) testKill() { _ = t.conn.Close() }
