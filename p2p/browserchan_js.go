//go:build js

package p2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall/js"
	"time"
)

// readSelectedPair records the types of the selected candidate pair: from
// the ICE transport's getSelectedCandidatePair where the browser has it
// (Chromium), else from getStats' selected pair. Until then, or if
// neither says, Stats shows CandidateUnknown.
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
		var v js.Value
		if len(args) > 0 {
			v = args[0]
		}
		ch <- result{v: v}
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

// jsChannelQueue is how many received messages wait for the read loop;
// more are dropped (an unreliable channel may drop anyway).
const jsChannelQueue = 256

// jsChannel is an open browser data channel: messages are copied out of
// the browser in its event handler and queued for the read loop.
type jsChannel struct {
	dc        js.Value
	in        chan []byte // nil entries: text messages
	done      chan struct{}
	closeOnce sync.Once

	wmu  sync.Mutex
	wbuf js.Value // a Uint8Array reused for sends (send copies it)
}

func (c *jsChannel) push(b []byte) {
	select {
	case c.in <- b:
	default: // the read loop is behind: drop, as the network might
	}
}

// BufferedAmount is the bytes queued to send.
func (c *jsChannel) BufferedAmount() uint64 { return uint64(c.dc.Get("bufferedAmount").Int()) }

func (c *jsChannel) write(p []byte) (err error) {
	select {
	case <-c.done:
		return io.ErrClosedPipe
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wbuf.IsUndefined() || c.wbuf.Get("length").Int() < len(p) {
		c.wbuf = js.Global().Get("Uint8Array").New(max(len(p), 2048))
	}
	js.CopyBytesToJS(c.wbuf, p)
	defer func() {
		if r := recover(); r != nil { // send throws when the channel is not open
			err = fmt.Errorf("p2p: webrtc: send: %v", r)
		}
	}()
	c.dc.Call("send", c.wbuf.Call("subarray", 0, len(p)))
	return nil
}

// earlyOffer is an RTCPeerConnection, its data channel and its offer,
// made before the pairing and sent with the join
// (signaling.Client.SetOffer): the server hands the offer to the
// answerer together with the pairing. The offer goes as soon as it
// carries one host candidate (or the end of candidates, or after
// earlyGatherWait); the candidates gathered later are kept and trickled
// once a transport adopts the offer. So a slow gathering (a loaded
// machine) does not lose the early offer, the page's fast path.
type earlyOffer struct {
	log *slog.Logger
	b   *browserPC
	sdp string // as sent: localSDP of the local description
	// delivered: the server has the offer (sent with the join, or late
	// before the pairing); else the transport sends it as its offer.
	delivered bool

	mu    sync.Mutex
	t     *rtcTransport  // the transport that adopted it
	cands []iceCandidate // gathered, until adopted
	first chan struct{}  // closed at the first host candidate or the end
	once  sync.Once
}

// earlyGatherWait bounds the wait for a first host candidate.
const earlyGatherWait = 500 * time.Millisecond

// prepareOffer makes an early offer: the RTCPeerConnection and its offer
// first, while the session's key is made, then waits for the key and a
// first host candidate (at most earlyGatherWait).
func prepareOffer(ctx context.Context, cfg *Config, id func() (*identity, error)) (*earlyOffer, error) {
	b, err := newBrowserPC(cfg)
	if err != nil {
		return nil, err
	}
	e := &earlyOffer{log: cfg.Logger, b: b, first: make(chan struct{})}
	b.on(b.pc, "icecandidate", func(ev js.Value) { e.onCandidate(candidateOf(ev.Get("candidate"))) })
	start := time.Now()
	d, err := await(b.pc.Call("createOffer"))
	if err == nil {
		_, err = await(b.pc.Call("setLocalDescription", d))
	}
	if err != nil {
		e.close()
		return nil, fmt.Errorf("p2p: webrtc: early offer: %w", err)
	}
	ident, err := id()
	if err != nil {
		e.close()
		return nil, err
	}
	t := time.NewTimer(earlyGatherWait)
	defer t.Stop()
	select {
	case <-e.first:
	case <-t.C:
		cfg.Logger.Info("p2p: webrtc: no host candidate yet: the early offer goes without, its candidates trickled", "after", time.Since(start))
	case <-ctx.Done():
		e.close()
		return nil, ctx.Err()
	}
	e.sdp = localSDP(b.pc.Get("localDescription").Get("sdp").String(), ident)
	cfg.Logger.Debug("p2p: webrtc: early offer ready", "after", time.Since(start))
	return e, nil
}

// onCandidate runs in the page's event handler.
func (e *earlyOffer) onCandidate(c iceCandidate) {
	if c.Candidate == "" || strings.Contains(c.Candidate, " typ host") {
		e.once.Do(func() { close(e.first) })
	}
	e.mu.Lock()
	if t := e.t; t != nil {
		e.mu.Unlock()
		go t.onCandidate(c)
		return
	}
	e.cands = append(e.cands, c)
	e.mu.Unlock()
}

// adopt hands the connection to t, with the candidates gathered so far.
func (e *earlyOffer) adopt(t *rtcTransport) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.t = t
	t.localCands = append(t.localCands, e.cands...) // sentDesc skips those in e.sdp
	e.cands = nil
}

// close closes an early offer no transport adopted (nothing if e is nil).
func (e *earlyOffer) close() {
	if e == nil {
		return
	}
	e.b.close()
}

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
const earlyOffers = offerFull

// relayTLSDefer: in a browser the relay's TLS handshake (pure Go in wasm,
// tens of ms of CPU on the page's one thread, more the first time) waits
// until the session runs, or at most this long: while it runs the page
// handles nothing else, and WebRTC's setup, done well within this on a
// LAN, would wait behind it. A page whose WebRTC does not connect still
// has its relay ready by the time the session stops waiting for WebRTC (a
// fifth of Config.WebRTCTimeout after the pairing, 1 s): with UDP blocked
// on loopback it runs on the relay about 1.1 s after pairing.
//
// Once the page's own part of WebRTC's setup is done (the offerer applied
// the answer, the answerer sent it), what remains (ICE, DTLS, SCTP) is
// the browser's, off the page's thread: the handshake then waits only
// relayTLSAfterSetup more (on a LAN the data channel opens within it),
// so that with UDP blocked the relay is up sooner.
const (
	relayTLSDefer      = 700 * time.Millisecond
	relayTLSAfterSetup = 250 * time.Millisecond
)
