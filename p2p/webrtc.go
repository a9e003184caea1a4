//go:build !js

package p2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/webrtc/v4"

	"github.com/ragsync/ragsync/p2p/internal/wire"
	"github.com/ragsync/ragsync/signaling"
)

// dataChannelLabel names the session's data channel.
const dataChannelLabel = "ragsync"

// dataChannelInit is the session's data channel: pre-negotiated as stream
// id 0 on both sides (no DCEP open handshake, so it is usable as soon as
// SCTP is up), unordered, with 0 retransmits. Any channel the peer opens
// in-band is refused. pion/datachannel honours the reliability settings of
// negotiated channels from v1.6.4 (TestNegotiatedChannelIsUnreliableUnordered).
func dataChannelInit() *webrtc.DataChannelInit {
	negotiated, ordered := true, false
	var id, maxRetransmits uint16
	return &webrtc.DataChannelInit{Negotiated: &negotiated, ID: &id, Ordered: &ordered, MaxRetransmits: &maxRetransmits}
}

// sctpReceiveBuffer is the SCTP receive buffer (pion's default, set
// explicitly): no message larger than this can be reassembled.
const sctpReceiveBuffer = 1 << 20

// sctpRTOMax caps SCTP's retransmission timeout (see newRTCTransport).
// pion's floor is 1 s (RFC 4960's RTO.Min), which a cap below it
// overrides: every timer is then sctpRTOMax. The association's handshake
// (INIT, COOKIE-ECHO) waits for it after each loss: on a lossy link at
// 1 s it took 2 to 4 s. It stays above the round trip of any link a game
// is played on, so the timer does not expire on a packet still in flight.
const sctpRTOMax = 500 * time.Millisecond

// sctpMinCwnd is the floor of SCTP's congestion window (see
// newRTCTransport). pion shrinks the window to one MTU (about 1.2 KB) on
// every retransmission timeout, which on a lossy link (30 % of packets
// lost) comes every second or so, although the channel never retransmits
// (MaxRetransmits 0): the session's 60 states and some pings a second
// then queued behind a window of a few packets per round trip, and
// arrived in bursts seconds late (the clock's pings with them, so the
// answerer took up to 9 s to calibrate after the match started). The
// session's rate is its own and small (about 10 KB/s, a few KB in flight
// on a 300 ms round trip), and it drops what SCTP cannot take (see
// rtcTransport.send), so a floor of 32 KiB only stops the window from
// throttling a stream it cannot congest.
const sctpMinCwnd = 32 << 10

// ICE timers (see newRTCTransport).
const (
	iceDisconnected = 2 * time.Second
	iceFailed       = 3 * time.Second
	iceKeepalive    = 500 * time.Millisecond
	iceMaxChecks    = 50
	// iceCheckInterval is pion's interval between checks while connecting
	// (its default).
	iceCheckInterval = 200 * time.Millisecond
)

// iceChecking returns the ICE failed timeout and the most binding requests
// per pair that keep a new PeerConnection checking for checkFor (zero:
// the defaults, iceFailed and iceMaxChecks): a renewed PeerConnection
// checks until the next renewal is due (see renewBackoff).
func iceChecking(checkFor time.Duration) (failed time.Duration, checks uint16) {
	if checkFor <= iceDisconnected+iceFailed {
		return iceFailed, iceMaxChecks
	}
	return checkFor - iceDisconnected, uint16(min(checkFor/iceCheckInterval+iceMaxChecks, 1<<16-1))
}

// dtlsRetransmit is DTLS's first retransmission timeout (see
// newRTCTransport). pion doubles it after each retransmission and the
// SettingEngine cannot turn that off, so the first timer is the only
// lever on how soon a lost flight is sent again. At 400 ms (above any
// game's round trip, so never spurious) the ICE-connected to DTLS-done
// time on the bad-link test (300 ms round trip, 30 % loss) was 0.3 to
// over 4 s, median 1.9 s: its copies go out at 0, 0.4, 1.2, 2.8 and 6 s.
// At 100 ms they go out at 0, 0.1, 0.3, 0.7, 1.5 and 3.1 s; a model of
// the two round trips at that loss puts the 90th percentile at 1.4 s
// against 3.8 s. On a long path the first copies or two are spurious: a
// few datagrams, once per connection.
const dtlsRetransmit = 100 * time.Millisecond

