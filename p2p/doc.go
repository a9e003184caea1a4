// Package p2p connects two players of a ragsync game and carries their
// game messages: unreliable, unordered, as fast as the path allows, over a
// WebRTC data channel or, when that cannot connect or pings worse, over a
// TCP stream relayed by the signaling server. A Session keeps both
// transports, agrees with the peer on which one is active, fails over
// without ending the match, and measures the link (ping, jitter, loss,
// throughput, candidate types, clock offset).
//
// # Use
//
//	room, _ := p2p.CreateRoom(ctx, "http://127.0.0.1:8080", cfg) // host
//	fmt.Println("code:", room.Code())
//	s, err := room.Connect(ctx)
//
//	s, err := p2p.Connect(ctx, url, code, cfg)            // guest, by code
//	s, err := p2p.Connect(ctx, url, p2p.QuickMatch, cfg)  // or quick match
//
//	// every tick (60 Hz):
//	s.Poll(func(p []byte) { apply(p) }) // drain received messages
//	s.Send(state)                         // unreliable, never blocks
//	st := s.Stats()                       // cheap, no allocation
//
// Connect returns once the first transport is chosen. Send copies the
// message, never blocks and does not allocate; received messages wait in a
// bounded ring of reused buffers (Config.RecvQueue; when the game does not
// drain it the oldest are dropped and counted) and are read with Poll.
// Role says whether this peer is the offerer (it decides the transport and
// leads the clock; use it as the game's tie-breaker too) or the answerer:
// it is signaling.Role, assigned at pairing. GameTime is the shared game
// clock, StartMatch tells it the match began. Events reports transport
// changes, interruptions and the disconnect. Close tells the peer and
// frees everything. A Session is what a ragsync.Match runs over.
//
// # Transports
//
// WebRTC (pion/webrtc v4): one PeerConnection with one data channel,
// labelled "ragsync", pre-negotiated by both peers as SCTP stream id 0
// (Negotiated=true, no in-band open handshake), Ordered=false and
// MaxRetransmits=0. A channel the peer opens in-band is refused. It is read
// through Detach (SettingEngine.DetachDataChannels) into a reused buffer.
// The SDP offer/answer and trickled ICE candidates go through the
// signaling server. The STUN/TURN servers are Config.ICEServers or, when
// it is nil, those the signaling server hands out with the pairing (its
// embedded TURN server, see signaling/server.TURNConfig; none if it runs none):
// two peers whose direct UDP is blocked connect through TURN on relay
// candidates, and Stats.WebRTCViaTURN says so. No other server is
// contacted; mDNS candidates are off. Config.Net injects a transport.Net
// (e.g. a pion vnet); Config.UDP4Only restricts ICE to UDP over IPv4.
//
// Interface policy (Config.Interfaces, InterfacesAuto by default): if the
// signaling URL's host is a loopback address (127.0.0.0/8, ::1,
// "localhost") and Config.Net is nil, both peers are on this machine, so
// only loopback interfaces are used, with loopback candidates enabled and
// non-loopback addresses filtered out; traffic never leaves the machine.
// Otherwise every interface is used (loopback only with
// Config.IncludeLoopback). Config.InterfaceFilter overrides the interface
// filter.
//
// TCP: the signaling server's relay (signaling.DialRelay with the token
// from the pairing), inside TLS 1.3 between the two peers (see Security),
// carries session messages as length-prefixed frames
// (2-byte big-endian length, then the message). Data messages go through
// a latest-only sender: while the socket is busy, a message replaces an
// unsent one whose payload has the same first byte (its kind), so stale
// game states never queue up behind each other (plain TCP's head-of-line
// pile-up), and a message of another kind, a round result say, is never
// replaced by a state. Pings, pongs and control messages go through a FIFO
// control queue, written first and never superseded.
//
// # Security
//
// Each session makes one ECDSA P-256 key and a self-signed certificate for
// it when it starts. WebRTC uses that certificate for DTLS (its SHA-256
// fingerprint is the a=fingerprint line of the SDP the peer receives), and
// the TCP relay uses the same certificate for TLS 1.3 (crypto/tls) over
// the relayed byte stream: the offerer is the TLS client, the answerer
// the server, both present the certificate and each accepts only a peer
// certificate whose SHA-256 fingerprint is the one in the peer's SDP. The
// first fingerprint a peer's SDP carries is pinned for the session: a
// later offer or answer with another one (a renegotiation, a new
// PeerConnection) is refused. A peer that has WebRTC disabled still sends
// an SDP through signaling, with only its fingerprint in it (session
// name "ragsync-relay-only"), so the relay can be pinned. Until the TLS handshake has
// completed, nothing of the session crosses the relay; every byte after it
// is encrypted and authenticated (AES-GCM or ChaCha20-Poly1305 records
// with implicit sequence numbers), so whoever runs the relay can delay or
// drop the stream but not forge, alter or replay a frame: a record that
// fails to authenticate ends the stream (counted in Stats.RelayRejected)
// and the session dials the relay again.
//
// What the signaling server (or whoever runs it, or sits on a plain-HTTP
// path to it) can still do: while the peers pair, it carries the SDPs, so
// it can replace both fingerprints with its own and stand in the middle of
// both WebRTC and the relay (exactly as for any WebRTC application that
// trusts its signaling); it can refuse to pair, drop or delay signaling
// and relay traffic, and end a relay stream at any time (denial of
// service). What it cannot do once the peers have paired: read or change
// what they send each other, over either transport, or make one accept a
// message the other did not send (a bye, a pong that moves the clock, a
// select, a sequence number); and a later SDP with another fingerprint is
// refused, so it cannot step into the middle of a session afterwards.
// Use an https:// or wss:// signaling URL so that only the server, not
// everyone on the path to it, is in that position.
//
// # In a browser
//
// The package builds for GOOS=js GOARCH=wasm. WebRTC is then the
// browser's RTCPeerConnection through pion's js build (the same
// pre-negotiated "ragsync" channel; Config.Net, Interfaces,
// InterfaceFilter, IncludeLoopback and UDP4Only do not apply; candidate
// types show as CandidateUnknown), signaling is the browser's WebSocket,
// and the relay is reached over a WebSocket (Config.RelayWebSocket, always
// on there; signaling.DialRelayWebSocket), which the server joins to a
// native peer's raw stream. The browser makes its own DTLS certificate, so
// a browser's SDP carries the session certificate's fingerprint in an
// extra session-level line, a=ragsync-tls-fingerprint:sha-256 …, which
// pins the relay's TLS instead of the DTLS fingerprint (see Security).
// Natively, peer-reflexive and host candidate pairs are accepted at once
// (pion waits 1 s for a peer-reflexive one by default; a browser's
// candidates arrive as peer-reflexive behind mDNS names), offers and
// answers carry the candidates gathered within 20 ms, and the session's
// key is made while waiting for a peer. In a browser, Connect and
// CreateRoom make the WebRTC offer before joining and send it with the
// join (signaling's early offers, at most 3 s of waiting for it): the
// server makes a player who brings one the offerer, even if it arrives
// second in quick match or joins a room, unless the other player brought
// one too, and hands the offer to the answerer with the pairing. Every step of an answer in a page waits for its one
// thread, behind its frames, while a Go answerer answers within
// milliseconds; as the offerer the page only applies the answer. The
// early offer has no candidates of the pairing's ICE servers (the
// signaling server's TURN): those serve if WebRTC is renegotiated (see
// Signaling during the match). Natively, Connect and CreateRoom send a
// spare early offer (signaling.Client.SetSpareOffer), unless the server's
// welcome says it hands out TURN servers: between Go players the usual
// roles hold, but the offerer's offer reaches the answerer with the
// pairing, two messages through the server sooner (0.6 to 4.7 s on a link
// losing 30 % of its packets), and a browser's offer, not spare, still
// makes the page the offerer. Also in a browser, the relay's TLS
// handshake (pure Go, on the page's one thread) waits until the session
// runs, or 700 ms at most, so that it does not hold up WebRTC's setup.
// Writers of other clients: PROTOCOL.md at the repository's root is the
// checklist.
//
// # Wire format
//
// Every session message, on either transport, is a 5-byte header (wire
// version 1, message type, a sequence number) and a payload: data (the
// application's bytes, at most Config.MaxMessageSize), ping and pong
// (clocksync's calibration messages, 15 and 39 bytes), or control: select
// and select-ack (an epoch and a transport), bye, and hello (the sender's
// enabled transports, sent on each transport as it opens). Data messages
// are numbered 0, 1, 2, ... per session, and the receiver derives loss,
// duplicates and reordering from the numbers and drops duplicates. The
// byte layout is documented in p2p/internal/wire.
//
// Malformed messages (short, wrong version or type, bad control, clocksync
// wire errors, impossible timestamps, a second clock leader, data longer
// than Config.MaxMessageSize, text messages on the data channel, TCP frames
// longer than a session message) are dropped and counted in
// Stats.Malformed; they never reach the application and the transport goes
// on.
//
// # Pings and the clock
//
// Both peers ping both open transports; the four timestamps of each
// exchange are a clock sample for the session's clocksync.Calibrator
// (offerer = leader), which returns its round trip without the peer's
// processing time, (t4−t1) − (t3−t2): each transport keeps a
// clocksync.RTTEstimator of them (LinkStats.RTT: smoothed, and p50/p95
// over the last 10 s). The timestamps also give RFC 3550 jitter in each
// direction (from t2−t1 and t4−t3). The active transport is pinged when the calibrator
// wants (16 Hz while calibrating, 4 Hz in the match) and at least every
// Config.PingInterval (100 ms), which bounds failure detection; the
// standby transport every Config.StandbyPingInterval (500 ms). Stats
// carries the offset of the peer's clock and its uncertainty;
// Session.GameTime exposes the game clock. The default session
// clock reads as the wall time since 2020-01-01 UTC and then runs
// monotonically, so the offset is the two machines' real clock difference.
//
// # Choosing the transport
//
// After pairing, both transports are opened at once. The offerer waits
// until each is open, has failed, or has timed out (Config.WebRTCTimeout,
// 5 s, or 5 s after WebRTC's latest step, its answer applied or ICE
// connected, and Config.TCPTimeout, 10 s; once one is open, the other is waited
// for until a fifth of its timeout after the pairing, so on a long, lossy
// link the session starts on the relay and moves to WebRTC when it opens; with Config.Prefer set,
// it stops waiting as soon as the preferred one is open; a transport the
// peer's hello says it disabled is not waited for; nor is the relay once
// WebRTC is open, see below). Then it pings each open
// transport three times in a row (one round trip after another; a probe
// unanswered within Config.ProbeTimeout, 1 s, is lost and counts as
// ProbeTimeout) and takes the maximum: the 3-probe ping, which weighs a
// transport by its worst recent round trip rather than its best. A transport that
// answered at least one probe is usable; the usable one with the lower
// 3-probe maximum wins, and Config.Prefer overrides the comparison. Pings
// within Config.SwitchMargin (15 ms) or 10 % of each other are a tie, and
// ties go to WebRTC: at equal ping its unordered, unreliable channel is the
// better one for game states (no head-of-line blocking), and a few
// hundred µs of probe noise on a LAN must not decide. But WebRTC need not
// wait for that: unless TCP is preferred, the offerer starts on WebRTC as
// soon as its data channel opens if the relay is not open yet (the
// channel's DTLS handshake crossed the path both ways), and, if the relay
// is open and probing, as soon as WebRTC answers one probe unless the
// relay answered one faster by the margin; the relay, probed as the
// standby, then takes over only as in "Failover and switching back".
// Waiting costs the relay's connect time (a browser's, TLS over a
// WebSocket, opens hundreds of ms after its data channel) and round trips
// that, in a browser, each wait for the page's thread. The answerer probes
// too (for its statistics) but does not decide.
//
// Agreement: the offerer numbers each decision with an epoch (1 for the
// initial choice, +1 for each switch) and sends select(epoch, transport) on
// every open transport, repeating it every PingInterval until the answerer
// acknowledges it with select-ack(epoch, transport) (also sent on every
// open transport). The answerer adopts any select with a newer epoch and
// acknowledges every select of its current epoch (its ack may have been
// lost); its Connect returns with the first one. Both peers therefore send
// on the same transport, except that a peer whose active transport is
// closed locally sends on the other one until the next select. Receivers
// accept every message from either transport at any time, so a switch
// loses nothing that is in flight.
//
// # Failover and switching back
//
// The offerer's policy (policy.go) judges each path by evidence about
// that path: the pings sent on it and their answers. A ping unanswered
// for Config.FailoverAfter plus the path's smoothed RTT (its grace) counts
// against the path, unless its grace overlaps a stall of the local
// session loop (the loop measures its own scheduling gaps: a GC pause, a
// stopped process, a busy machine) or was sent within 1 s after one (the
// peer's congestion control, which heard nothing from us meanwhile,
// recovers), since what this process did not hear while it was not
// running says nothing about the path; the round trips of such pings are
// not ping samples of the path either. The active path
// has failed when it is closed or has such an unanswered ping. The offerer
// then switches to the other path only if that one answered a ping sent
// after the active path's trouble began: fresh evidence that it works
// now, and that evidence must hold for a ping interval (plus twice the
// local loop's recent lateness, at most FailoverAfter): on a busy
// machine the peer answers both paths late, and one answer is read a
// moment before the other; a moment's evidence makes a session flap. A paused peer answers on no path, so nothing switches; the session
// is interrupted instead (see Liveness). While the active path has a ping
// outstanding for longer than PingInterval, and for 3 s after a switch or
// a path coming up, the standby is pinged every PingInterval instead of
// StandbyPingInterval, so the evidence is there when it is needed. After
// a switch the session stays at least 1 s on the new path, unless that
// path closes. FailoverAfter is below Config.InterruptAfter, so a failover
// normally completes before the game sees an interruption.
//
// While the active transport works, the offerer switches to the other one
// only if it has answered its last three pings (the standby's 3-probe
// ping) and it is at least 3 s since the last switch, and then if it is the
// preferred transport (Config.Prefer), or, without a preference, if its
// 3-probe maximum is lower than the active one's by more than
// Config.SwitchMargin (15 ms) and 10 % — except that WebRTC, which takes
// ties, needs only to be no worse than TCP by half that margin. Leaving
// WebRTC for a better-pinging TCP also needs TCP to stay better for 2 s
// (one slow round trip stays among the last three for a few pings, and a
// busy machine makes one every few seconds). So WebRTC is taken back when
// it recovers and pings as well, and pings near the line do not make the
// session flap.
//
// # Liveness
//
// Every valid message from the peer on any transport counts. After
// Config.InterruptAfter (1 s) without one, the state becomes
// StateInterrupted with EventInterrupted; the next message brings
// StateConnected and EventResumed (with the length of the silence). After
// Config.DisconnectAfter (5 s) the session ends: StateDisconnected,
// EventDisconnected, and methods return an error wrapping ErrDisconnected.
// Time this process itself stood still (see Failover) does not count as
// the peer's silence. A peer that closes its session sends bye on both
// transports, which ends the other side at once ("the peer closed the
// session"). A peer that the signaling server says left (it closed, left
// its room, or its signaling connection dropped: a killed process, a
// crashed machine) and that has been silent for 300 ms is gone: the
// session ends then ("the peer left: ..."), within about half a second of
// the peer's death rather than after DisconnectAfter. A peer that is only
// silent keeps the interrupted (InterruptAfter) → disconnected
// (DisconnectAfter) timeline.
//
// # Signaling during the match
//
// The session keeps its signaling connection for the whole match: WebRTC
// is renegotiated over it. When the WebRTC path has failed for 2 s while
// the relay works (4 s when no path answers), or its PeerConnection
// closed, the offerer makes a new PeerConnection, with the pairing's ICE
// servers, and sends its offer; the answerer replaces its own on an offer
// with a new SDP session id (Stats.WebRTCRenewals). While WebRTC stays
// down (UDP blocked), the wait between two grows from 5 s, doubling, to
// 60 s, and each new PeerConnection keeps checking its candidate pairs
// for the whole wait, so UDP coming back is found within a check (200
// ms) without a new offer; the wait resets when WebRTC opens, the
// signaling connection comes back or the local addresses change.
// When the signaling connection drops (a network blip, a server
// restart), the session connects again, with backoff (200 ms doubling to
// 2 s), and takes its place back in the pairing with its relay token
// (signaling.Client.Rejoin; a server restarted with the same secret
// accepts it), while the match goes on over the transports
// (Stats.SignalingReconnects counts it). Meanwhile (Stats.SignalingLost)
// a silent peer is waited for up to 30 s, the server's rejoin grace,
// instead of DisconnectAfter, and for DisconnectAfter more once the
// server is back: a relay-only match has no path at all while the
// server is down, but both peers are alive and will be back. The relay, cut by a server
// restart, is dialled again meanwhile and is back within about a second of
// the server answering.
//
// # Events
//
// Events are delivered on a buffered channel (Config.EventBuffer, 64). The
// session never blocks on it and never drops a transition: when it is
// full, queued events are merged into later ones that summarise them (two
// transport changes A→B→C become one A→C, an interruption and its
// resumption become the resumption, which carries the silence;
// Event.Merged and Stats.EventsMerged count them). The channel is closed when the session ends, right after
// EventDisconnected or on Close. The current state is always in
// Stats.State.
//
// # Statistics
//
// Stats is a value copied under the session's locks, without allocation:
// read it every frame if you like. Its figures come from plain estimators
// fed with samples: loss, duplicates, reordering and late drops from the
// data sequence numbers (in the manner of RFC 3550 §6.4.1), round trips
// from clocksync.RTTEstimator (RFC 6298 smoothing; min, p50, p95 and max
// over the last 10 s), RFC 3550 interarrival jitter, and packets and bytes
// per second.
//
// # Allocation
//
// Send, the receive path of both transports up to the ring, Poll, Stats
// and GameTime do not allocate in this package's code (tested with
// testing.AllocsPerRun over the TCP transport). pion allocates inside
// its SCTP/DTLS stack for every WebRTC message, and crypto/tls one small
// object per read of the relay stream; see the benchmarks.
//
// # Internals
//
// A map for maintainers. Session (session.go) wires types it owns, each
// with one job and its own tests:
//
//   - rolePolicy (role.go): the transport policy of this peer's role,
//     chosen once at start: offererRole decides the transport and sends
//     the selects, answererRole follows them. Both build on the path
//     evidence and verdicts of policy.go. The session asks the policy
//     and never compares its role.
//   - transports (transport.go): the two transports, rtcTransport
//     (webrtc.go, webrtc_js.go) and tcpTransport (tcp.go), behind the
//     link interface, and which of them are open, read lock-free.
//   - dataPath (datapath.go): Send and Poll: data numbering, send and
//     receive accounting, sequence, loss and rates, the receive ring.
//   - eventQueue (eventq.go): the Events channel, which merges and never
//     blocks.
//   - sigPump (signal.go): identity and the peer's pinned fingerprint,
//     offers and answers, WebRTC renegotiation, the signaling rejoin.
//   - pinger (pinger.go): pings, pongs and control messages, the clock
//     calibrator, the peer's protocol faults.
//   - liveness (liveness.go): the peer's presence, interruptions, the
//     local loop's stalls, the signaling server's goodbye.
//   - lifecycle (lifecycle.go): ready, the end and its error, Close, the
//     goroutines' WaitGroup and context.
//
// What the transports read enters through the session's linkHandler
// methods (handler.go); the loop (loop.go) runs the connecting phases
// (links, probes, the initial choice), liveness, the policy's decisions
// and pings; relay.go dials the relay.
//
// Lock order. Session.mu guards the session's bookkeeping: the phase and
// state, the links (linkState), the role policy, the pinger and its
// calibrator, liveness, and sigPump's renegotiation fields. With it held
// the session may take, and never the other way round:
//
//	Session.mu → dataPath.txMu, dataPath.rxMu (leaves, never both)
//	Session.mu → eventQueue.mu (leaf)
//	Session.mu → a transport's own locks (link.send must not block, and a
//	             transport never calls its linkHandler with a lock held:
//	             the handler takes Session.mu)
//
// sigPump.mu (the pinned fingerprint) and msgRing.mu are leaves taken
// without Session.mu; msgRing.consMu (Poll) is taken before msgRing.mu.
// Send takes no session lock but dataPath.txMu: the active transport
// (Session.active), the open links (transports) and the end
// (lifecycle.ended) are atomics. No application code runs with
// Session.mu held (the Poll callback runs under msgRing.consMu only; the
// logger is the one exception).
//
// Goroutines, and who owns them. The session's own are counted in
// lifecycle.wg, so Close waits for them; all stop on lifecycle.ctx,
// canceled when the session ends:
//
//   - loop (loop.go), started by newSession: the timers every
//     tickInterval; on the end it runs teardown, which closes the
//     transports, the signaling connection and the Events channel.
//   - relayLoop (relay.go), started by newSession when TCP is on: dials
//     the relay (again, with backoff, after it drops); also stopped by
//     transports.cancelTCP when the peer has no relay.
//   - pumpSignaling (signal.go), started by Connect once the session
//     exists: feeds the peer's signaling messages to the handlers and
//     rejoins a dropped signaling connection.
//   - short-lived ones, each counted in lifecycle.wg: the offerer's
//     renegotiation (one at a time, sigPump.renewing), the closing of a
//     replaced PeerConnection, and the leave after the peer left the
//     signaling server.
//
// Each transport owns its reader goroutine (tcpTransport.readLoop,
// rtcTransport.readLoop), which calls the linkHandler, and pion its own;
// they end when the transport is closed (by teardown, or by the session
// replacing it). Before the session exists, Connect makes the key and the
// early offer in the background (prepareIdentity, startEarlyOffer).
package p2p
