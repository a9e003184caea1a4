package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/clockwire"
	"github.com/ragsync/ragsync/p2p/internal/stats"
	"github.com/ragsync/ragsync/p2p/internal/wire"
	"github.com/ragsync/ragsync/signaling"
)

// Session errors.
var (
	// ErrClosed is returned by a session's methods after Close.
	ErrClosed = errors.New("p2p: session closed")
	// ErrDisconnected is wrapped by the error a session's methods return
	// once the peer is gone (timeout or the peer closed the session).
	ErrDisconnected = errors.New("p2p: peer disconnected")
	// ErrNoTransport is wrapped by Connect's error when neither transport
	// could carry a probe to the peer.
	ErrNoTransport = errors.New("p2p: no transport to the peer works")
	// ErrMessageTooLarge is wrapped by *MessageSizeError.
	ErrMessageTooLarge = errors.New("p2p: message too large")
)

// MessageSizeError reports a message longer than Config.MaxMessageSize,
// passed to Send.
type MessageSizeError struct {
	Size, Limit int
}

func (e *MessageSizeError) Error() string {
	return fmt.Sprintf("p2p: message of %d bytes exceeds the limit of %d", e.Size, e.Limit)
}

// Unwrap returns ErrMessageTooLarge.
func (e *MessageSizeError) Unwrap() error { return ErrMessageTooLarge }

// signalTimeout bounds sending one negotiation message through signaling.
const signalTimeout = 10 * time.Second

// tickInterval is the period of the session's housekeeping goroutine
// (pings, failover, liveness, rates).
const tickInterval = 10 * time.Millisecond

// goodbyeSilence is how long a peer that the signaling server said left
// may stay silent before the session ends (see Session.peerLeftSignaling).
// The peer pings at least every Config.PingInterval, so a live peer is
// never this silent.
const goodbyeSilence = 300 * time.Millisecond

// stallSlack: a gap between two runs of the loop longer than tickInterval
// plus this is a stall of the local process.
const stallSlack = 40 * time.Millisecond

// phase of the session's lifecycle.
type phase uint8

const (
	phaseLinks   phase = iota // waiting for the transports to open or time out
	phaseProbe                // 3 probes on each open transport
	phaseAwait                // answerer: probes done, waiting for the offerer's select
	phaseRunning              // transport chosen
	phaseEnded
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
	probe struct {
		running     bool
		n           int
		res         [3]time.Duration // 0 = lost
		lost        int
		outstanding bool
		t1          time.Duration
		sentAt      time.Duration
		max         time.Duration
	}
}

func (l *linkState) up() bool { return l.state == LinkUp }

// Session is a connection to one peer over two transports: a WebRTC data
// channel and a TCP stream relayed by the signaling server. One of them is
// active (both peers agree which); the other is kept warm as a standby.
// See the package doc for the protocol.
//
// Send, Poll and Stats are safe for concurrent use and do not allocate.
type Session struct {
	cfg   Config
	role  signaling.Role
	room  string
	log   *slog.Logger
	clock clocksync.Clock // local monotonic clock (wall-aligned by default)
	start time.Duration
	ping  *pinger // pings, pongs and controls; the calibrator (under mu)

	tr  transports // the two transports
	sig *sigPump   // signaling: identities, negotiation, renegotiation, rejoin

	data   *dataPath // send, receive, sequence and loss accounting
	active atomic.Uint32

	mu           sync.Mutex
	phase        phase
	state        ConnState
	links        [2]linkState
	live         liveness   // the peer's presence, the loop's stalls
	pol          rolePolicy // the transport policy of this peer's role
	switches     int
	choiceReason string

	ev *eventQueue // the Events channel

	life *lifecycle // ready, end, goroutines
}

// sessionParams is what newSession needs besides the config; Connect fills
// it from the signaling client, tests from in-process pipes.
type sessionParams struct {
	cfg      Config // already through withDefaults
	role     signaling.Role
	room     string
	sig      signaler                                    // for WebRTC negotiation (nil: no WebRTC)
	dialTCP  func(ctx context.Context) (net.Conn, error) // nil: no TCP
	closeSig func()
	clock    clocksync.Clock // nil: wallClock
	id       *identity       // nil: a new one
	peerFP   []byte          // the peer's certificate fingerprint, if known without signaling (tests)
	early    *earlyOffer     // the offerer's early offer, already delivered to the peer (nil: none)
}