// rtcTransport is the WebRTC transport: one PeerConnection with one
// unordered, unreliable (MaxRetransmits 0) data channel, detached so reads
// go into a reused buffer.
type rtcTransport struct {
	cfg  *Config
	role signaling.Role
	sig  signaler
	h    linkHandler
	log  *slog.Logger

	pc *webrtc.PeerConnection
	dc *webrtc.DataChannel
	id *identity

	ctx    context.Context // canceled on close; bounds signaling sends
	cancel context.CancelFunc

	mu           sync.Mutex
	remoteSet    bool
	pendingCands []webrtc.ICECandidateInit // remote, until the remote description is set
	descSent     bool                      // our offer or answer has been sent
	localCands   []webrtc.ICECandidateInit // ours, until it has
	closed       bool
	// remoteSession is the session id (o= line) of the offer applied
	// (answerer): an offer with another one comes from a new
	// PeerConnection.
	remoteSession string

	early  *earlyOffer // the adopted early offer, if any: start sends nothing
	gather gathering   // our candidates' end

	raw      atomic.Pointer[rawChannel]
	downOnce sync.Once
	wg       sync.WaitGroup

	localCand  atomic.Uint32 // CandidateType
	remoteCand atomic.Uint32
	remoteDone atomic.Bool // the remote description is applied (remoteSet, lock-free)
}

type rawChannel struct {
	rw datachannel.ReadWriteCloser
	dc *webrtc.DataChannel
}

// newRTCTransport creates the PeerConnection and the data channel, or
// adopts those of an early offer (then start sends nothing: the server
// delivered the offer). The offerer then calls start to send its offer;
// the answerer waits for handleOffer.
func newRTCTransport(cfg *Config, role signaling.Role, sig signaler, h linkHandler, id *identity, early *earlyOffer) (*rtcTransport, error) {
	return newRTCTransportChecking(cfg, role, sig, h, id, early, 0)
}

// newRTCTransportChecking is newRTCTransport with a PeerConnection (not an
// early one) that keeps checking its candidate pairs for checkFor before
// it fails (zero: iceDisconnected+iceFailed; see iceChecking).
func newRTCTransportChecking(cfg *Config, role signaling.Role, sig signaler, h linkHandler, id *identity, early *earlyOffer, checkFor time.Duration) (*rtcTransport, error) {
	var pc *webrtc.PeerConnection
	var dc *webrtc.DataChannel
	if early != nil {
		pc, dc = early.pc, early.dc
	} else {
		var err error
		if pc, dc, err = newChannel(cfg, id, checkFor); err != nil {
			return nil, err
		}
	}
	t := &rtcTransport{cfg: cfg, role: role, sig: sig, h: h, log: cfg.Logger, pc: pc, id: id, early: early, gather: newGathering()}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	if early != nil {
		t.gather = early.gather
		early.adopt(t)
	} else {
		pc.OnICECandidate(func(c *webrtc.ICECandidate) { t.onCandidate(candidateInit(c)) })
	}
	t.watchSelectedPair()
	pc.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		t.log.Debug("p2p: webrtc: connection state", "state", s.String(), "role", role.String())
		if s == webrtc.PeerConnectionStateFailed || s == webrtc.PeerConnectionStateClosed {
			t.down(fmt.Errorf("p2p: webrtc: peer connection %s", s))
		}
	})
	t.watch(dc)
	pc.OnDataChannel(func(dc *webrtc.DataChannel) {
		t.log.Info("p2p: webrtc: refusing an in-band data channel from the peer", "label", dc.Label())
		_ = dc.Close()
	})
	return t, nil
}

