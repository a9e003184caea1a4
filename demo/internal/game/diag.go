package game

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ragsync/ragsync"
	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/physics"
)

// Graph geometry: one sample every SampleEvery of wall time, GraphLen
// samples. The graph, the loss window and the log's window follow the wall
// clock, so they keep their length when the game ticks slowly.
const (
	SampleEvery = 100 * time.Millisecond
	GraphLen    = 60 // 6 s of history
	ticksPerSec = 60.0
	lossEvery   = time.Second // the window of the state-loss figure
)

// Sample is one point of the HUD's net graph.
type Sample struct {
	RTT      time.Duration // link round trip (session pings on the active transport)
	Jitter   time.Duration // link jitter, peer → us (RFC 3550)
	StateAge time.Duration // age of the rival's newest state when it arrived (game clock; includes -lag)
	Loss     float64       // 0..1: the larger of link loss (last second) and missing rival states
}

// errAcc accumulates the rival's correction error.
type errAcc struct {
	sumSq float64
	n     int
	max   float64
}

func (e *errAcc) add(v float64) {
	e.sumSq += v * v
	e.n++
	e.max = math.Max(e.max, v)
}

func (e *errAcc) rms() float64 {
	if e.n == 0 {
		return 0
	}
	return math.Sqrt(e.sumSq / float64(e.n))
}

// ageAcc accumulates state ages.
type ageAcc struct {
	sum time.Duration
	n   int
	max time.Duration
}

func (a *ageAcc) add(d time.Duration) { a.sum += d; a.n++; a.max = max(a.max, d) }
func (a *ageAcc) mean() time.Duration {
	if a.n == 0 {
		return 0
	}
	return a.sum / time.Duration(a.n)
}

// window holds what accumulates between two log lines (and over the match).
type window struct {
	ticks     int
	start     time.Time // wall time of the window's first tick
	err       errAcc
	age       ageAcc
	hardTicks uint64 // at the window's start
	states    uint64 // rival state packets received, at the window's start
}

// Diag measures one player's connection and netcode for the HUD, the log
// and the final summary. It is fed once per tick from the game loop and
// allocates nothing there.
type Diag struct {
	rival physics.ObjectID

	graph      [GraphLen]Sample
	n          int       // samples ever taken
	nextSample time.Time // wall time of the next graph sample

	lastSentAt clocksync.GameTime
	haveSentAt bool
	ageJitter  float64 // RFC 3550 style, over state ages (µs)
	prevAge    time.Duration
	lastAge    time.Duration
	quiet      int // ticks left in which the error is not accumulated (round reset)

	// State loss from the sender's sequence numbers over lossEvery of
	// wall time: what the counter says was sent and got in the window.
	lossStart                 time.Time
	lossSent                  uint64
	lossGot                   uint64
	stateLoss                 float64
	stateRate                 float64 // states the rival sent per second, last window
	totalSent                 uint64  // counter values at the match's first state
	totalGot                  uint64
	totalSentNow, totalGotNow uint64 // at the last window
	seqStarted                bool

	curErr     [2]float64 // rms, max of the rival's bodies at the last tick
	win, total window
	hardPerSec float64
	startPos   [len(Objects)]physics.Vec2
	moved      [len(Objects)]float64
	haveStart  bool
	last       MatchStatsView

	// The rival's state packets: the count at the last change and the game
	// time it changed (the match's first tick until one arrives).
	statesIn     uint64
	statesInAt   clocksync.GameTime
	haveStatesIn bool
	statesSilent time.Duration
}

// SilentRivalAfter is how long a paired rival may send no state packets
// before the demo warns (log and HUD): a peer that pings but does not play.
// Its first state may take firstStateGrace from this peer's first tick (a
// follower sends none until its clock has synced).
const (
	SilentRivalAfter = 2 * time.Second
	firstStateGrace  = 5 * time.Second
)

// RivalSilent reports whether the rival's states have been missing for
// long enough to warn (see SilentRivalAfter).
func (d *Diag) RivalSilent() bool {
	if d.statesIn == 0 {
		return d.statesSilent >= firstStateGrace
	}
	return d.statesSilent >= SilentRivalAfter
}