// clockEpoch is the origin of the default session clock.
var clockEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// wallClock is the default session clock: it reads as the wall time (as a
// duration since clockEpoch, 2020-01-01 UTC, which keeps it within clocksync's timestamp
// range) when created and then advances monotonically, so peers on
// different machines estimate the real offset between their wall clocks,
// and a wall-clock step during the session never makes it jump.
type wallClock struct {
	base time.Time
	at   time.Duration
}

func newWallClock() *wallClock {
	b := time.Now()
	return &wallClock{base: b, at: b.Sub(clockEpoch)}
}

func (c *wallClock) Now() time.Duration { return c.at + time.Since(c.base) }

func newSession(p sessionParams) (*Session, error) {
	if p.clock == nil {
		p.clock = p.cfg.Clock
	}
	if p.clock == nil {
		p.clock = newWallClock()
	}
	cc := p.cfg.ClockSync
	start := p.clock.Now()
	pol := newRolePolicy(p.role, policyConfig{PingInterval: p.cfg.PingInterval, StandbyPingInterval: p.cfg.StandbyPingInterval,
		FailoverAfter: p.cfg.FailoverAfter, SwitchMargin: p.cfg.SwitchMargin, Prefer: p.cfg.Prefer},
		// The answerer gives up waiting for the offerer's choice after the
		// offerer's longest wait plus its probes, with a margin.
		start+max(p.cfg.WebRTCTimeout, p.cfg.TCPTimeout)+4*p.cfg.ProbeTimeout+2*time.Second)
	cc.Leader = pol.leader()
	cal, err := clocksync.NewCalibrator(cc, p.clock)
	if err != nil {
		return nil, fmt.Errorf("%w: ClockSync: %w", ErrBadConfig, err)
	}
	if p.id == nil {
		if p.id, err = newIdentity(); err != nil {
			return nil, err
		}
	}
	s := &Session{
		sig:   &sigPump{sig: p.sig, closeSig: p.closeSig, id: p.id, pinned: make(chan struct{})},
		cfg:   p.cfg,
		role:  p.role,
		room:  p.room,
		log:   p.cfg.Logger.With("role", p.role.String()),
		clock: p.clock,
		ping:  newPinger(cal),
		data:  newDataPath(p.cfg.MaxMessageSize, p.cfg.RecvQueue),
		ev:    newEventQueue(max(p.cfg.EventBuffer, minEventBuffer)),
		life:  newLifecycle(),
		state: StateConnecting,
	}
	s.start = start
	s.pol = pol
	s.links[0].kind, s.links[1].kind = TransportWebRTC, TransportTCP
	s.links[0].state, s.links[1].state = LinkConnecting, LinkConnecting
	s.links[0].deadline = s.start + s.cfg.WebRTCTimeout
	s.sig.attemptAt = s.start
	s.links[1].deadline = s.start + s.cfg.TCPTimeout

	if p.peerFP != nil {
		s.sig.pin(p.peerFP)
	}
	if p.cfg.DisableWebRTC || p.sig == nil {
		s.links[0].state = LinkDisabled
	} else {
		rtc, err := s.newRTC(p.early)
		if err != nil {
			return nil, err
		}
		s.tr.rtc.Store(rtc)
		s.tr.rtcOn = true
	}
	if p.cfg.DisableTCP || p.dialTCP == nil {
		s.links[1].state = LinkDisabled
	}
	for i := range s.links {
		if s.links[i].state != LinkDisabled {
			s.tr.enabled |= 1 << i
		}
	}
	var tcpCtx context.Context
	tcpCtx, s.tr.cancelTCP = context.WithCancel(s.life.ctx)
	s.life.wg.Add(1)
	go s.loop()
	if s.links[1].state == LinkConnecting {
		s.life.wg.Add(1)
		go s.relayLoop(tcpCtx, p.dialTCP)
	} else {
		s.tr.cancelTCP()
	}
	if s.pol.leader() && p.sig != nil {
		ctx, cancel := context.WithTimeout(s.life.ctx, signalTimeout)
		var err error
		if rtc := s.tr.rtc.Load(); rtc != nil {
			err = rtc.start(ctx)
		} else {
			// No WebRTC here: the offer only carries the fingerprint that
			// pins the relay.
			err = p.sig.sendOffer(ctx, relayOnlySDP(s.sig.id.fp))
		}
		cancel()
		if err != nil {
			if s.tr.rtcOn {
				s.onDown(TransportWebRTC, err)
			} else {
				s.log.Warn("p2p: sending the fingerprint failed", "err", err)
			}
		}
	}
	return s, nil
}

