package p2p

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragsync/ragsync/signaling"
)

// sigPump is the session's signaling side: this session's identity and
// the peer's pinned certificate fingerprint, the signaling connection
// that carries WebRTC negotiation for the whole match (offers, answers,
// candidates, and new PeerConnections when the WebRTC path fails: the
// renegotiation), and its re-establishment when it drops (the rejoin).
// The pump goroutine (pumpSignaling) feeds the peer's messages to the
// session's handlers below.
type sigPump struct {
	sig      signaler // nil without signaling (tests)
	closeSig func()   // closes the signaling connection
	id       *identity

	mu     sync.Mutex    // guards peerFP; a leaf
	peerFP []byte        // the peer's pinned fingerprint
	pinned chan struct{} // closed once peerFP is set

	rejoined atomic.Int64 // times the signaling connection was re-established

	// The offerer's WebRTC renegotiation, under Session.mu.
	renewing  bool          // a new PeerConnection is being made
	attemptAt time.Duration // when the last one was
	renewals  uint64        // new PeerConnections negotiated after the first
	backoff   renewBackoff  // the wait before the next one
	lastWait  time.Duration // the wait after the last one, which checks that long (the next waits for it)

	// localAddrs lists this machine's addresses (net.InterfaceAddrs; nil:
	// not watched); addrs is the last list seen, addrsAt when (the loop's
	// own, without mu). A change is a sign that the network changed (see
	// renewBackoff).
	localAddrs func() ([]net.Addr, error)
	addrs      string
	addrsAt    time.Duration
}

// fingerprint returns the peer's pinned fingerprint (nil until pinned).
func (g *sigPump) fingerprint() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peerFP
}

// pin sets the peer's certificate fingerprint, the first time; it reports
// whether fp is the pinned one.
func (g *sigPump) pin(fp []byte) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.peerFP == nil {
		g.peerFP = bytes.Clone(fp)
		close(g.pinned)
		return true
	}
	return bytes.Equal(g.peerFP, fp)
}

// peerSDP checks the fingerprint of an SDP from the peer and pins it. An
// SDP with another fingerprint than the pinned one is refused: the peer
// keeps its certificate for the whole session.
func (g *sigPump) peerSDP(sdp string) error {
	fp, err := sdpFingerprint(sdp)
	if err != nil {
		return err
	}
	if !g.pin(fp) {
		return fmt.Errorf("p2p: refusing an SDP whose fingerprint %s is not the peer's (%s)", fingerprintLine(fp), fingerprintLine(g.fingerprint()))
	}
	return nil
}

// handleOffer handles the offerer's SDP (answerer only).
func (s *Session) handleOffer(ctx context.Context, sdp string) error {
	if s.pol.leader() {
		return fmt.Errorf("p2p: unexpected offer for the %s", s.role)
	}
	if err := s.sig.peerSDP(sdp); err != nil {
		return err
	}
	rtc := s.tr.rtc.Load()
	if rtc == nil || isRelayOnlySDP(sdp) {
		if isRelayOnlySDP(sdp) {
			s.peerHasNoWebRTC()
		}
		if s.sig.sig == nil {
			return nil
		}
		return s.sig.sig.sendAnswer(ctx, relayOnlySDP(s.sig.id.fp))
	}
	if prev := rtc.remoteSessionID(); prev != "" && sdpSessionID(sdp) != prev {
		// The offerer made a new PeerConnection (its WebRTC path failed):
		// so do we.
		s.log.Info("p2p: webrtc: the peer renegotiates with a new PeerConnection")
		var err error
		// The offerer's wait before its next offer is at most
		// rtcRenewMax: check that long, or until that offer.
		if rtc, err = s.replaceRTC(errPeerRenegotiates, rtcRenewMax); err != nil {
			return err
		}
		s.mu.Lock()
		s.sig.renewals++
		s.mu.Unlock()
	}
	if err := rtc.handleOffer(ctx, sdp); err != nil {
		s.rtcDown(rtc, err)
		return err
	}
	return nil
}