// StatesSilent returns how long (game time) no state packet of the rival
// has arrived: since its last one, or since the match's first tick.
func (d *Diag) StatesSilent() time.Duration { return d.statesSilent }

// MatchStatsView is what Diag keeps of the match's counters.
type MatchStatsView struct {
	Ticks, Unsynced, Rejected uint64
	HitsDealt, HitsTaken      uint64
	Damage                    uint64
	HardTicks                 uint64
	Claims, Transfers         uint64
	PacketsIn                 uint64
}

func newDiag(rival physics.ObjectID) *Diag { return &Diag{rival: rival} }

// tickUpdate records one tick: the rival's correction error, the age of its
// newest state, movement, the state loss every lossEvery and every
// SampleEvery of wall time a graph sample.
func (d *Diag) tickUpdate(m *ragsync.Match, s *p2p.Session, now clocksync.GameTime, wall time.Time, seqs *seqCounter) {
	st := m.Stats()
	d.last = MatchStatsView{Ticks: st.Ticks, Unsynced: st.Unsynced, Rejected: st.Rejected,
		HitsDealt: st.Replicator.HitsDealt, HitsTaken: st.Replicator.HitsTaken, Damage: st.Replicator.Damage,
		HardTicks: st.Replicator.Correction.HardTicks, Claims: st.Replicator.Claims, Transfers: st.Replicator.Transfers,
		PacketsIn: st.Replicator.PacketsIn}
	if d.win.ticks == 0 {
		d.win.hardTicks, d.win.states, d.win.start = d.last.HardTicks, d.last.PacketsIn, wall
	}
	if d.total.ticks == 0 {
		d.total.hardTicks, d.total.states, d.total.start = d.last.HardTicks, d.last.PacketsIn, wall
		d.lossStart, d.nextSample = wall, wall
	}
	d.win.ticks++
	d.total.ticks++
	if !d.haveStatesIn || d.last.PacketsIn != d.statesIn {
		d.statesIn, d.statesInAt, d.haveStatesIn = d.last.PacketsIn, now, true
	}
	d.statesSilent = max(0, now.Sub(d.statesInAt))

	// Correction error of the rival's bodies (measured by its corrector
	// before it corrected this tick).
	if d.quiet > 0 {
		d.quiet--
	}
	if c := m.Replicator().Corrector(d.rival); c != nil && c.HasTarget() {
		cs := c.Stats()
		var sq, mx float64
		for i := range cs.Bodies {
			e := cs.Error[i]
			sq += e * e
			mx = math.Max(mx, e)
		}
		if cs.Bodies > 0 {
			rms := math.Sqrt(sq / float64(cs.Bodies))
			d.curErr = [2]float64{rms, mx}
			for i := 0; i < cs.Bodies && d.quiet == 0; i++ {
				d.win.err.add(cs.Error[i])
				d.total.err.add(cs.Error[i])
			}
		}
		// A new state of the rival arrived: its age, from the game clock.
		if _, sentAt := c.Target(0); !d.haveSentAt || sentAt != d.lastSentAt {
			age := now.Sub(sentAt)
			if age >= 0 && age < 10*time.Second {
				if d.haveSentAt {
					diff := math.Abs(float64(age - d.prevAge))
					d.ageJitter += (diff - d.ageJitter) / 16
				}
				d.prevAge, d.lastAge = age, age
				d.win.age.add(age)
				d.total.age.add(age)
			}
			d.lastSentAt, d.haveSentAt = sentAt, true
		}
	}
	d.countLoss(seqs, wall)

	// How far each fighter got from its start, in this peer's world.
	w := m.World()
	for i, id := range Objects {
		p, _ := w.Object(id).Transform(0)
		if !d.haveStart {
			d.startPos[i] = p
		}
		d.moved[i] = math.Max(d.moved[i], p.Sub(d.startPos[i]).Len())
	}
	d.haveStart = true

	if !wall.Before(d.nextSample) {
		ls := s.Stats()
		d.graph[d.n%GraphLen] = Sample{RTT: ls.RTT.Smoothed, Jitter: ls.Jitter, StateAge: d.lastAge,
			Loss: math.Max(ls.LossRecent, d.stateLoss)}
		d.n++
		d.nextSample = d.nextSample.Add(SampleEvery)
		if d.nextSample.Before(wall) { // the game stalled: no backlog of samples
			d.nextSample = wall.Add(SampleEvery)
		}
	}
}