// newChannel makes a PeerConnection (checking for checkFor, see
// newRTCTransportChecking) and the session's data channel.
func newChannel(cfg *Config, id *identity, checkFor time.Duration) (*webrtc.PeerConnection, *webrtc.DataChannel, error) {
	cfg.Logger.Debug("p2p: webrtc: new peer connection")
	pc, err := newPeerConnection(cfg, id, checkFor)
	if err != nil {
		return nil, nil, err
	}
	dc, err := pc.CreateDataChannel(dataChannelLabel, dataChannelInit())
	if err != nil {
		_ = pc.Close()
		return nil, nil, fmt.Errorf("p2p: webrtc: create data channel: %w", err)
	}
	cfg.Logger.Debug("p2p: webrtc: peer connection made")
	return pc, dc, nil
}

// candidateInit converts a gathered candidate; nil (the end of
// candidates) gives an empty init, which the peer reads as the end too.
func candidateInit(c *webrtc.ICECandidate) webrtc.ICECandidateInit {
	if c == nil {
		return webrtc.ICECandidateInit{}
	}
	return c.ToJSON()
}

// onCandidate sends a local candidate, or keeps it until our description
// has gone: the peer applies a candidate that arrives first to its
// previous PeerConnection.
func (t *rtcTransport) onCandidate(c webrtc.ICECandidateInit) {
	if c.Candidate == "" {
		t.gather.end()
	}
	t.mu.Lock()
	if !t.descSent {
		t.localCands = append(t.localCands, c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.sendCandidate(c)
}

// earlyOffer is a PeerConnection, its data channel and its offer, made
// before the pairing and sent with the join (signaling.Client.SetOffer):
// the server hands the offer to the answerer together with the pairing.
// In a browser this is how Connect gets the offerer's part, which needs
// no step on the page's thread between paired and the answer (see
// Connect). The offer carries the candidates gathered within
// earlyGatherWait; later ones are trickled once a transport adopts it.
type earlyOffer struct {
	log *slog.Logger
	pc  *webrtc.PeerConnection
	dc  *webrtc.DataChannel
	sdp string // as sent: localSDP of the local description
	// delivered: the server has the offer (sent with the join, or late
	// before the pairing); else the transport sends it as its offer.
	delivered bool

	gather gathering

	mu    sync.Mutex
	t     *rtcTransport             // the transport that adopted it
	cands []webrtc.ICECandidateInit // gathered, until adopted
}

// earlyGatherWait bounds the wait for candidates before an early offer is
// taken: those gathered by then are in it, and candidates gathered later
// (server-reflexive ones, which wait for a STUN server) are trickled after
// the pairing. It is descGatherWait: host candidates come within a
// millisecond or two, and the offer is made while the signaling server is
// dialled, so the join waits for it only on a fast network.
const earlyGatherWait = descGatherWait

// prepareOffer makes an early offer. It waits for the end of candidates,
// at most earlyGatherWait, so that the offer carries them.
func prepareOffer(ctx context.Context, cfg *Config, ident func() (*identity, error)) (*earlyOffer, error) {
	id, err := ident()
	if err != nil {
		return nil, err
	}
	pc, dc, err := newChannel(cfg, id, 0)
	if err != nil {
		return nil, err
	}
	e := &earlyOffer{log: cfg.Logger, pc: pc, dc: dc, gather: newGathering()}
	pc.OnICECandidate(func(c *webrtc.ICECandidate) { e.onCandidate(candidateInit(c)) })
	offer, err := pc.CreateOffer(nil)
	if err == nil {
		err = pc.SetLocalDescription(offer)
	}
	if err != nil {
		e.close()
		return nil, fmt.Errorf("p2p: webrtc: early offer: %w", err)
	}
	if err := e.gather.wait(ctx, earlyGatherWait); err != nil {
		e.close()
		return nil, err
	}
	ld := pc.LocalDescription()
	if ld == nil {
		e.close()
		return nil, errors.New("p2p: webrtc: early offer: no local description")
	}
	e.sdp = localSDP(ld.SDP, id)
	return e, nil
}

func (e *earlyOffer) onCandidate(c webrtc.ICECandidateInit) {
	e.mu.Lock()
	if t := e.t; t != nil {
		e.mu.Unlock()
		t.onCandidate(c)
		return
	}
	e.cands = append(e.cands, c)
	e.mu.Unlock()
	if c.Candidate == "" {
		e.gather.end()
	}
}

// gathering is the end of a PeerConnection's candidates.
type gathering struct {
	done chan struct{}
	end  func() // closes done; later calls do nothing
}

func newGathering() gathering {
	done := make(chan struct{})
	return gathering{done: done, end: sync.OnceFunc(func() { close(done) })}
}

// wait waits for the end of candidates, at most d; ctx's error if it ends
// first.
func (g gathering) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.done:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// adopt hands the PeerConnection to t, with the candidates gathered so
// far.
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
	if err := e.pc.Close(); err != nil && !errors.Is(err, webrtc.ErrConnectionClosed) {
		e.log.Debug("p2p: webrtc: closing an unused early offer", "err", err)
	}
}

// watch detaches dc when it opens and starts reading it. Only the first
// channel is used.
func (t *rtcTransport) watch(dc *webrtc.DataChannel) {
	dc.OnOpen(func() {
		rw, err := detach(dc)
		if err != nil {
			t.down(fmt.Errorf("p2p: webrtc: detach: %w", err))
			return
		}
		t.mu.Lock()
		if t.closed || t.dc != nil {
			t.mu.Unlock()
			_ = rw.Close()
			return
		}
		t.dc = dc
		t.raw.Store(&rawChannel{rw: rw, dc: dc})
		t.wg.Add(1)
		t.mu.Unlock()
		go t.readLoop(rw)
		t.h.onUp(TransportWebRTC)
	})
}

func (t *rtcTransport) kind() TransportKind { return TransportWebRTC }

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

func (t *rtcTransport) sendCandidate(c webrtc.ICECandidateInit) {
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	if err := t.sig.sendCandidate(ctx, c); err != nil && t.ctx.Err() == nil {
		t.log.Debug("p2p: webrtc: sending candidate failed", "err", err)
	}
}

// withCandidates waits for the end of candidates, at most descGatherWait,
// and returns the local description with the candidates gathered by
// then: the peer can check them as soon as it applies it, without a
// signaling message per candidate (the rest are trickled). sdp is the
// description set, returned if there is no wait.
func (t *rtcTransport) withCandidates(sdp string) string {
	if descGatherWait <= 0 {
		return sdp
	}
	_ = t.gather.wait(t.ctx, descGatherWait) // closing: the description as it is
	if ld := t.pc.LocalDescription(); ld != nil {
		return ld.SDP
	}
	return sdp
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
		if !sdpHasCandidate(sdp, c) {
			t.sendCandidate(c)
		}
	}
}

