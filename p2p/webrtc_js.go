//go:build js

package p2p

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"

	"github.com/ragsync/ragsync/p2p/internal/wire"
	"github.com/ragsync/ragsync/signaling"
)

// In a browser the session drives the browser's own RTCPeerConnection
// through syscall/js; pion is not linked (it added about 1.4 MB of gzipped
// wasm). The browser does its own ICE, DTLS and SCTP: Config.Net,
// Interfaces, InterfaceFilter, IncludeLoopback and UDP4Only do not apply,
// and the browser generates the DTLS certificate itself (it cannot import
// the session's key). The session's certificate then pins only the
// relay's TLS, announced in the SDP with tlsFingerprintAttr (see
// localSDP). The data channel is the one webrtc.go negotiates natively:
// "ragsync", pre-negotiated as id 0, unordered, 0 retransmits.

// iceCandidate is a trickled ICE candidate (RTCIceCandidateInit); an
// empty Candidate is the end of candidates.
type iceCandidate struct {
	Candidate        string
	SDPMid           *string
	SDPMLineIndex    *uint16
	UsernameFragment *string
}

// rtcCertificate: the browser makes its own DTLS certificate.
type rtcCertificate struct{}

func newRTCCertificate(*ecdsa.PrivateKey, *x509.Certificate) rtcCertificate {
	return rtcCertificate{}
}

// browserPC is an RTCPeerConnection with the session's data channel, and
// the event handlers registered on them (released by close).
type browserPC struct {
	pc, dc js.Value
	mu     sync.Mutex
	funcs  []js.Func
}

// newBrowserPC makes an RTCPeerConnection and the session's data channel.
func newBrowserPC(cfg *Config) (b *browserPC, err error) {
	defer func() {
		if r := recover(); r != nil { // a js.Error thrown by the constructor
			err = fmt.Errorf("p2p: webrtc: new peer connection: %v", r)
		}
	}()
	conf := js.Global().Get("Object").New()
	servers := js.Global().Get("Array").New()
	for _, s := range cfg.ICEServers {
		o := js.Global().Get("Object").New()
		urls := js.Global().Get("Array").New()
		for _, u := range s.URLs {
			urls.Call("push", u)
		}
		o.Set("urls", urls)
		if s.Username != "" {
			o.Set("username", s.Username)
			o.Set("credential", s.Credential)
		}
		servers.Call("push", o)
	}
	conf.Set("iceServers", servers)
	ctor := js.Global().Get("RTCPeerConnection")
	if !ctor.Truthy() {
		return nil, errors.New("p2p: webrtc: this browser has no RTCPeerConnection")
	}
	pc := ctor.New(conf)
	init := js.Global().Get("Object").New()
	init.Set("negotiated", true)
	init.Set("id", 0)
	init.Set("ordered", false)
	init.Set("maxRetransmits", 0)
	dc := pc.Call("createDataChannel", "ragsync", init)
	dc.Set("binaryType", "arraybuffer")
	return &browserPC{pc: pc, dc: dc}, nil
}

// on registers f for event on target (pc or dc). f runs on the page's
// event loop: it must not wait for anything.
func (b *browserPC) on(target js.Value, event string, f func(js.Value)) {
	fn := js.FuncOf(func(_ js.Value, args []js.Value) any {
		var ev js.Value
		if len(args) > 0 {
			ev = args[0]
		}
		f(ev)
		return nil
	})
	b.mu.Lock()
	b.funcs = append(b.funcs, fn)
	b.mu.Unlock()
	target.Call("addEventListener", event, fn)
}

// close closes the channel and the connection and releases the handlers.
func (b *browserPC) close() {
	b.dc.Call("close")
	b.pc.Call("close")
	b.mu.Lock()
	funcs := b.funcs
	b.funcs = nil
	b.mu.Unlock()
	// Events already queued may still call the handlers: release them
	// on a later turn of the event loop.
	time.AfterFunc(time.Second, func() {
		for _, f := range funcs {
			f.Release()
		}
	})
}

// candidateOf converts an RTCIceCandidate (null: the end of candidates).
func candidateOf(c js.Value) iceCandidate {
	if c.IsNull() || c.IsUndefined() {
		return iceCandidate{}
	}
	ci := iceCandidate{Candidate: c.Get("candidate").String()}
	if v := c.Get("sdpMid"); v.Type() == js.TypeString {
		s := v.String()
		ci.SDPMid = &s
	}
	if v := c.Get("sdpMLineIndex"); v.Type() == js.TypeNumber {
		i := uint16(v.Int())
		ci.SDPMLineIndex = &i
	}
	if v := c.Get("usernameFragment"); v.Type() == js.TypeString {
		s := v.String()
		ci.UsernameFragment = &s
	}
	return ci
}

