package p2p

import (
	"errors"
	"fmt"
	"time"

	"github.com/ragsync/ragsync/p2p/internal/wire"
)

// The session's loop: one goroutine (loop) runs the timers every
// tickInterval under Session.mu: the connecting phases (the links open or
// time out, the probes, the initial choice), then liveness, the policy's
// decisions, pings, and at the end the teardown.

// phase of the session's lifecycle.
type phase uint8

const (
	phaseLinks   phase = iota // waiting for the transports to open or time out
	phaseProbe                // 3 probes on each open transport
	phaseAwait                // answerer: probes done, waiting for the offerer's select
	phaseRunning              // transport chosen
	phaseEnded
)

// becomeRunning ends the connecting phase. Called with mu held.
func (s *Session) becomeRunning(now time.Duration) {
	s.phase = phaseRunning
	s.state = StateConnected
	s.live.readyAt = now
	s.live.lastRecv = now
	for i := range s.links {
		s.links[i].probe.running = false
	}
	s.log.Debug("p2p: session running", "transport", TransportKind(s.active.Load()).String(), "reason", s.choiceReason)
	s.life.settle(nil)
}

// failConnect ends the connecting phase with an error. Called with mu held.
func (s *Session) failConnect(err error) { s.endLocked(err, "", 0) }

// endLocked ends the session (once). Called with mu held.
func (s *Session) endLocked(err error, reason string, silence time.Duration) {
	if s.phase == phaseEnded {
		return
	}
	wasRunning := s.phase == phaseRunning
	s.phase = phaseEnded
	s.life.end(err) // still connecting: Connect fails with err
	if errors.Is(err, ErrClosed) {
		s.state = StateClosed
	} else {
		s.state = StateDisconnected
		if wasRunning {
			s.emit(Event{Kind: EventDisconnected, Reason: reason, Silence: silence, Err: err})
		}
	}
}

// loop runs the session's timers until it ends, then tears it down.
func (s *Session) loop() {
	defer s.life.wg.Done()
	t := time.NewTicker(tickInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.life.closing:
			s.mu.Lock()
			s.endLocked(ErrClosed, "", 0)
			s.mu.Unlock()
		case <-s.life.ctx.Done():
		}
		s.pollAddrs(s.now())
		s.mu.Lock()
		if s.phase == phaseEnded {
			s.mu.Unlock()
			s.teardown()
			return
		}
		s.tick(s.now())
		s.mu.Unlock()
	}
}

// tick does one round of housekeeping. Called with mu held.
func (s *Session) tick(now time.Duration) {
	// A gap between two runs of the loop much longer than its period is a
	// stall of this process: what it did not hear meanwhile is no
	// evidence against a path (see the policies).
	if from, ok := s.live.loopRan(now); ok {
		s.pol.paths().stalled(from, now)
		s.log.Debug("p2p: local stall", "for", now-from)
	}
	s.pol.paths().loopLate(now, s.live.late)
	s.data.tick(now)
	for i := range s.links {
		ls := &s.links[i]
		// Once the session runs, a WebRTC that is still connecting keeps
		// trying; the offerer renews it if it takes too long (see
		// maybeRenewRTC).
		if ls.state == LinkConnecting && now >= s.links[i].deadline && !(i == 0 && s.phase == phaseRunning) &&
			!(i == 0 && s.rtcProgressing(now)) {
			ls.state = LinkDown
			ls.err = fmt.Sprintf("did not connect within %v", s.links[i].deadline-s.start)
			if i == 0 {
				ls.err = fmt.Sprintf("data channel did not open within %v", s.cfg.WebRTCTimeout)
			}
		}
		// A probe unanswered past its grace breaks the path's streak.
		if e := s.pol.paths().path(ls.kind); e.streak > 0 {
			if _, ok := s.pol.paths().onset(now, e); ok {
				e.streak = 0
			}
		}
	}
	// A peer that left the signaling server for good before the session
	// ran gave up connecting (its Connect failed, or it closed): nobody
	// is coming; say so rather than wait out the timeouts.
	if s.phase != phaseRunning && s.live.goodbye != "" && s.live.goodbye != "dropped" {
		s.failConnect(fmt.Errorf("%w: the peer gave up before the match started (it %s the signaling server)", ErrDisconnected, s.live.goodbye))
		return
	}
	switch s.phase {
	case phaseLinks:
		s.tickLinks(now)
	case phaseProbe, phaseAwait:
		s.tickProbe(now)
	case phaseRunning:
		s.tickRunning(now)
	}
}