func (s *Session) now() time.Duration { return s.clock.Now() }

// Role returns this peer's role, signaling.RoleOfferer or
// signaling.RoleAnswerer, which both peers agree on. The offerer decides
// the active transport and is the clock leader; use Role as a tie-breaker
// in game logic too (ragsync.NewMatch makes the offerer side 1).
func (s *Session) Role() signaling.Role { return s.role }

// Room returns the room code the session was paired in ("" for quick
// match without a code or for in-process sessions).
func (s *Session) Room() string { return s.room }

// Events returns the session's event channel. It is buffered
// (Config.EventBuffer) and the session never blocks on it, nor drops a
// transition: when it is full, queued events are merged into later ones
// that summarise them (two transport changes A→B→C become one A→C, an
// interruption and its resumption become the resumption, which carries
// the silence; Event.Merged counts what an event stands for, and
// Stats.EventsMerged all merges), so a game that reads it late still sees
// where every transition ended up, and the last event
// (EventDisconnected) is never lost. The channel is closed when the
// session ends (after EventDisconnected, or on Close).
func (s *Session) Events() <-chan Event { return s.ev.ch }

// emit queues ev, stamped with the session time.
func (s *Session) emit(ev Event) {
	ev.At = s.now() - s.start
	s.ev.emit(ev)
}

// Done is closed when the session has ended (Close, or the peer
// disconnected). Err then says why.
func (s *Session) Done() <-chan struct{} { return s.life.done }

// Err returns why the session ended (ErrClosed, or an error wrapping
// ErrDisconnected), or nil while it runs.
func (s *Session) Err() error {
	select {
	case <-s.life.done:
	default:
		return nil
	}
	return s.life.endErr
}

