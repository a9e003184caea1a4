package p2p

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

// pipeSignaler delivers one peer's negotiation messages to the other
// transport, in order, on its own goroutine.
type pipeSignaler struct {
	ch   chan func(*rtcTransport)
	peer *rtcTransport
	wg   sync.WaitGroup
	once sync.Once
}

func newPipeSignaler() *pipeSignaler { return &pipeSignaler{ch: make(chan func(*rtcTransport), 256)} }

func (p *pipeSignaler) run(peer *rtcTransport) {
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

func (p *pipeSignaler) post(f func(*rtcTransport)) (err error) {
	defer func() {
		if recover() != nil {
			err = context.Canceled // closed
		}
	}()
	p.ch <- f
	return nil
}

func (p *pipeSignaler) sendOffer(ctx context.Context, sdp string) error {
	return p.post(func(t *rtcTransport) { _ = t.handleOffer(context.Background(), sdp) })
}
func (p *pipeSignaler) sendAnswer(ctx context.Context, sdp string) error {
	return p.post(func(t *rtcTransport) { _ = t.handleAnswer(sdp) })
}
func (p *pipeSignaler) sendCandidate(ctx context.Context, c webrtc.ICECandidateInit) error {
	return p.post(func(t *rtcTransport) { t.handleCandidate(c) })
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

// testConfig is the loopback-only configuration every test uses (the
// network rule: loopback candidates, lo only, UDP4, no mDNS, no ICE
// servers).
func testConfig() Config {
	return Config{Interfaces: InterfacesLoopback, UDP4Only: true}
}

func newRTCPair(t *testing.T, cfg Config) (a, b *rtcTransport, ha, hb *chanHandler) {
	t.Helper()
	c, err := cfg.withDefaults("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := newPipeSignaler(), newPipeSignaler()
	ha, hb = newChanHandler(), newChanHandler()
	a, err = newRTCTransport(&c, RoleOfferer, sa, ha)
	if err != nil {
		t.Fatal(err)
	}
	b, err = newRTCTransport(&c, RoleAnswerer, sb, hb)
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
		case <-time.After(10 * time.Second):
			t.Fatal("data channel did not open")
		}
	}
	return a, b, ha, hb
}

func TestRTCTransportLoopback(t *testing.T) {
	checkLeaks(t)
	a, b, ha, hb := newRTCPair(t, testConfig())
	if l, r := a.candidates(); l != CandidateHost || r == CandidateUnknown {
		t.Errorf("offerer candidate pair %v/%v, want host/host or prflx", l, r)
	}
	for i := 0; i < 100; i++ {
		if err := a.send([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if err := b.send([]byte{byte(i), 1}); err != nil {
			t.Fatal(err)
		}
	}
	got := func(h *chanHandler, n int) int {
		c := 0
		timeout := time.After(5 * time.Second)
		for c < n {
			select {
			case <-h.msgs:
				c++
			case <-timeout:
				return c
			}
		}
		return c
	}
	if n := got(hb, 100); n < 95 {
		t.Errorf("answerer got %d/100", n)
	}
	if n := got(ha, 100); n < 95 {
		t.Errorf("offerer got %d/100", n)
	}
	a.testKill()
	select {
	case <-ha.down:
	case <-time.After(5 * time.Second):
		t.Error("offerer did not see its transport die")
	}
}