// rtcProgress is the furthest step a connecting WebRTC transport has
// made, and when the session saw it.
type rtcProgress struct {
	t     *rtcTransport
	steps int // rtcTransport.steps
	at    time.Duration
}

// rtcProgressing reports whether the connecting WebRTC transport made a
// step (its remote description applied, then a candidate pair selected)
// within Config.WebRTCTimeout: its data channel's open deadline is then
// pushed back. On a long, lossy link the answer alone can take seconds
// through the signaling server, and DTLS and SCTP each a few more
// retransmissions; a PeerConnection that is getting there is worth more
// than a new one, which starts over (renegotiation through the same
// lossy signaling, ICE, DTLS, SCTP: 8 s and more at 30 % loss). A link
// that makes no step fails at the deadline as before. Called with mu
// held, from every tick.
func (s *Session) rtcProgressing(now time.Duration) bool {
	t := s.tr.rtc.Load()
	if t == nil {
		return false
	}
	if steps := t.steps(); t != s.rtcSeen.t || steps > s.rtcSeen.steps {
		s.rtcSeen = rtcProgress{t: t, steps: steps, at: now}
	}
	return s.rtcSeen.steps > 0 && now-s.rtcSeen.at < s.cfg.WebRTCTimeout
}

// steps returns how far the connection got before its data channel
// opens: 0, 1 once the remote description is applied, 2 once a
// candidate pair is selected (natively when ICE connects; in a browser
// when the connection, DTLS included, is up).
func (t *rtcTransport) steps() int {
	switch {
	case t.localCand.Load() != uint32(CandidateUnknown):
		return 2
	case t.remoteDone.Load():
		return 1
	}
	return 0
}

func (s *Session) tickLinks(now time.Duration) {
	resolved := true
	anyUp := false
	for i := range s.links {
		st := s.links[i].state
		if st == LinkConnecting {
			resolved = false
		}
		if st == LinkUp {
			anyUp = true
		}
	}
	// With a preferred transport that is already up there is no need to
	// wait for the other one. The offerer does not wait for the relay once
	// WebRTC is open either (unless TCP is preferred): it starts on
	// WebRTC once its channel is open (see earlyChoice) and judges the
	// relay in the background once it opens.
	if p := s.cfg.Prefer; p != TransportUnknown && s.links[p.idx()].up() {
		resolved = true
	}
	if s.pol.startsEarly(&s.links) {
		resolved = true
	}
	// With one transport open, the other has until a fifth of its own
	// timeout after the pairing (1 s for WebRTC by default): on a long,
	// lossy link the session starts on the open one rather than wait for
	// the other's retransmissions, and moves to the other when it opens
	// and pings as well (see decide); a transport that opens later than
	// that (a browser's relay, whose TLS waits, see relayTLSDefer) is used
	// at once. On a LAN both open within milliseconds.
	for i := range s.links {
		o := &s.links[1-i]
		if s.links[i].up() && o.state == LinkConnecting {
			timeout := s.links[1-i].deadline - s.start
			if now-s.start >= timeout/5 {
				resolved = true
			}
		}
	}
	if !resolved {
		if s.pol.overdue(now) {
			s.failConnect(s.noTransportErr("the offerer did not choose a transport in time"))
		}
		return
	}
	if !anyUp {
		// Each transport failed to open within its timeout, but a relay
		// is dialled again and a data channel may still open: on a lossy
		// link, wait until giveUpAt.
		if now < s.giveUpAt {
			return
		}
		s.failConnect(s.noTransportErr(""))
		return
	}
	s.phase = phaseProbe
	for i := range s.links {
		if s.links[i].up() {
			s.links[i].probe.running = true
		}
	}
	s.tickProbe(now)
}

func (s *Session) noTransportErr(why string) error {
	msg := ErrNoTransport.Error()
	if why != "" {
		msg += ": " + why
	}
	for i := range s.links {
		ls := &s.links[i]
		msg += fmt.Sprintf("; %v: %v", ls.kind, ls.state)
		if ls.err != "" {
			msg += " (" + ls.err + ")"
		}
	}
	return fmt.Errorf("%w%s", ErrNoTransport, msg[len(ErrNoTransport.Error()):])
}