// handleAnswer handles the answerer's SDP (offerer only).
func (s *Session) handleAnswer(sdp string) error {
	if !s.pol.leader() {
		return fmt.Errorf("p2p: unexpected answer for the %s", s.role)
	}
	if err := s.sig.peerSDP(sdp); err != nil {
		return err
	}
	if isRelayOnlySDP(sdp) {
		s.peerHasNoWebRTC()
		return nil
	}
	rtc := s.tr.rtc.Load()
	if rtc == nil {
		return nil
	}
	if err := rtc.handleAnswer(sdp); err != nil {
		s.rtcDown(rtc, err)
		return err
	}
	return nil
}

// handleCandidate adds a trickled remote candidate.
func (s *Session) handleCandidate(c iceCandidate) {
	if rtc := s.tr.rtc.Load(); rtc != nil {
		rtc.handleCandidate(c)
	}
}

// WebRTC recovery: errors that replace a PeerConnection.
var (
	errRenegotiating    = errors.New("p2p: webrtc: the path failed; negotiating a new PeerConnection")
	errPeerRenegotiates = errors.New("p2p: webrtc: the peer negotiates a new PeerConnection")
)

// rtcFailedFor is how long the WebRTC path must have failed (its pings
// unanswered) before the offerer negotiates a new PeerConnection, when
// the other path works, and rtcSilentFor when no path answers (the peer
// may be paused). rtcConnectFor is the safety net for a PeerConnection
// that neither connects nor fails: it is renewed that long after it was
// expected to fail. The wait between two new PeerConnections is the
// renewBackoff's.
const (
	rtcFailedFor  = 2 * time.Second
	rtcSilentFor  = 4 * time.Second
	rtcConnectFor = 10 * time.Second
)

// Renegotiation backoff (see renewBackoff).
const (
	rtcRenewMin = 5 * time.Second
	rtcRenewMax = 60 * time.Second
	// addrPollInterval is how often the local addresses are compared
	// with the last ones seen.
	addrPollInterval = 2 * time.Second
)

// renewBackoff is the wait between the offerer's new PeerConnections
// while WebRTC stays down (UDP blocked, say): rtcRenewMin (5 s), doubling
// with each one to rtcRenewMax (60 s), so a match without UDP makes 5
// offers in its first 2.5 minutes and then one a minute (and, where TURN
// is on, one TURN allocation each) instead of one every 5 s. It resets on
// any sign that the network changed: the WebRTC path opening, the
// signaling connection coming back, or a change of this machine's
// addresses (polled every addrPollInterval).
//
// Backing off does not make the recovery slower: each renewed
// PeerConnection keeps checking its candidate pairs for the whole wait
// (its ICE failed timeout and check count are stretched to it, see
// iceChecking), so at any moment of an outage one PeerConnection is
// checking, and when UDP comes back its next check (every 200 ms)
// finds the path, without a new offer. What it costs is 5 STUN binding
// requests a second per candidate pair, tiny next to an offer, its
// gathering and a TURN allocation.
type renewBackoff struct {
	wait time.Duration // zero: rtcRenewMin
}

// next returns the wait before the next new PeerConnection.
func (b *renewBackoff) next() time.Duration {
	if b.wait == 0 {
		return rtcRenewMin
	}
	return b.wait
}

// grow records a new PeerConnection: the wait after it doubles.
func (b *renewBackoff) grow() time.Duration {
	w := b.next()
	b.wait = min(2*w, rtcRenewMax)
	return w
}

// reset: the network changed; the next wait is rtcRenewMin again.
func (b *renewBackoff) reset() { b.wait = 0 }

// networkChanged resets the renegotiation backoff: a sign that the
// network changed (why) may have brought UDP back. Called with mu held.
func (s *Session) networkChanged(why string) {
	if s.sig.backoff.wait != 0 {
		s.log.Info("p2p: webrtc: renegotiation backoff reset", "why", why)
	}
	s.sig.backoff.reset()
	s.sig.lastWait = min(s.sig.lastWait, rtcRenewMin)
}