// sdpHasCandidate reports whether sdp carries candidate c (never the end
// of candidates, which is trickled).
func sdpHasCandidate(sdp string, c webrtc.ICECandidateInit) bool {
	return c.Candidate != "" && strings.Contains(sdp, "a="+c.Candidate+"\r\n")
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
	offer, err := t.pc.CreateOffer(nil)
	if err != nil {
		return fmt.Errorf("p2p: webrtc: create offer: %w", err)
	}
	if err := t.pc.SetLocalDescription(offer); err != nil {
		return fmt.Errorf("p2p: webrtc: set local offer: %w", err)
	}
	sdp := localSDP(t.withCandidates(offer.SDP), t.id)
	t.log.Debug("p2p: webrtc: sending the offer")
	if err := t.sig.sendOffer(ctx, sdp); err != nil {
		return fmt.Errorf("p2p: webrtc: send offer: %w", err)
	}
	t.sentDesc(sdp)
	return nil
}

// handleOffer applies the peer's offer and sends the answer (answerer only).
func (t *rtcTransport) handleOffer(ctx context.Context, sdp string) error {
	t.log.Debug("p2p: webrtc: offer received")
	if t.role != signaling.RoleAnswerer {
		return fmt.Errorf("p2p: webrtc: unexpected offer for the %s", t.role)
	}
	if err := t.setRemote(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: sdp}); err != nil {
		return err
	}
	t.mu.Lock()
	t.remoteSession = sdpSessionID(sdp)
	t.mu.Unlock()
	answer, err := t.pc.CreateAnswer(nil)
	if err != nil {
		return fmt.Errorf("p2p: webrtc: create answer: %w", err)
	}
	if err := t.pc.SetLocalDescription(answer); err != nil {
		return fmt.Errorf("p2p: webrtc: set local answer: %w", err)
	}
	ans := localSDP(t.withCandidates(answer.SDP), t.id)
	t.log.Debug("p2p: webrtc: sending the answer")
	if err := t.sig.sendAnswer(ctx, ans); err != nil {
		return fmt.Errorf("p2p: webrtc: send answer: %w", err)
	}
	t.sentDesc(ans)
	return nil
}

