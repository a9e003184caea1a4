package p2p

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
)

// sdpSink takes a peer's negotiation messages: a session, or a bare
// WebRTC transport.
type sdpSink interface {
	handleOffer(ctx context.Context, sdp string) error
	handleAnswer(sdp string) error
	handleCandidate(c webrtc.ICECandidateInit)
}

// pipeSignaler delivers one peer's negotiation messages to the other
// peer, in order, on its own goroutine.
type pipeSignaler struct {
	ch   chan func(sdpSink)
	peer sdpSink
	wg   sync.WaitGroup
	once sync.Once
}

func newPipeSignaler() *pipeSignaler { return &pipeSignaler{ch: make(chan func(sdpSink), 256)} }

func (p *pipeSignaler) run(peer sdpSink) {
	p.peer = peer
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for f := range p.ch {
			f(p.peer)
		}
	}()
}

func (p *pipeSignaler) stop() { p.once.Do(func() { close(p.ch) }); p.wg.Wait() }

func (p *pipeSignaler) post(f func(sdpSink)) (err error) {
	defer func() {
		if recover() != nil {
			err = context.Canceled // closed
		}
	}()
	p.ch <- f
	return nil
}

func (p *pipeSignaler) sendOffer(ctx context.Context, sdp string) error {
	return p.post(func(t sdpSink) { _ = t.handleOffer(context.Background(), sdp) })
}
func (p *pipeSignaler) sendAnswer(ctx context.Context, sdp string) error {
	return p.post(func(t sdpSink) { _ = t.handleAnswer(sdp) })
}
func (p *pipeSignaler) sendCandidate(ctx context.Context, c webrtc.ICECandidateInit) error {
	return p.post(func(t sdpSink) { t.handleCandidate(c) })
}

// chanHandler collects transport callbacks.
type chanHandler struct {
	malformed atomic.Int32
	up        chan TransportKind
	msgs      chan []byte
	down      chan error
}

func newChanHandler() *chanHandler {
	return &chanHandler{up: make(chan TransportKind, 4), msgs: make(chan []byte, 4096), down: make(chan error, 4)}
}
func (h *chanHandler) onUp(k TransportKind) { h.up <- k }
func (h *chanHandler) onMessage(k TransportKind, p []byte) {
	select {
	case h.msgs <- append([]byte(nil), p...):
	default:
	}
}
func (h *chanHandler) onDown(k TransportKind, err error) { h.down <- err }
func (h *chanHandler) onMalformed(TransportKind)         { h.malformed.Add(1) }

func newRTCPair(t *testing.T, cfg Config) (a, b *rtcTransport, ha, hb *chanHandler) {
	t.Helper()
	c, err := cfg.withDefaults("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := newPipeSignaler(), newPipeSignaler()
	ha, hb = newChanHandler(), newChanHandler()
	ida, idb := testIdentity(t), testIdentity(t)
	a, err = newRTCTransport(&c, signaling.RoleOfferer, sa, ha, ida, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err = newRTCTransport(&c, signaling.RoleAnswerer, sb, hb, idb, nil)
	if err != nil {
		t.Fatal(err)
	}
	sa.run(b)
	sb.run(a)
	t.Cleanup(func() {
		sa.stop()
		sb.stop()
		a.close()
		b.close()
	})
	if err := a.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*chanHandler{ha, hb} {
		select {
		case <-h.up:
		case err := <-h.down:
			t.Fatalf("transport down before open: %v", err)
		case <-testwait.Chan(t):
			t.Fatal("data channel did not open (gave up near the test binary's deadline)")
		}
	}
	return a, b, ha, hb
}

func TestRTCTransportLoopback(t *testing.T) {
	leaktest.Check(t)
	a, b, ha, hb := newRTCPair(t, testConfig())
	// pion reports the selected candidate pair from a callback of its own,
	// which may run after the data channel opened: wait for it.
	waitUntil(t, "the selected candidate pair", func() bool {
		l, r := a.candidates()
		return l != CandidateUnknown && r != CandidateUnknown
	})
	if l, r := a.candidates(); l != CandidateHost || r == CandidateUnknown {
		t.Errorf("offerer candidate pair %v/%v, want host/host or prflx", l, r)
	}
	// SNAP (see newPeerConnection): the offer and the answer both carry
	// an sctp-init, so the association started without its handshake.
	for name, pc := range map[string]interface {
		LocalDescription() *webrtc.SessionDescription
	}{"offer": a.pc, "answer": b.pc} {
		if d := pc.LocalDescription(); d == nil || !strings.Contains(d.SDP, "a=sctp-init:") {
			t.Errorf("the %s has no sctp-init attribute (SNAP)", name)
		}
	}
	for i := 0; i < 100; i++ {
		if err := a.send([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if err := b.send([]byte{byte(i), 1}); err != nil {
			t.Fatal(err)
		}
	}
	// Count what arrives before an end marker sent after the 100 (repeated
	// until seen: the channel is unreliable), not what arrives within a
	// time limit: on a loaded machine delivery is slower, not lossier.
	got := func(from *rtcTransport, h *chanHandler, size int) int {
		marker := []byte("end")
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				from.send(marker)
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		c := 0
		for {
			select {
			case m := <-h.msgs:
				if string(m) == string(marker) {
					return c
				}
				if len(m) == size {
					c++
				}
			case <-testwait.Chan(t):
				t.Errorf("no end marker (gave up near the test binary's deadline)")
				return c
			}
		}
	}
	if n := got(a, hb, 1); n < 95 {
		t.Errorf("answerer got %d/100", n)
	}
	if n := got(b, ha, 2); n < 95 {
		t.Errorf("offerer got %d/100", n)
	}
	a.pc.Close() // the PeerConnection dies under the transport
	select {
	case <-ha.down:
	case <-testwait.Chan(t):
		t.Error("offerer did not see its transport die (gave up near the test binary's deadline)")
	}
}