// tickProbe sends the three sequential probes on each open link and, on
// the offerer, chooses once every probe is answered or lost.
func (s *Session) tickProbe(now time.Duration) {
	done := true
	for i := range s.links {
		ls := &s.links[i]
		pr := &ls.probe
		// The offerer started probing WebRTC before the relay opened (see
		// tickLinks): a relay that opens before the choice is probed too.
		if s.pol.probesLate(ls.kind) && !pr.running && pr.n == 0 && ls.up() {
			pr.running = true
		}
		if !pr.running {
			continue
		}
		if !ls.up() {
			pr.running = false
			continue
		}
		// A round after one that lost every probe waits longer for each
		// relay probe (2×, then 4× ProbeTimeout): on a lossy link the
		// relay's probes are late, not lost (TCP retransmits them, its
		// timer doubling). A WebRTC probe is never retransmitted (the
		// channel is unreliable): one unanswered for ProbeTimeout is
		// lost, and the next one is the better bet.
		timeout := s.cfg.ProbeTimeout
		if ls.kind == TransportTCP {
			timeout <<= min(s.probeRetries, 2)
		}
		if pr.outstanding && now-pr.sentAt > timeout {
			pr.res[pr.n] = 0
			pr.lost++
			pr.n++
			pr.outstanding = false
		}
		if pr.n == 3 {
			pr.running = false
			pr.max = 0
			for _, r := range pr.res {
				if r == 0 {
					r = s.cfg.ProbeTimeout
				}
				pr.max = max(pr.max, r)
			}
			continue
		}
		done = false
		if !pr.outstanding {
			pr.outstanding = true
			pr.sentAt = now
			pr.t1 = s.sendPing(ls.kind, now)
			pr.sent[pr.n] = pr.t1
			ls.sentProbe(pr.t1)
		}
	}
	s.calibrateEarly(now)
	o := s.pol.afterProbes(now, &s.links, done)
	switch {
	case o.fail != "":
		s.failConnect(s.noTransportErr(o.fail))
	case o.retry:
		s.probeRetries++
		s.log.Info("p2p: every probe was lost; probing again", "round", s.probeRetries+1)
		for i := range s.links {
			ls := &s.links[i]
			if ls.up() {
				ls.probe = probeRound{running: true}
			}
		}
	case o.await:
		s.phase = phaseAwait
	case o.k != TransportUnknown:
		s.choiceReason = o.reason
		s.decide(now, o.k, false)
		s.becomeRunning(now)
	}
}

// calibrateEarly: the answerer, whose game clock follows the offerer's
// (it plays once calibrated: Config.Clock's MinSamples round trips),
// pings at the calibrator's pace while it probes and waits for the
// offerer's choice, on WebRTC if its channel is open (the transport the
// offerer starts on when it answers), else on the relay: on a lossy link
// it is calibrated by the time the choice comes instead of a second or
// two after. (Its three probes alone give three samples at most.) Called
// with mu held.
func (s *Session) calibrateEarly(now time.Duration) {
	if s.pol.leader() || !s.calibrationDue(now) {
		return
	}
	for i := range s.links {
		if ls := &s.links[i]; ls.up() {
			s.sendPing(ls.kind, now)
			return
		}
	}
}

// followerSyncPing: until its clock is synced, the answerer (the clock
// follower) pings at least this often, faster than the calibrator's own
// pace (ClockSync.CalibrationInterval, 62.5 ms by default): it plays once
// it has MinSamples answered pings, and on a lossy link (half the round
// trips lost at 30 % loss each way) those took a second or more after
// the choice. A few dozen extra pings, once.
//
// On WebRTC, whose pings do not queue behind one another, it pings every
// followerSyncPingRTC (every tick) while fewer than followerSyncInFlight
// pings are unanswered: on the bad-link test (300 ms round trip, about
// half the round trips lost) the answerer played 0.6 to 0.9 s after the
// session ran, most of it waiting to send the next ping. The in-flight
// bound keeps the calibrator's ring of 64 outstanding pings from being
// overwritten on a long path (at 10 ms, a 640 ms round trip would). On
// the relay, a TCP stream, faster pings would only queue on a lossy link.
const (
	followerSyncPing     = 25 * time.Millisecond
	followerSyncPingRTC  = tickInterval
	followerSyncInFlight = 24
)

// calibrationDue reports whether a calibration ping is due: when the
// calibrator wants one, and on the follower until synced every
// followerSyncPing (or followerSyncPingRTC). Called with mu held.
func (s *Session) calibrationDue(now time.Duration) bool {
	if now >= s.ping.cal.NextPing() {
		return true
	}
	if s.pol.leader() || s.ping.cal.Synced() {
		return false
	}
	every := followerSyncPing
	if s.links[0].up() && (s.phase != phaseRunning || TransportKind(s.active.Load()) == TransportWebRTC) {
		if s.ping.cal.Unanswered() < followerSyncInFlight {
			every = followerSyncPingRTC
		}
	}
	return now-s.lastPingAt >= every
}