func (c iceCandidate) js() js.Value {
	o := js.Global().Get("Object").New()
	o.Set("candidate", c.Candidate)
	if c.SDPMid != nil {
		o.Set("sdpMid", *c.SDPMid)
	}
	if c.SDPMLineIndex != nil {
		o.Set("sdpMLineIndex", int(*c.SDPMLineIndex))
	}
	if c.UsernameFragment != nil {
		o.Set("usernameFragment", *c.UsernameFragment)
	}
	return o
}

func description(typ, sdp string) js.Value {
	o := js.Global().Get("Object").New()
	o.Set("type", typ)
	o.Set("sdp", sdp)
	return o
}

// rtcTransport is the WebRTC transport in a browser: one
// RTCPeerConnection with the session's data channel.
type rtcTransport struct {
	cfg  *Config
	role signaling.Role
	sig  signaler
	h    linkHandler
	log  *slog.Logger
	b    *browserPC
	id   *identity

	ctx    context.Context // canceled on close; bounds signaling sends
	cancel context.CancelFunc

	mu            sync.Mutex
	remoteSet     bool
	pendingCands  []iceCandidate // remote, until the remote description is set
	descSent      bool           // our offer or answer has been sent
	localCands    []iceCandidate // ours, until it has
	closed        bool
	remoteSession string // the o= session id of the offer applied (answerer)

	early *earlyOffer // the adopted early offer, if any: start sends nothing

	// setup is closed when this page's part of the WebRTC setup is done
	// (the offerer applied the answer, the answerer sent it): the rest,
	// ICE, DTLS and SCTP, is the browser's own, off the page's thread.
	setup     chan struct{}
	setupOnce sync.Once

	raw      atomic.Pointer[rawChannel]
	downOnce sync.Once
	wg       sync.WaitGroup

	localCand  atomic.Uint32 // CandidateType
	remoteCand atomic.Uint32
	remoteDone atomic.Bool // the remote description is applied (remoteSet, lock-free)
}

// newRTCTransport makes the RTCPeerConnection and its data channel, or
// adopts those of an early offer (then start sends nothing: the server
// delivered the offer).
// newRTCTransportChecking is newRTCTransport: a browser's ICE timers are
// its own, so checkFor does not apply.
func newRTCTransportChecking(cfg *Config, role signaling.Role, sig signaler, h linkHandler, id *identity, early *earlyOffer, _ time.Duration) (*rtcTransport, error) {
	return newRTCTransport(cfg, role, sig, h, id, early)
}

