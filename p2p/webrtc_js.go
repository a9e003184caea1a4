//go:build js

package p2p

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall/js"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/webrtc/v4"
)

// In a browser, pion's js build wraps the browser's RTCPeerConnection.
// The browser does its own ICE, DTLS and SCTP: Config.Net, Interfaces,
// InterfaceFilter, IncludeLoopback and UDP4Only do not apply, and the
// browser generates the DTLS certificate itself (it cannot import the
// session's key). The session's certificate then pins only the relay's
// TLS, announced in the SDP with tlsFingerprintAttr (see localSDP).

// newPeerConnection makes a browser RTCPeerConnection.
// A browser's ICE timers are its own: checkFor does not apply.
func newPeerConnection(cfg *Config, _ *identity, _ time.Duration) (*webrtc.PeerConnection, error) {
	pc, err := webrtc.NewPeerConnection(webrtc.Configuration{ICEServers: cfg.ICEServers})
	if err != nil {
		return nil, fmt.Errorf("p2p: webrtc: new peer connection: %w", err)
	}
	return pc, nil
}

// watchSelectedPair records the types of the selected candidate pair when
// the connection is up (pion's js build does not report it): from the ICE
// transport's getSelectedCandidatePair where the browser has it
// (Chromium), else from getStats' selected pair. Until then, or if neither
// says, Stats shows CandidateUnknown.
func (t *rtcTransport) watchSelectedPair() {
	pc := t.pc.JSValue()
	onChange := js.FuncOf(func(js.Value, []js.Value) any {
		if pc.Get("connectionState").String() == "connected" {
			go t.readSelectedPair(pc) // getStats is a promise: not in the event handler
		}
		return nil
	})
	pc.Call("addEventListener", "connectionstatechange", onChange)
	go func() {
		<-t.ctx.Done()
		pc.Call("removeEventListener", "connectionstatechange", onChange)
		onChange.Release()
	}()
}

func (t *rtcTransport) readSelectedPair(pc js.Value) {
	set := func(local, remote string) {
		t.localCand.Store(uint32(candidateTypeOf(local)))
		t.remoteCand.Store(uint32(candidateTypeOf(remote)))
	}
	if sctp := pc.Get("sctp"); sctp.Truthy() {
		if ice := sctp.Get("transport").Get("iceTransport"); ice.Truthy() && ice.Get("getSelectedCandidatePair").Type() == js.TypeFunction {
			if p := ice.Call("getSelectedCandidatePair"); p.Truthy() {
				set(p.Get("local").Get("type").String(), p.Get("remote").Get("type").String())
				return
			}
		}
	}
	report, err := await(pc.Call("getStats"))
	if err != nil {
		t.log.Debug("p2p: webrtc: getStats", "err", err)
		return
	}
	var pair js.Value
	each := js.FuncOf(func(_ js.Value, args []js.Value) any {
		v := args[0]
		switch v.Get("type").String() {
		case "transport":
			if id := v.Get("selectedCandidatePairId"); id.Truthy() {
				pair = report.Call("get", id)
			}
		case "candidate-pair":
			if !pair.Truthy() && v.Get("nominated").Truthy() && v.Get("state").String() == "succeeded" {
				pair = v
			}
		}
		return nil
	})
	report.Call("forEach", each)
	each.Release()
	if !pair.Truthy() {
		return
	}
	l, r := report.Call("get", pair.Get("localCandidateId")), report.Call("get", pair.Get("remoteCandidateId"))
	if l.Truthy() && r.Truthy() {
		set(l.Get("candidateType").String(), r.Get("candidateType").String())
	}
}

// candidateTypeOf maps an RTCIceCandidateType.
func candidateTypeOf(s string) CandidateType {
	switch s {
	case "host":
		return CandidateHost
	case "srflx":
		return CandidateSrflx
	case "prflx":
		return CandidatePrflx
	case "relay":
		return CandidateRelay
	}
	return CandidateUnknown
}

// await waits for a JavaScript promise (from a goroutine, not an event
// handler).
func await(p js.Value) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	ok := js.FuncOf(func(_ js.Value, args []js.Value) any {
		ch <- result{v: args[0]}
		return nil
	})
	fail := js.FuncOf(func(_ js.Value, args []js.Value) any {
		ch <- result{err: errors.New(args[0].Call("toString").String())}
		return nil
	})
	defer ok.Release()
	defer fail.Release()
	p.Call("then", ok, fail)
	r := <-ch
	return r.v, r.err
}

// localSDP adds the fingerprint of the session's certificate to a
// description the browser made: its DTLS certificate is the browser's,
// so the relay's TLS is pinned to this one instead.
func localSDP(sdp string, id *identity) string { return addTLSFingerprint(sdp, id.fp) }

