package p2p

import (
	"errors"
	"fmt"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/clockwire"
	"github.com/ragsync/ragsync/p2p/internal/stats"
	"github.com/ragsync/ragsync/p2p/internal/wire"
)

// linkState is the session's bookkeeping for one transport (under mu).
type linkState struct {
	kind     TransportKind
	state    LinkState
	deadline time.Duration // to open, while connecting
	err      string
	// peerDisabled: the peer does not have this transport.
	peerDisabled bool
	upAt         time.Duration
	hadRecv      bool

	lastRecv time.Duration

	rtt     clocksync.RTTEstimator
	jin     stats.Jitter // peer → us, from t4 − t3
	jout    stats.Jitter // us → peer, from t2 − t1
	pings   uint64
	pongs   uint64
	rx, rxB uint64

	// Initial probing.
	probe probeRound
	// probed are the t1s of the link's last probes, of every round, and
	// late the round trip of the last answer to one of an earlier round
	// (0: none): on a lossy relay a round's three probes may all be
	// answered after the round ended, which still shows the path works.
	probed  [9]time.Duration
	nProbed int
	late    time.Duration
}

// sentProbe records a probe's t1 (see linkState.probed).
func (l *linkState) sentProbe(t1 time.Duration) {
	l.probed[l.nProbed%len(l.probed)] = t1
	l.nProbed++
}

// lateProbe reports whether t1 is one of the link's recent probes, and
// then records its round trip as a late answer.
func (l *linkState) lateProbe(t1, rtt time.Duration) bool {
	for _, p := range l.probed[:min(l.nProbed, len(l.probed))] {
		if p == t1 {
			l.late = rtt
			return true
		}
	}
	return false
}

// probeRound is one round of three sequential probes on a link.
type probeRound struct {
	running     bool
	n           int
	res         [3]time.Duration // 0 = lost
	lost        int
	outstanding bool
	t1          time.Duration
	sent        [3]time.Duration // each probe's t1, to know its late answer
	sentAt      time.Duration
	max         time.Duration
}

// lateAnswer records the answer to a probe of the round that was counted
// lost (its ProbeTimeout passed): on the relay a probe is late, not lost,
// when TCP retransmits it on a lossy link, and its answer shows the path
// works. It reports whether t1 was such a probe's.
func (pr *probeRound) lateAnswer(t1, rtt time.Duration) bool {
	for i := range pr.n {
		if pr.res[i] == 0 && pr.sent[i] == t1 {
			pr.res[i] = rtt
			pr.lost--
			if !pr.running {
				pr.max = max(pr.max, rtt)
			}
			return true
		}
	}
	return false
}

func (l *linkState) up() bool { return l.state == LinkUp }

// The session is its transports' linkHandler: what they read comes in
// here, on their reader goroutines. The handlers take Session.mu for the
// bookkeeping and send replies (pongs) after releasing it.

func (s *Session) onUp(k TransportKind) {
	l := s.tr.current(k)
	now := s.now()
	s.mu.Lock()
	ls := &s.links[k.idx()]
	if s.phase == phaseEnded || ls.state == LinkDisabled || ls.peerDisabled {
		s.mu.Unlock()
		return
	}
	ls.state = LinkUp
	ls.err = ""
	ls.upAt = now
	if ls.kind == TransportWebRTC || !ls.hadRecv {
		// A path that comes back starts its round-trip figures afresh.
		ls.rtt = clocksync.RTTEstimator{}
	}
	s.pol.paths().path(k).setUp(now, true)
	if k == TransportWebRTC {
		s.networkChanged("the webrtc path opened")
	}
	running := s.phase == phaseRunning
	s.tr.setOpen(k, l)
	// Tell the peer which transports we have, so that it does not wait for
	// one we disabled.
	b := s.ping.control(wire.Control{Kind: wire.CtrlHello, Enabled: s.tr.enabled})
	s.xmit(k, b)
	if s.phase == phaseLinks {
		s.tickLinks(now) // start probing at once if this was the last one
	}
	s.mu.Unlock()
	s.log.Debug("p2p: transport up", "transport", k.String())
	if running {
		s.emit(Event{Kind: EventTransportUp, Transport: k})
	}
}