// countLoss closes the state-loss window every lossEvery of wall time:
// the share of the numbers the rival used that did not arrive, and the
// rate at which it sent.
func (d *Diag) countLoss(c *seqCounter, wall time.Time) {
	if c == nil || !c.have {
		return
	}
	if !d.seqStarted {
		d.seqStarted = true
		d.lossSent, d.lossGot = c.sent, c.got
		d.lossStart = wall
		d.totalSent, d.totalGot = c.sent, c.got
		return
	}
	el := wall.Sub(d.lossStart)
	if el < lossEvery {
		return
	}
	sent, got := c.sent-d.lossSent, c.got-d.lossGot
	if sent > 0 {
		d.stateLoss = math.Max(0, math.Min(1, 1-float64(got)/float64(sent)))
	}
	d.stateRate = float64(sent) / el.Seconds()
	d.lossSent, d.lossGot, d.lossStart = c.sent, c.got, wall
	d.totalSentNow, d.totalGotNow = c.sent, c.got
}

// roundReset keeps the teleports of a new round (both players reset their
// own objects, a round trip apart) out of the correction-error figures for
// a second: they are the round's reset, not the netcode's error. The HUD's
// current error still shows them.
func (d *Diag) roundReset() { d.quiet = int(ticksPerSec) }

// Graph copies the graph's samples, oldest first, into dst and returns it.
func (d *Diag) Graph(dst []Sample) []Sample {
	dst = dst[:0]
	n := min(d.n, GraphLen)
	for i := d.n - n; i < d.n; i++ {
		dst = append(dst, d.graph[i%GraphLen])
	}
	return dst
}

// CurrentError returns the rms and max position error, in m, of the rival's
// bodies at the last tick.
func (d *Diag) CurrentError() (rms, max float64) { return d.curErr[0], d.curErr[1] }

// StateAge returns the age of the rival's newest state and its jitter.
func (d *Diag) StateAge() (age, jitter time.Duration) {
	return d.lastAge, time.Duration(d.ageJitter)
}

// StateLoss is the share of the states the rival sent over the last second
// (by its sequence numbers) that did not arrive.
func (d *Diag) StateLoss() float64 { return d.stateLoss }

// StateRate is how many states a second the rival sent over the last
// second: 60 when it ticks at full speed.
func (d *Diag) StateRate() float64 { return d.stateRate }

// MatchStateLoss is the share of the rival's states lost over the whole
// match so far.
func (d *Diag) MatchStateLoss() float64 {
	sent, got := d.totalSentNow-d.totalSent, d.totalGotNow-d.totalGot
	if sent == 0 || d.totalSentNow < d.totalSent {
		return 0
	}
	return math.Max(0, 1-float64(got)/float64(sent))
}

// closeWindow returns the 5 s figures and starts a new window.
func (d *Diag) closeWindow(wall time.Time) (err errAcc, age ageAcc, hardPerSec float64) {
	w := d.win
	if secs := wall.Sub(w.start).Seconds(); w.ticks > 0 && secs > 0 {
		hardPerSec = float64(d.last.HardTicks-w.hardTicks) / secs
	}
	d.hardPerSec = hardPerSec
	d.win = window{}
	return w.err, w.age, hardPerSec
}

// HardSnapsPerSec is the rate of hard corrections of the rival over the
// last log window.
func (d *Diag) HardSnapsPerSec() float64 { return d.hardPerSec }