// decide makes k the active transport (again: a switch) and tells the
// peer, if this role does (see rolePolicy.choose). Called with mu held.
func (s *Session) decide(now time.Duration, k TransportKind, again bool) {
	s.active.Store(uint32(k))
	if c, ok := s.pol.choose(now, k, again); ok {
		s.sendControlLocked(c)
	}
}

// sendSelect repeats the offerer's select when due (or force) until the
// answerer acknowledges it. Called with mu held.
func (s *Session) sendSelect(now time.Duration, force bool) {
	if c, ok := s.pol.selectDue(now, force); ok {
		s.sendControlLocked(c)
	}
}

// sendPing sends a timestamped ping on link k and returns its t1.
// Called with mu held.
func (s *Session) sendPing(k TransportKind, now time.Duration) time.Duration {
	ls := &s.links[k.idx()]
	b, t1 := s.ping.ping(now)
	s.lastPingAt = now
	ls.pings++
	s.pol.paths().path(k).probeSent(t1)
	s.xmit(k, b)
	return t1
}

func (s *Session) tickRunning(now time.Duration) {
	// Liveness over all transports. Time this process stood still is not
	// the peer's silence.
	silence := s.live.silence(now, &s.pol.paths().stall)
	switch {
	case s.live.silentTooLong(silence, s.cfg.DisconnectAfter, now):
		s.endLocked(fmt.Errorf("%w: nothing received for %v", ErrDisconnected, silence.Round(time.Millisecond)),
			"timeout", silence)
		return
	case silence >= s.cfg.InterruptAfter && s.state == StateConnected:
		s.state = StateInterrupted
		s.live.silentSince = s.live.lastRecv
		s.emit(Event{Kind: EventInterrupted, Silence: silence})
	}

	// A fast goodbye: the signaling server said the peer left (closed,
	// left, or its connection dropped) and nothing has come from it for
	// goodbyeSilence: it is gone, no need to wait for DisconnectAfter.
	if s.live.goodbye == "dropped" && silence >= goodbyeSilence {
		// Its connection dropped without a goodbye (a crash, a reload):
		// the server keeps its seat, and it may come back (see Resuming a
		// match).
		s.endLocked(fmt.Errorf("%w: %w: silent for %v", ErrDisconnected, ErrPeerAway, silence.Round(time.Millisecond)),
			"the peer dropped; it may come back", silence)
		return
	}
	if s.live.goodbye != "" && silence >= goodbyeSilence {
		s.endLocked(fmt.Errorf("%w: the peer left the signaling server (%s) and has been silent for %v",
			ErrDisconnected, s.live.goodbye, silence.Round(time.Millisecond)), "the peer left: "+s.live.goodbye, silence)
		return
	}
	s.pol.paths().observe(now)
	s.maybeRenewRTC(now)
	if k, why := s.pol.decide(now); k != TransportUnknown {
		s.switchTo(now, k, why)
	}
	s.sendSelect(now, false)
	// Pings: the active transport when the calibrator wants one but at
	// least every PingInterval; the standby as the policy says.
	calDue := s.calibrationDue(now)
	for i := range s.links {
		ls := &s.links[i]
		if ls.up() && s.pol.paths().probeDue(now, ls.kind, calDue) {
			s.sendPing(ls.kind, now)
		}
	}
}

func (s *Session) switchTo(now time.Duration, k TransportKind, reason string) {
	from := TransportKind(s.active.Load())
	s.switches++
	s.choiceReason = reason
	s.decide(now, k, true)
	s.log.Info("p2p: transport changed", "from", from.String(), "to", k.String(), "reason", reason)
	s.emit(Event{Kind: EventTransportChanged, From: from, Transport: k, Reason: reason})
}

// teardown closes everything once the loop has seen the session end.
func (s *Session) teardown() {
	s.mu.Lock()
	closedByUs := errors.Is(s.life.endErr, ErrClosed)
	if closedByUs {
		s.sendControlLocked(wire.Control{Kind: wire.CtrlBye, Reason: wire.ByeClosed})
	}
	s.mu.Unlock()
	if closedByUs {
		s.tr.flush(100 * time.Millisecond)
	}
	s.tr.setOpen(TransportWebRTC, nil)
	s.tr.setOpen(TransportTCP, nil)
	s.mu.Lock()
	rtc := s.tr.rtc.Swap(nil)
	s.mu.Unlock()
	s.tr.closeBoth(rtc)
	if s.sig.closeSig != nil {
		s.sig.closeSig()
	}
	// Nothing emits once the session has ended (the handlers check the
	// phase), so the channel can be closed.
	s.ev.close()
	close(s.life.done)
}