func (s *Session) onDown(k TransportKind, err error) {
	s.mu.Lock()
	ls := &s.links[k.idx()]
	if errors.Is(err, errRelayRejected) {
		s.tr.rejected.Add(1)
	}
	if s.phase == phaseEnded || ls.state == LinkDisabled {
		s.mu.Unlock()
		return
	}
	if ls.state == LinkDown {
		ls.err = err.Error() // the latest reason
		s.mu.Unlock()
		return
	}
	wasUp := ls.state == LinkUp
	ls.state = LinkDown
	ls.err = err.Error()
	running := s.phase == phaseRunning && wasUp
	s.pol.paths().path(k).setUp(s.now(), false)
	s.tr.setOpen(k, nil)
	s.mu.Unlock()
	s.log.Debug("p2p: transport down", "transport", k.String(), "err", err)
	if running {
		s.emit(Event{Kind: EventTransportDown, Transport: k, Err: err})
	}
}

func (s *Session) onMalformed(TransportKind) {
	s.mu.Lock()
	s.ping.malformed++
	s.mu.Unlock()
}

func (s *Session) onMessage(k TransportKind, p []byte) {
	now := s.now()
	h, payload, err := wire.ParseHeader(p)
	if err != nil {
		s.mu.Lock()
		s.ping.malformed++
		s.mu.Unlock()
		return
	}
	switch h.Type {
	case wire.MsgData:
		if len(payload) > s.cfg.MaxMessageSize {
			s.mu.Lock()
			s.ping.malformed++
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.received(k, now, len(p))
		s.mu.Unlock()
		s.data.deliver(h.Seq, payload)
	case wire.MsgPing:
		// Answer at once, on the link it came in on. The calibrator stamps
		// t2 and t3.
		s.mu.Lock()
		buf, err := s.ping.pong(k, payload)
		if err != nil {
			s.badClockMsg(err)
			s.mu.Unlock()
			return
		}
		s.received(k, now, len(p))
		s.mu.Unlock()
		s.xmit(k, buf)
	case wire.MsgPong:
		pg, err := clockwire.ParsePong(payload)
		s.mu.Lock()
		var smp clocksync.Sample
		if err == nil {
			smp, err = s.ping.cal.HandlePong(payload)
		}
		if err != nil {
			s.badClockMsg(err)
		} else {
			s.received(k, now, len(p))
			s.pong(k, pg, smp)
		}
		s.mu.Unlock()
	case wire.MsgControl:
		c, err := wire.ParseControl(payload)
		s.mu.Lock()
		if err != nil {
			s.ping.malformed++
			s.mu.Unlock()
			return
		}
		s.received(k, now, len(p))
		s.control(k, now, c)
		s.mu.Unlock()
	}
}

// received updates liveness and counters for one valid message. Called
// with mu held.
func (s *Session) received(k TransportKind, now time.Duration, n int) {
	ls := &s.links[k.idx()]
	ls.lastRecv = now
	ls.hadRecv = true
	ls.rx++
	ls.rxB += uint64(n)
	s.data.received(n)
	s.live.lastRecv = now
	if s.state == StateInterrupted {
		s.state = StateConnected
		silence := now - s.live.silentSince
		s.emit(Event{Kind: EventResumed, Silence: silence})
	}
}

// pong processes an answered ping: the pong's timestamps and the sample
// the calibrator made of them (its round trip, its t4 in At). Called with
// mu held.
func (s *Session) pong(k TransportKind, pg clockwire.Pong, smp clocksync.Sample) {
	t4, rtt := smp.At, smp.Delay
	ls := &s.links[k.idx()]
	ls.pongs++
	// A round trip that spans a stall of this process, or an outage, is
	// left out of the round-trip figures (see pathPolicy.answered).
	if s.pol.paths().answered(k, t4, pg.T1, rtt) {
		ls.rtt.Add(t4, rtt)
		s.pol.paths().setRTT(k, ls.rtt.Stats(t4).Smoothed)
	}
	ls.jout.Add(pg.T2 - pg.T1)
	ls.jin.Add(t4 - pg.T3)
	pr := &ls.probe
	answered := pr.running && pr.outstanding && pr.t1 == pg.T1
	if answered {
		pr.res[pr.n] = rtt
		pr.n++
		pr.outstanding = false
	}
	// Probe again (or decide) now rather than at the next tick: the three
	// probes are back-to-back round trips.
	if (answered || pr.lateAnswer(pg.T1, rtt) || ls.lateProbe(pg.T1, rtt)) && (s.phase == phaseProbe || s.phase == phaseAwait) {
		s.tickProbe(t4)
	}
}

// control handles a control message. Called with mu held.
func (s *Session) control(k TransportKind, now time.Duration, c wire.Control) {
	if s.phase == phaseEnded {
		return
	}
	switch c.Kind {
	case wire.CtrlSelect:
		tr := TransportKind(c.Transport)
		from := TransportKind(s.active.Load())
		adopt, ack, ok := s.pol.onSelect(now, c.Epoch, tr)
		if !ok {
			s.ping.malformed++
			return
		}
		if adopt {
			s.active.Store(uint32(tr))
			if s.phase != phaseRunning {
				s.choiceReason = fmt.Sprintf("chosen by the offerer: %v", tr)
				s.becomeRunning(now)
			} else if from != tr {
				s.switches++
				s.choiceReason = fmt.Sprintf("offerer switched to %v (epoch %d)", tr, c.Epoch)
				s.emit(Event{Kind: EventTransportChanged, From: from, Transport: tr, Reason: "chosen by the offerer"})
			}
		}
		// Acknowledge every select of the current epoch (also repeats: our
		// ack may have been lost).
		if ack {
			s.sendControlLocked(wire.Control{Kind: wire.CtrlSelectAck, Epoch: c.Epoch, Transport: c.Transport})
		}
	case wire.CtrlSelectAck:
		s.pol.onSelectAck(c.Epoch)
	case wire.CtrlBye:
		s.endLocked(fmt.Errorf("%w: the peer closed the session", ErrDisconnected), "the peer closed the session", 0)
	case wire.CtrlHello:
		for i := range s.links {
			ls := &s.links[i]
			if c.Enabled&(1<<i) == 0 && ls.state == LinkConnecting {
				ls.peerDisabled = true
				ls.state = LinkDown
				ls.err = "disabled by the peer"
				if ls.kind == TransportTCP && s.tr.cancelTCP != nil {
					s.tr.cancelTCP()
				}
			}
		}
		if s.phase == phaseLinks {
			s.tickLinks(now)
		}
		// The peer's hello shows its end of a transport is open: an
		// offerer that started before hearing anything from it (see
		// earlyChoice) repeats its select now rather than at the next
		// PingInterval, in case the first one arrived before the peer's
		// channel could take it.
		if s.phase == phaseRunning {
			s.sendSelect(now, true)
		}
	}
}

// badClockMsg counts a ping or pong the calibrator refused. Malformed ones
// count as Malformed; stale or unknown pongs (answers to pings that timed
// out, duplicates) only in the calibrator's Rejected counter. Called with
// mu held.
func (s *Session) badClockMsg(err error) {
	s.log.Debug("p2p: clock message refused", "err", err)
	if s.ping.refused(err) {
		s.log.Warn("p2p: the peer breaks the clock protocol; its pongs are refused", "err", err, "role", s.role.String())
	}
}

// sendControlLocked sends c on every open link (through the loop buffer).
// Called with mu held; transports' sends do not block.
func (s *Session) sendControlLocked(c wire.Control) {
	b := s.ping.control(c)
	for i := range s.links {
		if s.links[i].up() {
			s.xmit(s.links[i].kind, b)
		}
	}
}

// xmit sends a non-data message on link k, counting it.
func (s *Session) xmit(k TransportKind, p []byte) {
	if l := s.tr.get(k); l != nil {
		s.data.sendOther(l, p)
	}
}