// handleAnswer applies the peer's answer (offerer only).
func (t *rtcTransport) handleAnswer(sdp string) error {
	if t.role != signaling.RoleOfferer {
		return fmt.Errorf("p2p: webrtc: unexpected answer for the %s", t.role)
	}
	return t.setRemote(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: sdp})
}

func (t *rtcTransport) setRemote(d webrtc.SessionDescription) error {
	if err := t.pc.SetRemoteDescription(d); err != nil {
		return fmt.Errorf("p2p: webrtc: set remote %s: %w", d.Type, err)
	}
	t.remoteDone.Store(true)
	t.mu.Lock()
	t.remoteSet = true
	pend := t.pendingCands
	t.pendingCands = nil
	t.mu.Unlock()
	for _, c := range pend {
		if err := t.pc.AddICECandidate(c); err != nil {
			t.log.Debug("p2p: webrtc: bad remote candidate", "candidate", c.Candidate, "err", err)
		}
	}
	return nil
}

// handleCandidate adds a trickled remote candidate, queueing it until the
// remote description is set. A malformed candidate is logged and ignored:
// it cannot hurt the other candidates.
func (t *rtcTransport) handleCandidate(c webrtc.ICECandidateInit) {
	t.mu.Lock()
	if !t.remoteSet {
		if len(t.pendingCands) < 256 {
			t.pendingCands = append(t.pendingCands, c)
		}
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	if err := t.pc.AddICECandidate(c); err != nil {
		t.log.Debug("p2p: webrtc: bad remote candidate", "candidate", c.Candidate, "err", err)
	}
}

func (t *rtcTransport) readLoop(rw datachannel.ReadWriteCloser) {
	defer t.wg.Done()
	buf := make([]byte, t.cfg.MaxMessageSize+wire.HeaderLen)
	var discard []byte
	for {
		n, isString, err := rw.ReadDataChannel(buf)
		if errors.Is(err, io.ErrShortBuffer) {
			// Larger than any valid message. pion keeps a message that
			// does not fit at the head of the queue (every read would
			// fail again), so read it into a buffer that holds anything
			// the SCTP receive window can, and drop it.
			if discard == nil {
				discard = make([]byte, sctpReceiveBuffer)
			}
			_, _, err = rw.ReadDataChannel(discard)
			if err != nil {
				t.down(fmt.Errorf("p2p: webrtc: read: oversized message: %w", err))
				_ = rw.Close()
				return
			}
			t.h.onMalformed(TransportWebRTC)
			continue
		}
		if err != nil {
			t.down(fmt.Errorf("p2p: webrtc: read: %w", err))
			return
		}
		if isString {
			t.h.onMalformed(TransportWebRTC)
			continue
		}
		t.h.onMessage(TransportWebRTC, buf[:n])
	}
}

// send writes one message. It never blocks: when more than SendBuffer bytes
// are queued in SCTP (the path is congested or dead), it drops the message
// and returns errTransportBusy.
func (t *rtcTransport) send(p []byte) error {
	r := t.raw.Load()
	if r == nil {
		return errTransportDown
	}
	if r.dc.BufferedAmount() > uint64(t.cfg.SendBuffer) {
		return errTransportBusy
	}
	_, err := r.rw.Write(p)
	return err
}

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

// close closes the PeerConnection and waits for the read loop.
func (t *rtcTransport) close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	var err error
	if r := t.raw.Load(); r != nil {
		err = r.rw.Close()
	}
	if cerr := t.pc.Close(); cerr != nil && err == nil && !errors.Is(cerr, webrtc.ErrConnectionClosed) {
		err = cerr
	}
	t.wg.Wait()
	return err
}

func (t *rtcTransport) sendData(p []byte) error { return t.send(p) }