// ---- linkHandler ----

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
	if pr := &ls.probe; pr.running && pr.outstanding && pr.t1 == pg.T1 {
		pr.res[pr.n] = rtt
		pr.n++
		pr.outstanding = false
		// Probe again (or decide) now rather than at the next tick: the
		// three probes are back-to-back round trips.
		if s.phase == phaseProbe || s.phase == phaseAwait {
			s.tickProbe(t4)
		}
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
	s.data.tick(now)
	for i := range s.links {
		ls := &s.links[i]
		// Once the session runs, a WebRTC that is still connecting keeps
		// trying; the offerer renews it if it takes too long (see
		// maybeRenewRTC).
		if ls.state == LinkConnecting && now >= s.links[i].deadline && !(i == 0 && s.phase == phaseRunning) {
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
	switch s.phase {
	case phaseLinks:
		s.tickLinks(now)
	case phaseProbe, phaseAwait:
		s.tickProbe(now)
	case phaseRunning:
		s.tickRunning(now)
	}
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
		if pr.outstanding && now-pr.sentAt > s.cfg.ProbeTimeout {
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
		}
	}
	o := s.pol.afterProbes(now, &s.links, done)
	switch {
	case o.fail != "":
		s.failConnect(s.noTransportErr(o.fail))
	case o.await:
		s.phase = phaseAwait
	case o.k != TransportUnknown:
		s.choiceReason = o.reason
		s.decide(now, o.k, false)
		s.becomeRunning(now)
	}
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
	case silence >= s.cfg.DisconnectAfter:
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
	calDue := now >= s.ping.cal.NextPing()
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

// Close ends the session: it tells the peer (a bye message on every open
// transport, best effort), closes both transports and the signaling
// connection, and waits for the session's goroutines. Messages still
// queued can be drained with Poll after Close. It is idempotent and
// returns nil.
func (s *Session) Close() error {
	s.life.close()
	return nil
}

// ---- data path ----

// Send sends p to the peer as one unreliable message on the active
// transport: it may be lost, duplicated messages are filtered, and order is
// not guaranteed. It copies p, never blocks and does not allocate. When
// the transport cannot take the message (its send buffer is full, or it is
// down and the other is too), the message is dropped and counted in
// Stats.SendDropped: Send returns nil, as for a lost packet. Errors: a
// *MessageSizeError for len(p) > Config.MaxMessageSize, ErrClosed after
// Close, an error wrapping ErrDisconnected once the peer is gone.
//
// On the TCP fallback, messages are latest-only by their first byte (their
// kind): while the socket is busy, a message replaces an unsent one with
// the same first byte, so stale game states never queue up behind each
// other, and a message of another kind is never replaced by a state.
// "Busy" includes the moment the previous write is under way, so of a
// burst of same-kind messages sent back to back only the last may arrive
// on TCP: send at most one message of each kind per tick.
func (s *Session) Send(p []byte) error {
	if len(p) > s.cfg.MaxMessageSize {
		return &MessageSizeError{Size: len(p), Limit: s.cfg.MaxMessageSize}
	}
	if s.life.ended.Load() {
		return s.life.err()
	}
	s.data.send(s.tr.sendLink(TransportKind(s.active.Load())), p)
	return nil
}

// Poll hands every received message to fn, oldest first, and returns how
// many it handed over. It never blocks; p is valid only during the call.
// Use it once per game tick. It does not allocate. Messages wait for it in
// a bounded queue (Config.RecvQueue; when it is full the oldest are
// dropped, counted in Stats.RecvOverflow), also after the session ended.
func (s *Session) Poll(fn func(p []byte)) int {
	return s.data.poll(fn)
}

// Stats returns a snapshot of the link statistics. It does not allocate.
func (s *Session) Stats() Stats {
	now := s.now()
	var st Stats
	s.mu.Lock()
	st.State = s.state
	st.Role = s.role
	st.Transport = TransportKind(s.active.Load())
	st.ChoiceReason = s.choiceReason
	st.Switches = s.switches
	if s.phase == phaseRunning || s.phase == phaseEnded && s.live.readyAt != 0 {
		st.Uptime = now - s.live.readyAt
		st.SinceLastRecv = now - s.live.lastRecv
		st.ConnectTime = s.live.readyAt - s.start
	}
	st.Malformed = s.ping.malformed
	st.RelayRejected = s.tr.rejected.Load()
	st.SignalingReconnects = uint64(s.sig.rejoined.Load())
	st.WebRTCRenewals = s.sig.renewals
	cs := s.ping.cal.Stats()
	if est := cs.Estimate; est.Samples > 0 {
		st.ClockOffset = est.OffsetAt(now)
		st.ClockUncertainty = est.UncertaintyAt(now)
	}
	st.ClockSynced = cs.Synced && cs.Calibrated
	for i := range s.links {
		s.linkStats(now, &s.links[i], st.Link(s.links[i].kind))
	}
	st.PeerProtocolErrors, st.LastPeerProtocolError = s.ping.peerErrors, s.ping.lastPeerErr
	s.mu.Unlock()

	if a := st.Transport; a != TransportUnknown {
		ls := st.Link(a)
		st.RTT, st.Jitter, st.JitterOut = ls.RTT, ls.Jitter, ls.JitterOut
	}
	if rtc := s.tr.rtc.Load(); rtc != nil {
		st.LocalCandidate, st.RemoteCandidate = rtc.candidates()
	}
	st.RelayWebSocket = s.cfg.RelayWebSocket
	s.data.stats(&st)
	if t := s.tr.tcp.Load(); t != nil {
		st.SendDropped += t.superseded()
	}
	st.EventsMerged, st.EventsDropped = s.ev.counts()
	return st
}

func (s *Session) linkStats(now time.Duration, ls *linkState, out *LinkStats) {
	out.Kind = ls.kind
	out.State = ls.state
	out.Err = ls.err
	out.Healthy = ls.up() && s.pol.paths().healthy(now, ls.kind)
	out.Probe = ls.probe.res
	out.ProbeMax = ls.probe.max
	out.ProbeLost = ls.probe.lost
	out.Last3Max = s.pol.paths().path(ls.kind).max3()
	out.RTT = ls.rtt.Stats(now)
	out.Jitter = ls.jin.Value()
	out.JitterOut = ls.jout.Value()
	out.PingsSent = ls.pings
	out.PongsReceived = ls.pongs
	out.RxPackets, out.RxBytes = ls.rx, ls.rxB
	out.SinceLastRecv = -1
	if ls.hadRecv {
		out.SinceLastRecv = now - ls.lastRecv
	}
}