// Summary is one player's figures, for the log and the final report.
type Summary struct {
	Peer        string  `json:"peer"`
	PeerID      int     `json:"peer_id"`
	Role        string  `json:"role"`
	Room        string  `json:"room,omitempty"`
	Status      string  `json:"status"`
	Seconds     float64 `json:"seconds"`
	Transport   string  `json:"transport"`
	Path        string  `json:"path"` // human description: direct / relayed (TURN) / TCP relay
	LocalCand   string  `json:"local_candidate"`
	RemoteCand  string  `json:"remote_candidate"`
	Switches    int     `json:"transport_switches"`
	ConnectMs   float64 `json:"connect_ms"` // from pairing to running (p2p Stats.ConnectTime)
	RTTMs       float64 `json:"rtt_ms"`     // smoothed
	RTTMinMs    float64 `json:"rtt_min_ms"`
	RTTP95Ms    float64 `json:"rtt_p95_ms"`
	JitterMs    float64 `json:"jitter_ms"`
	LinkLossPct float64 `json:"link_loss_pct"`
	StateAgeMs  float64 `json:"state_age_ms"` // mean age of the rival's states on arrival
	StateAgeMax float64 `json:"state_age_max_ms"`
	StateLoss   float64 `json:"state_loss_pct"` // over the match, by the rival's sequence numbers
	ClockOffMs  float64 `json:"clock_offset_ms"`
	ClockUncMs  float64 `json:"clock_uncertainty_ms"`
	ClockSynced bool    `json:"clock_synced"`
	TxPktS      float64 `json:"tx_packets_per_s"`
	RxPktS      float64 `json:"rx_packets_per_s"`
	TxBytesS    float64 `json:"tx_bytes_per_s"`
	RxBytesS    float64 `json:"rx_bytes_per_s"`
	ErrRMSm     float64 `json:"rival_error_rms_m"`
	ErrMaxm     float64 `json:"rival_error_max_m"`
	HardPerSec  float64 `json:"hard_snaps_per_s"`
	HitsDealt   uint64  `json:"hits_dealt"`
	HitsTaken   uint64  `json:"hits_taken"`
	Damage      uint64  `json:"damage_taken"`
	Transfers   uint64  `json:"prop_transfers"`
	Ticks       uint64  `json:"ticks"`
	Rejected    uint64  `json:"rejected_packets"`
	// StatesApplied counts the rival's object states that became
	// correction targets.
	StatesApplied uint64 `json:"states_applied"`
	// Moved is how far each fighter (1, 2) got from its start, in metres,
	// in this peer's world.
	Moved   [2]float64 `json:"fighter_moved_m"`
	Rounds  []string   `json:"rounds,omitempty"`
	Round   uint32     `json:"round"`
	Impair  string     `json:"impairment,omitempty"`
	LastErr string     `json:"last_error,omitempty"`

	// How the session went through faults (see p2p.Stats).
	ViaTURN             bool   `json:"webrtc_via_turn"`
	WebRTCRenewals      uint64 `json:"webrtc_renewals"`
	SignalingReconnects uint64 `json:"signaling_reconnects"`
	RelayRejected       uint64 `json:"relay_rejected"`
	EventsMerged        uint64 `json:"events_merged"`
	// DisconnectedAtUnixMs is when the game saw the session end with the
	// rival disconnected (Unix milliseconds; 0 if it did not).
	DisconnectedAtUnixMs int64 `json:"disconnected_at_unix_ms,omitempty"`
	// RivalRejoins counts the times the rival's process came back after
	// dropping (a crash, a reload) and the match resumed; Resumed says
	// this player took its seat back (see resume.go).
	RivalRejoins int  `json:"rival_rejoins"`
	Resumed      bool `json:"resumed,omitempty"`
	// Timeline is the session's events in order (the first 256).
	Timeline []TimelineEvent `json:"timeline,omitempty"`
	// HP and KOs are this player's own fighter's (as it decided them);
	// FeedSent the bytes it uploaded to the spectator feed, Spectators
	// how many watch.
	HP         int    `json:"hp"`
	KOs        int    `json:"kos"`
	FeedSent   uint64 `json:"feed_sent_bytes,omitempty"`
	Spectators int    `json:"spectators,omitempty"`
}