// pollAddrs compares this machine's addresses with the last ones seen,
// every addrPollInterval, and resets the renegotiation backoff when they
// changed. Called without mu (it lists the interfaces), by the loop.
func (s *Session) pollAddrs(now time.Duration) {
	if s.sig.localAddrs == nil || now-s.sig.addrsAt < addrPollInterval && s.sig.addrsAt != 0 {
		return
	}
	s.sig.addrsAt = now
	as, err := s.sig.localAddrs()
	if err != nil {
		return
	}
	list := make([]string, len(as))
	for i, a := range as {
		list[i] = a.String()
	}
	slices.Sort(list)
	cur := strings.Join(list, ",")
	if prev := s.sig.addrs; cur != prev {
		s.sig.addrs = cur
		if prev != "" {
			s.mu.Lock()
			s.networkChanged("local addresses changed: " + cur)
			s.mu.Unlock()
		}
	}
}

// newRTC makes a WebRTC transport (a PeerConnection) for this session, or
// one on the early offer's.
// checkFor, if not zero, is how long the new PeerConnection keeps checking
// its candidate pairs before it fails (see renewBackoff).
func (s *Session) newRTC(early *earlyOffer, checkFor time.Duration) (*rtcTransport, error) {
	h := &rtcHandler{s: s}
	t, err := newRTCTransportChecking(&s.cfg, s.role, s.sig.sig, h, s.sig.id, early, checkFor)
	if err != nil {
		return nil, err
	}
	h.t = t
	return t, nil
}

// rtcHandler passes a WebRTC transport's callbacks to the session, which
// ignores the opening and closing of a transport it has replaced.
type rtcHandler struct {
	s *Session
	t *rtcTransport
}

func (h *rtcHandler) onUp(k TransportKind) {
	if h.s.tr.rtc.Load() == h.t {
		h.s.onUp(k)
	}
}
func (h *rtcHandler) onDown(k TransportKind, err error)   { h.s.rtcDown(h.t, err) }
func (h *rtcHandler) onMessage(k TransportKind, p []byte) { h.s.onMessage(k, p) }
func (h *rtcHandler) onMalformed(k TransportKind)         { h.s.onMalformed(k) }

// rtcDown reports WebRTC down if t is the current transport.
func (s *Session) rtcDown(t *rtcTransport, err error) {
	if s.tr.rtc.Load() == t {
		s.onDown(TransportWebRTC, err)
	}
}

// replaceRTC closes the current PeerConnection (in the background) and
// makes a new one, which keeps checking for checkFor, reporting WebRTC
// down with why.
func (s *Session) replaceRTC(why error, checkFor time.Duration) (*rtcTransport, error) {
	if old := s.tr.rtc.Load(); old != nil {
		s.rtcDown(old, why)
	}
	t, err := s.newRTC(nil, checkFor)
	if err != nil {
		s.log.Warn("p2p: webrtc: new peer connection", "err", err)
		return nil, err
	}
	s.mu.Lock()
	if s.phase == phaseEnded {
		s.mu.Unlock()
		_ = t.close()
		return nil, ErrClosed
	}
	old := s.tr.rtc.Swap(t)
	s.tr.setOpen(TransportWebRTC, nil)
	s.mu.Unlock()
	if old != nil {
		s.life.wg.Add(1)
		go func() {
			defer s.life.wg.Done()
			_ = old.close()
		}()
	}
	return t, nil
}

