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

// Session is a connection to one peer over two transports: a WebRTC data
// channel and a TCP stream relayed by the signaling server. One of them is
// active (both peers agree which); the other is kept warm as a standby.
// See the package doc for the protocol.
//
// Send, Poll and Stats are safe for concurrent use and do not allocate.
type Session struct {
	// Fixed at start.
	cfg     Config
	role    signaling.Role
	room    string
	log     *slog.Logger
	clock   clocksync.Clock // local monotonic clock (wall-aligned by default)
	start   time.Duration
	seat    string // the seat token (see SeatToken); "" without signaling
	resumed bool   // Connect took back a seat (Config.Resume)

	// Owned parts, each with its own job (see the package doc's
	// Internals); those marked "mu" are used with mu held.
	tr   transports  // the two transports behind the link interface (lock-free)
	data *dataPath   // send, receive, sequence and loss accounting (own locks)
	ev   *eventQueue // the Events channel (own lock)
	sig  *sigPump    // signaling: identities, negotiation, renegotiation, rejoin
	life *lifecycle  // ready, the end, Close, the goroutines (lock-free)
	pol  rolePolicy  // mu: the transport policy of this peer's role
	ping *pinger     // mu: pings, pongs and controls; the clock calibrator
	live liveness    // mu: the peer's presence, the loop's stalls

	// active is the transport data is sent on, read lock-free by Send.
	active atomic.Uint32

	// mu guards the session's bookkeeping; see the lock order in the
	// package doc.
	mu           sync.Mutex
	phase        phase
	state        ConnState
	links        [2]linkState
	switches     int
	probeRetries int           // rounds of probes started again because every probe was lost
	lastPingAt   time.Duration // when the newest ping (probe or calibration) was sent
	giveUpAt     time.Duration // connecting: no transport open until then fails
	choiceReason string
	rtcSeen      rtcProgress // mu: the connecting WebRTC's last step (see rtcProgressing)
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
	// connectFor is the time left on Connect's context when the session
	// was made (0: it has no deadline): the session keeps trying until
	// shortly before it (see giveUpAt).
	connectFor time.Duration
	// localAddrs lists this machine's addresses, watched for changes that
	// reset the renegotiation backoff (nil: not watched).
	localAddrs func() ([]net.Addr, error)
}

// giveUpMargin: a session made by Connect gives up connecting this long
// before Connect's context ends, so Connect fails with what went wrong
// (ErrNoTransport) rather than the context's error.
const giveUpMargin = time.Second

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
	// Nothing gives up while time remains: the offerer waits for a
	// transport that failed to open (a relay dialled again, a data channel
	// that opens late) and starts new rounds of probes, when every probe
	// was lost, until giveUpAt, twice its longest wait for a transport
	// (20 s), or giveUpMargin before the end of Connect's context if that
	// is later (on a lossy link the offer alone can take ten seconds
	// through the signaling server, and the handshakes as long again);
	// the answerer gives up waiting for the offerer's choice after that
	// plus a last round of probes, with a margin.
	giveUpAt := start + max(2*max(p.cfg.WebRTCTimeout, p.cfg.TCPTimeout), p.connectFor-giveUpMargin)
	deadline := giveUpAt
	if p.role != signaling.RoleOfferer {
		deadline += 12*p.cfg.ProbeTimeout + 2*time.Second // a last round: 3 probes of up to 4× ProbeTimeout
	}
	pol := newRolePolicy(p.role, policyConfig{PingInterval: p.cfg.PingInterval, StandbyPingInterval: p.cfg.StandbyPingInterval,
		FailoverAfter: p.cfg.FailoverAfter, SwitchMargin: p.cfg.SwitchMargin, Prefer: p.cfg.Prefer}, deadline)
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
	s.giveUpAt = giveUpAt
	s.pol = pol
	s.links[0].kind, s.links[1].kind = TransportWebRTC, TransportTCP
	s.links[0].state, s.links[1].state = LinkConnecting, LinkConnecting
	s.links[0].deadline = s.start + s.cfg.WebRTCTimeout
	s.sig.attemptAt = s.start
	s.sig.localAddrs = p.localAddrs
	s.links[1].deadline = s.start + s.cfg.TCPTimeout

	if p.peerFP != nil {
		s.sig.pin(p.peerFP)
	}
	if p.cfg.DisableWebRTC || p.sig == nil {
		s.links[0].state = LinkDisabled
	} else {
		// The first PeerConnection keeps checking until giveUpAt: on a
		// lossy link its checks and handshakes take their time, and
		// nothing renews it before the session runs.
		rtc, err := s.newRTC(p.early, giveUpAt-start)
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

// Close ends the session: it tells the peer (a bye message on every open
// transport, best effort), closes both transports and the signaling
// connection, and waits for the session's goroutines. Messages still
// queued can be drained with Poll after Close. It is idempotent and
// returns nil.
func (s *Session) Close() error {
	s.life.close()
	return nil
}

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
	st.SignalingLost = s.live.sigLost
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