func newRTCTransport(cfg *Config, role signaling.Role, sig signaler, h linkHandler, id *identity, early *earlyOffer) (*rtcTransport, error) {
	var b *browserPC
	if early != nil {
		b = early.b
	} else {
		var err error
		if b, err = newBrowserPC(cfg); err != nil {
			return nil, err
		}
	}
	t := &rtcTransport{cfg: cfg, role: role, sig: sig, h: h, log: cfg.Logger, b: b, id: id, early: early, setup: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	if early != nil {
		early.adopt(t)
	} else {
		b.on(b.pc, "icecandidate", func(ev js.Value) {
			c := candidateOf(ev.Get("candidate"))
			go t.onCandidate(c)
		})
	}
	pc := b.pc
	b.on(pc, "connectionstatechange", func(js.Value) {
		s := pc.Get("connectionState").String()
		t.log.Debug("p2p: webrtc: connection state", "state", s, "role", role.String())
		switch s {
		case "connected":
			go t.readSelectedPair(pc) // getStats is a promise: not in the event handler
		case "failed", "closed":
			go t.down(fmt.Errorf("p2p: webrtc: peer connection %s", s))
		}
	})
	b.on(pc, "datachannel", func(ev js.Value) {
		dc := ev.Get("channel")
		t.log.Info("p2p: webrtc: refusing an in-band data channel from the peer", "label", dc.Get("label").String())
		dc.Call("close")
	})
	t.watch()
	return t, nil
}

// watch starts reading the data channel when it opens (at once if it
// already has).
func (t *rtcTransport) watch() {
	dc := t.b.dc
	c := &jsChannel{dc: dc, in: make(chan []byte, jsChannelQueue), done: make(chan struct{})}
	t.b.on(dc, "message", func(ev js.Value) {
		data := ev.Get("data")
		if data.Type() == js.TypeString {
			c.push(nil)
			return
		}
		u8 := js.Global().Get("Uint8Array").New(data)
		b := make([]byte, u8.Get("length").Int())
		js.CopyBytesToGo(b, u8)
		c.push(b)
	})
	t.b.on(dc, "close", func(js.Value) { c.closeOnce.Do(func() { close(c.done) }) })
	t.b.on(dc, "open", func(js.Value) { go t.opened(c) })
	if dc.Get("readyState").String() == "open" {
		go t.opened(c)
	}
}

func (t *rtcTransport) opened(c *jsChannel) {
	t.mu.Lock()
	if t.closed || t.raw.Load() != nil {
		t.mu.Unlock()
		return
	}
	t.raw.Store(&rawChannel{rw: c, dc: c})
	t.wg.Add(1)
	t.mu.Unlock()
	t.log.Debug("p2p: webrtc: data channel open", "role", t.role.String())
	go t.readLoop(c)
	t.h.onUp(TransportWebRTC)
}

func (t *rtcTransport) kind() TransportKind { return TransportWebRTC }

// setupDone is closed when the page's part of the setup is done (see
// setup).
func (t *rtcTransport) setupDone() <-chan struct{} { return t.setup }

// rawChannel is the open data channel.
type rawChannel struct {
	rw *jsChannel
	dc *jsChannel // BufferedAmount, as on pion's channel
}

// rawChan returns the open channel, or nil (also for a nil transport).
func (t *rtcTransport) rawChan() *rawChannel {
	if t == nil {
		return nil
	}
	return t.raw.Load()
}

// candidates returns the types of the selected candidate pair.
func (t *rtcTransport) candidates() (local, remote CandidateType) {
	return CandidateType(t.localCand.Load()), CandidateType(t.remoteCand.Load())
}

// onCandidate sends a local candidate, or keeps it until our description
// has gone: the peer applies a candidate that arrives first to its
// previous PeerConnection.
func (t *rtcTransport) onCandidate(c iceCandidate) {
	t.mu.Lock()
	if !t.descSent {
		t.localCands = append(t.localCands, c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.sendCandidate(c)
}

func (t *rtcTransport) sendCandidate(c iceCandidate) {
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	if err := t.sig.sendCandidate(ctx, c); err != nil && t.ctx.Err() == nil {
		t.log.Debug("p2p: webrtc: sending candidate failed", "err", err)
	}
}

// sentDesc records that our description, sdp, has been sent and sends the
// candidates gathered meanwhile that it does not carry.
func (t *rtcTransport) sentDesc(sdp string) {
	t.mu.Lock()
	t.descSent = true
	pend := t.localCands
	t.localCands = nil
	t.mu.Unlock()
	for _, c := range pend {
		if c.Candidate == "" || !strings.Contains(sdp, "a="+c.Candidate+"\r\n") {
			t.sendCandidate(c)
		}
	}
}

// remoteSessionID returns the session id of the offer applied ("" if none).
func (t *rtcTransport) remoteSessionID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.remoteSession
}

// sdpSessionID returns the session id of an SDP's o= line ("" if none).
func sdpSessionID(sdp string) string {
	for line := range strings.Lines(sdp) {
		if o, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "o="); ok {
			if f := strings.Fields(o); len(f) >= 2 {
				return f[1]
			}
		}
	}
	return ""
}

// localDescription sets the description the promise p (createOffer or
// createAnswer) gives and returns its SDP, as sent to the peer.
func (t *rtcTransport) localDescription(p js.Value) (string, error) {
	return setLocal(t.b.pc, p, t.id)
}

func setLocal(pc, p js.Value, id *identity) (string, error) {
	d, err := await(p)
	if err != nil {
		return "", err
	}
	if _, err := await(pc.Call("setLocalDescription", d)); err != nil {
		return "", err
	}
	return localSDP(pc.Get("localDescription").Get("sdp").String(), id), nil
}

// start sends the offer (offerer only); with an early offer, the server
// has delivered it and only the candidates gathered since are sent.
func (t *rtcTransport) start(ctx context.Context) error {
	if e := t.early; e != nil {
		if !e.delivered {
			t.log.Debug("p2p: webrtc: sending the early offer, which the server did not take")
			if err := t.sig.sendOffer(ctx, e.sdp); err != nil {
				return fmt.Errorf("p2p: webrtc: send offer: %w", err)
			}
		}
		t.sentDesc(e.sdp)
		return nil
	}
	sdp, err := t.localDescription(t.b.pc.Call("createOffer"))
	if err != nil {
		return fmt.Errorf("p2p: webrtc: offer: %w", err)
	}
	if err := t.sig.sendOffer(ctx, sdp); err != nil {
		return fmt.Errorf("p2p: webrtc: send offer: %w", err)
	}
	t.sentDesc(sdp)
	return nil
}

// handleOffer applies the peer's offer and sends the answer (answerer
// only), at once: its candidates are trickled.
func (t *rtcTransport) handleOffer(ctx context.Context, sdp string) error {
	t.log.Debug("p2p: webrtc: offer received")
	if t.role != signaling.RoleAnswerer {
		return fmt.Errorf("p2p: webrtc: unexpected offer for the %s", t.role)
	}
	if err := t.setRemote("offer", sdp); err != nil {
		return err
	}
	t.mu.Lock()
	t.remoteSession = sdpSessionID(sdp)
	t.mu.Unlock()
	ans, err := t.localDescription(t.b.pc.Call("createAnswer"))
	if err != nil {
		return fmt.Errorf("p2p: webrtc: answer: %w", err)
	}
	if err := t.sig.sendAnswer(ctx, ans); err != nil {
		return fmt.Errorf("p2p: webrtc: send answer: %w", err)
	}
	t.log.Debug("p2p: webrtc: answer sent")
	t.setupOnce.Do(func() { close(t.setup) })
	t.sentDesc(ans)
	return nil
}

// handleAnswer applies the peer's answer (offerer only).
func (t *rtcTransport) handleAnswer(sdp string) error {
	if t.role != signaling.RoleOfferer {
		return fmt.Errorf("p2p: webrtc: unexpected answer for the %s", t.role)
	}
	t.log.Debug("p2p: webrtc: answer received")
	if err := t.setRemote("answer", sdp); err != nil {
		return err
	}
	t.log.Debug("p2p: webrtc: answer applied")
	t.setupOnce.Do(func() { close(t.setup) })
	return nil
}

func (t *rtcTransport) setRemote(typ, sdp string) error {
	if _, err := await(t.b.pc.Call("setRemoteDescription", description(typ, sdp))); err != nil {
		return fmt.Errorf("p2p: webrtc: set remote %s: %w", typ, err)
	}
	t.remoteDone.Store(true)
	t.mu.Lock()
	t.remoteSet = true
	pend := t.pendingCands
	t.pendingCands = nil
	t.mu.Unlock()
	for _, c := range pend {
		t.addCandidate(c)
	}
	return nil
}

// handleCandidate adds a trickled remote candidate, queueing it until the
// remote description is set. A malformed candidate is logged and ignored.
func (t *rtcTransport) handleCandidate(c iceCandidate) {
	t.mu.Lock()
	if !t.remoteSet {
		if len(t.pendingCands) < 256 {
			t.pendingCands = append(t.pendingCands, c)
		}
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.addCandidate(c)
}

func (t *rtcTransport) addCandidate(c iceCandidate) {
	if c.Candidate == "" && c.SDPMid == nil && c.SDPMLineIndex == nil {
		return // the end of the peer's candidates: nothing a browser needs
	}
	if _, err := await(t.b.pc.Call("addIceCandidate", c.js())); err != nil {
		t.log.Debug("p2p: webrtc: bad remote candidate", "candidate", c.Candidate, "err", err)
	}
}

func (t *rtcTransport) readLoop(c *jsChannel) {
	defer t.wg.Done()
	for {
		var msg []byte
		select {
		case msg = <-c.in:
		case <-c.done:
			t.down(fmt.Errorf("p2p: webrtc: read: %w", io.EOF))
			return
		}
		if msg == nil {
			t.h.onMalformed(TransportWebRTC) // a text message
			continue
		}
		if len(msg) > t.cfg.MaxMessageSize+wire.HeaderLen {
			t.h.onMalformed(TransportWebRTC)
			continue
		}
		t.h.onMessage(TransportWebRTC, msg)
	}
}

// send writes one message. It never blocks: when more than SendBuffer
// bytes are queued (the path is congested or dead), it drops the message
// and returns errTransportBusy.
func (t *rtcTransport) send(p []byte) error {
	r := t.raw.Load()
	if r == nil {
		return errTransportDown
	}
	if r.dc.BufferedAmount() > uint64(t.cfg.SendBuffer) {
		return errTransportBusy
	}
	return r.rw.write(p)
}

func (t *rtcTransport) sendData(p []byte) error { return t.send(p) }

func (t *rtcTransport) down(err error) {
	t.downOnce.Do(func() {
		t.mu.Lock()
		closed := t.closed
		t.mu.Unlock()
		if !closed {
			t.h.onDown(TransportWebRTC, err)
		}
	})
}

// close closes the RTCPeerConnection and waits for the read loop.
func (t *rtcTransport) close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	if r := t.raw.Load(); r != nil {
		r.rw.closeOnce.Do(func() { close(r.rw.done) })
	}
	t.b.close()
	t.wg.Wait()
	return nil
}