// maybeRenewRTC is the offerer's WebRTC recovery: when the path has
// failed for long enough, or the PeerConnection closed or never
// connected, it negotiates a new PeerConnection over signaling (after
// the renewBackoff's wait since the last one, for as long as it takes).
// Called with mu held.
func (s *Session) maybeRenewRTC(now time.Duration) {
	ls := &s.links[0]
	if !s.pol.leader() || !s.tr.rtcOn || ls.peerDisabled || s.sig.renewing || now-s.sig.attemptAt < max(s.sig.lastWait, rtcRenewMin) && s.sig.renewals > 0 {
		return
	}
	why := ""
	switch ls.state {
	case LinkDown:
		why = "down: " + ls.err
	case LinkConnecting:
		// pion's ICE gives up on its own after iceDisconnected+iceFailed
		// (then the link is down); this is a safety net.
		if now-s.sig.attemptAt >= s.sig.lastWait+rtcConnectFor && now-s.start >= s.cfg.WebRTCTimeout && !s.rtcProgressing(now) {
			why = "did not connect"
		}
	case LinkUp:
		if failed, since, _ := s.pol.paths().failed(now, TransportWebRTC); failed {
			works := s.pol.paths().worksSince(TransportTCP, since)
			if works && now-since >= rtcFailedFor || now-since >= rtcSilentFor {
				why = fmt.Sprintf("pings unanswered for %v", (now - since).Round(time.Millisecond))
			}
		}
	}
	if why == "" {
		return
	}
	s.sig.renewing = true
	s.sig.attemptAt = now
	s.sig.renewals++
	checkFor := s.sig.backoff.grow()
	s.sig.lastWait = checkFor
	s.log.Info("p2p: webrtc: negotiating a new PeerConnection", "why", why, "checking_for", checkFor)
	s.life.wg.Add(1)
	go func() {
		defer s.life.wg.Done()
		defer func() {
			s.mu.Lock()
			s.sig.renewing = false
			s.mu.Unlock()
		}()
		t, err := s.replaceRTC(errRenegotiating, checkFor)
		if err != nil {
			return
		}
		s.mu.Lock()
		if ls.state == LinkDown {
			ls.state = LinkConnecting
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(s.life.ctx, signalTimeout)
		defer cancel()
		if err := t.start(ctx); err != nil {
			s.rtcDown(t, err)
		}
	}()
}

// peerHasNoWebRTC marks WebRTC down: the peer's SDP says it has none.
func (s *Session) peerHasNoWebRTC() {
	s.mu.Lock()
	ls := &s.links[0]
	ls.peerDisabled = true
	if ls.state == LinkConnecting {
		ls.state = LinkDown
		ls.err = "disabled by the peer"
	}
	if s.phase == phaseLinks {
		s.tickLinks(s.now())
	}
	s.mu.Unlock()
}

// peerLeftSignaling records that the signaling server said the peer left
// (reason: "left", "disconnected" or "dropped"). A peer that left and has
// fallen silent is gone (the session ends within goodbyeSilence); one
// whose signaling connection merely dropped keeps talking, and the
// session goes on.
func (s *Session) peerLeftSignaling(reason string) {
	s.mu.Lock()
	s.live.goodbye = reason
	s.mu.Unlock()
}

// peerBackOnSignaling records that the peer is back on the signaling
// server (paired again after a rejoin).
func (s *Session) peerBackOnSignaling() {
	s.mu.Lock()
	s.live.goodbye = ""
	s.mu.Unlock()
}

// setSignalingLost records that the signaling connection is down (lost)
// or back: while it is down a silent peer is waited for longer (see
// serverGrace), and for DisconnectAfter after it is back.
func (s *Session) setSignalingLost(lost bool) {
	s.mu.Lock()
	s.live.signaling(lost, s.now(), s.cfg.DisconnectAfter)
	s.mu.Unlock()
}

// Signaling reconnection backoff.
const (
	resignalMin = 200 * time.Millisecond
	resignalMax = 2 * time.Second
)

// pumpSignaling feeds the peer's negotiation messages to the session
// until it ends. When the signaling connection drops, it connects again
// and rejoins the pairing (with backoff) while the session goes on over
// its transports; it gives up only when the server says the pairing has
// ended.
func (s *Session) pumpSignaling(l *sigLink, early []signaling.Event) {
	defer s.life.wg.Done()
	cl := l.cl.Load()
	s.log.Debug("p2p: signaling pump started", "queued", len(early))
	for _, ev := range early {
		s.signalEvent(cl, ev)
	}
	for {
		ev, err := cl.Recv(s.life.ctx)
		if err != nil {
			if s.life.ctx.Err() != nil || errors.Is(err, signaling.ErrClosed) {
				return
			}
			s.log.Info("p2p: signaling connection lost; reconnecting, the session goes on", "err", err)
			s.setSignalingLost(true)
			if cl = s.resignal(l); cl == nil {
				return
			}
			s.setSignalingLost(false)
			continue
		}
		s.signalEvent(cl, ev)
	}
}

// resignal connects to the signaling server again and rejoins the
// pairing; nil when the session ended or the pairing has.
func (s *Session) resignal(l *sigLink) *signaling.Client {
	backoff := resignalMin
	for s.life.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(s.life.ctx, signalTimeout)
		cl, err := signaling.Dial(ctx, l.url, l.cfg)
		if err == nil {
			_, err = cl.Rejoin(ctx, l.token)
			if err != nil {
				cl.Close()
			}
		}
		cancel()
		if err == nil {
			if !l.swap(cl) {
				return nil
			}
			s.log.Info("p2p: signaling connection back")
			s.sig.rejoined.Add(1)
			s.mu.Lock()
			s.networkChanged("the signaling connection is back")
			s.mu.Unlock()
			return cl
		}
		var se *signaling.Error
		if errors.As(err, &se) && se.Code == signaling.ErrBadToken {
			s.log.Info("p2p: the pairing has ended on the signaling server; no more renegotiation", "err", err)
			return nil
		}
		s.log.Debug("p2p: signaling reconnect failed", "err", err, "retry_in", backoff)
		select {
		case <-s.life.ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, resignalMax)
	}
	return nil
}

