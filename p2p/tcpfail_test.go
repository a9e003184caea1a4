package p2p

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
)

// failWriteConn is a net.Conn whose writes fail once failing is set, while
// its reads go on: a stream whose sending half broke first.
type failWriteConn struct {
	net.Conn
	failing atomic.Bool
}

var errWriteBroken = errors.New("test: write half broken")

func (c *failWriteConn) Write(p []byte) (int, error) {
	if c.failing.Load() {
		return 0, errWriteBroken
	}
	return c.Conn.Write(p)
}

// lockedHandler is a linkHandler whose onDown takes mu, like the session's
// (which takes Session.mu).
type lockedHandler struct {
	*chanHandler
	mu sync.Mutex
}

func (h *lockedHandler) onDown(k TransportKind, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chanHandler.onDown(k, err)
}

// TestTCPSendErrorReportsDownAsynchronously: the session sends pings and
// control messages with its lock held, and Send holds the send lock that
// the session loop takes under its lock. A send that finds the stream
// broken must therefore not call onDown itself (it would take the
// session's lock inside its own: a deadlock); the read loop reports it,
// with the write error.
func TestTCPSendErrorReportsDownAsynchronously(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		ca, cb := net.Pipe()
		defer cb.Close()
		fc := &failWriteConn{Conn: ca}
		h := &lockedHandler{chanHandler: newChanHandler()}
		tr := newTCPTransport(fc, fc, 100, h)
		tr.start()
		defer tr.close()
		go func() { // the peer: read whatever arrives
			buf := make([]byte, 1024)
			for {
				if _, err := cb.Read(buf); err != nil {
					return
				}
			}
		}()

		fc.failing.Store(true)
		// Make the writer hit the broken stream, then wait until the sender
		// reports its error.
		waitUntil(t, "the sender seeing the write error", func() bool {
			_ = tr.send([]byte{1})
			return tr.snd.Err() != nil
		})

		h.mu.Lock() // as the session loop holds its lock while it pings
		res := make(chan error, 1)
		go func() { res <- tr.send([]byte{2}) }()
		select {
		case err := <-res:
			if !errors.Is(err, errTransportDown) {
				t.Errorf("send on a broken stream: %v, want errTransportDown", err)
			}
		case <-testwait.Chan(t):
			h.mu.Unlock()
			t.Fatal("send on a broken stream called onDown under the caller's lock (deadlock; gave up near the test binary's deadline)")
		}
		h.mu.Unlock()
		select {
		case err := <-h.down:
			if !errors.Is(err, errWriteBroken) {
				t.Errorf("onDown(%v), want the write error", err)
			}
		case <-testwait.Chan(t):
			t.Fatal("onDown never called (gave up near the test binary's deadline)")
		}
	})
}

// TestTCPWriteErrorDoesNotDeadlock: a session whose TCP stream breaks on
// the sending side first notices it, and Close returns.
func TestTCPWriteErrorDoesNotDeadlock(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		var fb *failWriteConn
		a, b := newPipeSessionsWrapped(t, Config{}, func(c net.Conn) net.Conn { fb = &failWriteConn{Conn: c}; return fb })

		fb.failing.Store(true)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for b.Stats().TCP.State != LinkDown {
				time.Sleep(5 * time.Millisecond)
			}
		}()
		select {
		case <-done:
		case <-testwait.Chan(t):
			t.Fatal("the session deadlocked on a TCP write error (its transport never went down; gave up near the test binary's deadline)")
		}
		if st := b.Stats(); st.TCP.Err == "" {
			t.Errorf("TCP went down without a reason")
		}
		closed := make(chan struct{})
		go func() { a.Close(); b.Close(); close(closed) }()
		select {
		case <-closed:
		case <-testwait.Chan(t):
			t.Fatal("Close hung after a TCP write error (gave up near the test binary's deadline)")
		}
	})
}