// detach reads the channel through its own message handler: each message
// is copied out of the browser in the event handler and queued (pion's
// js detach runs a goroutine per message and fails on a short buffer).
func detach(dc *webrtc.DataChannel) (datachannel.ReadWriteCloser, error) {
	c := &jsChannel{dc: dc, in: make(chan []byte, jsChannelQueue), done: make(chan struct{})}
	v := dc.JSValue()
	v.Set("binaryType", "arraybuffer")
	c.onMessage = js.FuncOf(func(_ js.Value, args []js.Value) any {
		data := args[0].Get("data")
		if data.Type() == js.TypeString {
			c.push(nil, true)
			return nil
		}
		u8 := js.Global().Get("Uint8Array").New(data)
		b := make([]byte, u8.Get("length").Int())
		js.CopyBytesToGo(b, u8)
		c.push(b, false)
		return nil
	})
	c.onClose = js.FuncOf(func(js.Value, []js.Value) any {
		c.closeOnce.Do(func() { close(c.done) })
		return nil
	})
	v.Set("onmessage", c.onMessage)
	v.Set("onclose", c.onClose)
	return c, nil
}

// jsChannelQueue is how many received messages wait for the read loop;
// more are dropped (an unreliable channel may drop anyway).
const jsChannelQueue = 256

// jsChannel is an open browser data channel as a
// datachannel.ReadWriteCloser.
type jsChannel struct {
	dc                 *webrtc.DataChannel
	in                 chan []byte
	done               chan struct{}
	closeOnce          sync.Once
	onMessage, onClose js.Func

	mu      sync.Mutex
	pending []byte // a message too long for the last read buffer
	strings int    // text messages received (nil entries in in)
}

func (c *jsChannel) push(b []byte, isString bool) {
	if isString {
		c.mu.Lock()
		c.strings++
		c.mu.Unlock()
	}
	select {
	case c.in <- b:
	default: // the read loop is behind: drop, as the network might
	}
}

func (c *jsChannel) Read(p []byte) (int, error) {
	n, _, err := c.ReadDataChannel(p)
	return n, err
}

// ReadDataChannel returns the next message. A message longer than p is
// kept and io.ErrShortBuffer returned, as pion's native channel does, so
// the caller can read it with a larger buffer. A text message is
// reported with isString and no data.
func (c *jsChannel) ReadDataChannel(p []byte) (int, bool, error) {
	c.mu.Lock()
	msg := c.pending
	c.pending = nil
	c.mu.Unlock()
	if msg == nil {
		select {
		case msg = <-c.in:
		case <-c.done:
			select {
			case msg = <-c.in:
			default:
				return 0, false, io.EOF
			}
		}
	}
	if msg == nil {
		return 0, true, nil
	}
	if len(msg) > len(p) {
		c.mu.Lock()
		c.pending = msg
		c.mu.Unlock()
		return 0, false, io.ErrShortBuffer
	}
	return copy(p, msg), false, nil
}

func (c *jsChannel) Write(p []byte) (int, error) { return c.WriteDataChannel(p, false) }

func (c *jsChannel) WriteDataChannel(p []byte, isString bool) (int, error) {
	if isString {
		return 0, errors.New("p2p: webrtc: text messages are not sent")
	}
	select {
	case <-c.done:
		return 0, io.ErrClosedPipe
	default:
	}
	if err := c.dc.Send(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *jsChannel) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	v := c.dc.JSValue()
	v.Set("onmessage", js.Null())
	v.Set("onclose", js.Null())
	err := c.dc.Close()
	c.onMessage.Release()
	c.onClose.Release()
	return err
}

// descGatherWait: in a browser an answer (to another browser that also
// brought an early offer, see earlyOffers) goes at once, its candidates
// trickled: waiting for them would take more turns of the page's thread.
const descGatherWait = 0

// earlyOffers: in a browser Connect makes its offer before it joins and
// sends it with the join (signaling.Client.SetOffer), so that it is the
// offerer when paired with a Go player: every step of an answer (the
// paired and offer events, setRemoteDescription, createAnswer,
// setLocalDescription) waits for the page's one thread, between frames,
// while the offerer's part after the pairing is the answer's arrival and
// the browser's own ICE, DTLS and SCTP. Making the offer also starts the
// browser's WebRTC stack, whose first RTCPeerConnection takes a second or
// more in some browsers, while the player waits rather than after the
// pairing.
const earlyOffers = true

// relayTLSDefer: in a browser the relay's TLS handshake (pure Go in wasm,
// tens of ms of CPU on the page's one thread, more the first time) waits
// until the session runs, or at most this long: while it runs the page
// handles nothing else, and WebRTC's setup, done well within this on a
// LAN, would wait behind it. A page whose WebRTC does not connect still
// has its relay ready by the time the session stops waiting for WebRTC (a
// fifth of Config.WebRTCTimeout after the pairing, 1 s): with UDP blocked
// on loopback it runs on the relay about 1.1 s after pairing.
const relayTLSDefer = 700 * time.Millisecond