func (s *Session) signalEvent(cl *signaling.Client, ev signaling.Event) {
	switch ev.Kind {
	case signaling.EventOffer:
		ctx, cancel := context.WithTimeout(s.life.ctx, signalTimeout)
		if err := s.handleOffer(ctx, ev.SDP); err != nil {
			s.log.Warn("p2p: the peer's offer", "err", err)
		}
		cancel()
	case signaling.EventAnswer:
		if err := s.handleAnswer(ev.SDP); err != nil {
			s.log.Warn("p2p: the peer's answer", "err", err)
		}
	case signaling.EventCandidate:
		c := ev.Candidate
		s.handleCandidate(iceCandidate{
			Candidate:        c.Candidate,
			SDPMid:           c.SDPMid,
			SDPMLineIndex:    c.SDPMLineIndex,
			UsernameFragment: c.UsernameFragment,
		})
	case signaling.EventPeerLeft:
		// The peer's signaling connection ended: it closed or left
		// ("disconnected", "left"), or its connection dropped ("dropped";
		// its place is kept for it to rejoin). Its transports may still
		// work: the session ends only if the peer also falls silent (see
		// goodbye). After a final leave, leave the room too, so the
		// server does not pair us with a stranger.
		s.log.Info("p2p: peer left the signaling server", "reason", ev.Reason)
		s.peerLeftSignaling(ev.Reason)
		if ev.Reason == "dropped" {
			return
		}
		s.life.wg.Add(1)
		go func() {
			defer s.life.wg.Done()
			ctx, cancel := context.WithTimeout(s.life.ctx, s.cfg.TCPTimeout)
			defer cancel()
			_ = cl.Leave(ctx)
		}()
	case signaling.EventPaired:
		if ev.Pairing.Room == signaling.RoomCode(s.room) && ev.Pairing.Role == s.role {
			// The pairing again, after a rejoin (ours or the peer's).
			s.log.Info("p2p: paired again on the signaling server")
			s.peerBackOnSignaling()
			return
		}
		// A new player in our room after the peer left: not ours.
		s.log.Info("p2p: ignoring a new pairing during the session")
		s.life.wg.Add(1)
		go func() {
			defer s.life.wg.Done()
			ctx, cancel := context.WithTimeout(s.life.ctx, s.cfg.TCPTimeout)
			defer cancel()
			_ = cl.Leave(ctx)
		}()
	case signaling.EventError:
		s.log.Debug("p2p: signaling error", "err", ev.Err)
	}
}