// TimelineEvent is one session event (p2p.Event) as the game saw it.
type TimelineEvent struct {
	UnixMs    int64  `json:"unix_ms"` // wall clock when the game loop read it
	AtMs      int64  `json:"at_ms"`   // the session's time of the event (since Connect)
	Kind      string `json:"kind"`    // p2p.EventKind
	Transport string `json:"transport,omitempty"`
	From      string `json:"from,omitempty"` // transport-changed: the previous transport
	Reason    string `json:"reason,omitempty"`
	Merged    int    `json:"merged,omitempty"`
}

// fill sets the link figures of sum from the session's statistics.
func fillLink(sum *Summary, ls *p2p.Stats) {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	sum.Transport = ls.Transport.String()
	sum.Path = PathOf(ls)
	sum.LocalCand, sum.RemoteCand = ls.LocalCandidate.String(), ls.RemoteCandidate.String()
	sum.Switches = ls.Switches
	sum.ConnectMs = ms(ls.ConnectTime)
	sum.ViaTURN = ls.Transport == p2p.TransportWebRTC && ls.WebRTCViaTURN()
	sum.WebRTCRenewals, sum.SignalingReconnects = ls.WebRTCRenewals, ls.SignalingReconnects
	sum.RelayRejected, sum.EventsMerged = ls.RelayRejected, ls.EventsMerged
	sum.RTTMs, sum.RTTMinMs, sum.RTTP95Ms = ms(ls.RTT.Smoothed), ms(ls.RTT.Min), ms(ls.RTT.P95)
	sum.JitterMs = ms(ls.Jitter)
	sum.LinkLossPct = 100 * ls.Loss
	sum.ClockOffMs, sum.ClockUncMs, sum.ClockSynced = ms(ls.ClockOffset), ms(ls.ClockUncertainty), ls.ClockSynced
}

// PathOf describes how the packets travel, plainly.
func PathOf(ls *p2p.Stats) string {
	switch ls.Transport {
	case p2p.TransportTCP:
		if ls.RelayWebSocket {
			return "relay (WebSocket) through the signaling server"
		}
		return "TCP relay through the signaling server"
	case p2p.TransportWebRTC:
		if ls.LocalCandidate == p2p.CandidateRelay || ls.RemoteCandidate == p2p.CandidateRelay {
			return "WebRTC, RELAYED (TURN)"
		}
		return fmt.Sprintf("WebRTC, direct (%v <-> %v)", ls.LocalCandidate, ls.RemoteCandidate)
	}
	return "no transport"
}

// String is the one-line human form used in the log and the final report.
// A player that never had a session (no rival paired, the server
// unreachable) has no link figures: it says "no rival" and its status.
func (s Summary) String() string {
	var b strings.Builder
	if s.Role == "" {
		fmt.Fprintf(&b, "%s: no rival (%s)", s.Peer, s.Status)
		if s.Impair != "" {
			fmt.Fprintf(&b, "; impairment %s", s.Impair)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%s (peer %d, %s): %s; rtt %.2f ms (min %.2f, p95 %.2f), jitter %.2f ms, link loss %.1f%%; ",
		s.Peer, s.PeerID, s.Role, s.Path, s.RTTMs, s.RTTMinMs, s.RTTP95Ms, s.JitterMs, s.LinkLossPct)
	fmt.Fprintf(&b, "rival states %.1f ms old (max %.1f), %.1f%% missing; clock offset %+.3f +/- %.3f ms; ",
		s.StateAgeMs, s.StateAgeMax, s.StateLoss, s.ClockOffMs, s.ClockUncMs)
	fmt.Fprintf(&b, "tx %.0f pkt/s %.1f kB/s, rx %.0f pkt/s %.1f kB/s; ", s.TxPktS, s.TxBytesS/1000, s.RxPktS, s.RxBytesS/1000)
	fmt.Fprintf(&b, "rival error rms %.3f m, max %.3f m, hard snaps %.2f/s; hits dealt %d, taken %d; fighters moved %.2f m / %.2f m",
		s.ErrRMSm, s.ErrMaxm, s.HardPerSec, s.HitsDealt, s.HitsTaken, s.Moved[0], s.Moved[1])
	if s.Impair != "" {
		fmt.Fprintf(&b, "; impairment %s", s.Impair)
	}
	return b.String()
}
