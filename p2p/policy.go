package p2p

import (
	"fmt"
	"time"
)

// The transport policies: which path the session sends on, and when it
// changes. They are plain types driven by the session's clock (every
// method takes now), fed with evidence as method calls, with no locks and
// no goroutines, in the manner of pion/ice's controlling and controlled
// selectors: the session calls them under its lock, and the tests drive
// them directly with made-up timelines.
//
// The evidence about a path is the probes (pings) sent on it and the
// answers (pongs) that came back. A probe is unanswered once it has waited
// longer than its grace period (Config.FailoverAfter plus the path's
// smoothed round trip) without an answer to it or to a later probe on the
// same path. A path fails when it is closed, or when it has an unanswered
// probe that is not excused. A probe is excused when its grace period
// overlaps a stall of the local session loop (the process was not
// scheduled: a GC pause, a stopped process, a busy machine): what the
// local process did not hear while it was not running is no evidence
// against the path, nor is a probe sent within wakeGrace after such a
// stall (the peer's congestion control, which heard nothing from us
// meanwhile, recovers). So is a probe sent before the end of a silence of
// every open path (the peer was paused), or within wakeGrace after it: it
// says nothing about one path. Round trips of the probes excused this way
// are not samples of the path's ping either: right after a stall or a
// pause they measure the catching up, not the path (a few ms on loopback,
// enough to flip the ping comparison).
//
// The offerer switches away from a failed active path only to a path that
// has answered a probe sent after the active path's failure began (its
// oldest unanswered probe): fresh evidence that the other path works now.
// A peer that has paused (a stopped process, a frozen laptop) answers on
// no path, so no path has fresh evidence and nothing switches: the
// session is interrupted, not failed over. To get that evidence quickly,
// the standby path is probed at the active rate (Config.PingInterval)
// while the active path has a probe outstanding for longer than a ping
// interval, and for standbyFastFor after any switch or a path coming up.
// After a switch the session stays on the new path for at least minDwell
// unless that path closes; and switching back to a better path (a lower
// 3-probe ping, Config.Prefer, WebRTC's tie rule) waits for switchBackAfter
// since the last switch and three answered probes in a row on it.

const (
	// minDwell is the least time the session stays on a path after a
	// switch, unless the path closes.
	minDwell = time.Second
	// switchBackAfter is the least time between switches made because
	// another path pings better (not because the active one failed).
	switchBackAfter = 3 * time.Second
	// betterFor is how long TCP must keep pinging better than WebRTC (by
	// the margin, on every decision) before the session leaves WebRTC for
	// it: one slow round trip stays among the last three for a few pings,
	// and on a busy machine one comes every few seconds; a path that
	// really got worse stays worse.
	betterFor = 2 * time.Second
	// standbyFastFor is how long the standby path is probed at the active
	// rate after a switch, or after a path came up.
	standbyFastFor = 3 * time.Second
	// maxPending bounds the unanswered probes remembered per path; older
	// ones are forgotten (the newest are the evidence that matters).
	maxPending = 32
	// maxStalls bounds the local stalls remembered.
	maxStalls = 8
	// wakeGrace: probes sent within this long of the end of a local stall
	// or of a silence of every path are not judged either. A transport's congestion control
	// takes up to a retransmission timeout to send again after the peer
	// went quiet: SCTP's is sctpRTOMax (500 ms) here, a browser's 1 s or
	// more; TCP's is 200 ms or more.
	wakeGrace = time.Second
)

// pathEvidence is what the session knows about one path. The zero value
// is a closed path that never answered.
type pathEvidence struct {
	up     bool
	upAt   time.Duration
	downAt time.Duration

	// pending holds the send times of the probes sent after the newest
	// answered one, oldest first.
	pending  [maxPending]time.Duration
	nPending int

	answered         bool          // some probe was ever answered (since up)
	lastAnsweredSent time.Duration // send time of the newest answered probe
	lastAnswerAt     time.Duration // when that answer came
	streak           int           // answered probes in a row
	last3            [3]time.Duration
	n3, i3           int
	lastProbe        time.Duration // when the newest probe was sent
	probed           bool          // lastProbe is set
	srtt             time.Duration // smoothed round trip, for the grace period
}

// setUp records the path opening or closing at now.
func (e *pathEvidence) setUp(now time.Duration, up bool) {
	if up == e.up {
		return
	}
	e.up = up
	if up {
		*e = pathEvidence{up: true, upAt: now, srtt: e.srtt}
		return
	}
	e.downAt = now
	e.nPending = 0
	e.streak = 0
}

// probeSent records a probe sent at now.
func (e *pathEvidence) probeSent(now time.Duration) {
	if e.nPending == maxPending {
		copy(e.pending[:], e.pending[1:])
		e.nPending--
	}
	e.pending[e.nPending] = now
	e.nPending++
	e.lastProbe, e.probed = now, true
}

// answer records the answer, at now, to the probe sent at sentAt, with
// round trip rtt (srtt is the path's smoothed round trip after it). Every
// probe sent up to sentAt is resolved: a later probe's answer shows the
// path works, whatever became of the earlier ones.
func (e *pathEvidence) answer(now, sentAt, rtt, srtt time.Duration) {
	i := 0
	for i < e.nPending && e.pending[i] <= sentAt {
		i++
	}
	copy(e.pending[:], e.pending[i:e.nPending])
	e.nPending -= i
	if !e.answered || sentAt >= e.lastAnsweredSent {
		e.answered = true
		e.lastAnsweredSent = sentAt
		e.lastAnswerAt = now
	}
	e.streak++
	e.srtt = srtt
}

// sample adds a measured round trip to the last three.
func (e *pathEvidence) sample(rtt time.Duration) {
	e.last3[e.i3] = rtt
	e.i3 = (e.i3 + 1) % 3
	e.n3 = min(e.n3+1, 3)
}

// max3 is the maximum of the last three answered round trips.
func (e *pathEvidence) max3() time.Duration {
	var m time.Duration
	for _, r := range e.last3[:e.n3] {
		m = max(m, r)
	}
	return m
}

// stalls remembers the local loop's recent stalls.
type stalls struct {
	at  [maxStalls][2]time.Duration // [from, to]
	n   int
	end time.Duration // end of the newest stall, if n > 0
}

func (s *stalls) add(from, to time.Duration) {
	if s.n == maxStalls {
		copy(s.at[:], s.at[1:])
		s.n--
	}
	s.at[s.n] = [2]time.Duration{from, to}
	s.n++
	s.end = max(s.end, to)
	if s.n == 1 {
		s.end = to
	}
}

// after returns t, or the end of the newest stall if that is later: the
// start of a silence that does not count the time this process stood
// still.
func (s *stalls) after(t time.Duration) time.Duration {
	if s.n > 0 {
		return max(t, s.end)
	}
	return t
}

// overlaps reports whether [from, to] overlaps a remembered stall.
func (s *stalls) overlaps(from, to time.Duration) bool {
	for _, st := range s.at[:s.n] {
		if from <= st[1] && to >= st[0] {
			return true
		}
	}
	return false
}

// policyConfig is what the policies need of the session's Config.
type policyConfig struct {
	PingInterval, StandbyPingInterval, FailoverAfter time.Duration
	SwitchMargin                                     time.Duration
	Prefer                                           TransportKind
}

// pathPolicy is the part both roles share: evidence per path, local
// stalls, and the verdicts drawn from them.
type pathPolicy struct {
	cfg        policyConfig
	paths      [2]pathEvidence
	stall      stalls
	lastSwitch time.Duration
	active     TransportKind
	silent     bool          // every open path has an unanswered probe (see observe)
	woke       bool          // wokeAt is set
	wokeAt     time.Duration // when the last such silence ended
	late       time.Duration // the local loop's worst lateness within busyWindow of lateAt
	lateAt     time.Duration
}

// busyWindow is how long the local loop's lateness (a busy machine
// scheduling this process late, short of a stall) is remembered.
const busyWindow = 5 * time.Second

// loopLate records that the local loop ran late by d at now (the gap
// since its previous run less its period).
func (p *pathPolicy) loopLate(now, d time.Duration) {
	if d >= p.late || now-p.lateAt > busyWindow {
		p.late, p.lateAt = d, now
	}
}

// busyLate is the local loop's lateness that marks this machine as busy.
const busyLate = 15 * time.Millisecond

// busy reports whether the local loop ran late by busyLate or more at or
// after since (up to now).
func (p *pathPolicy) busy(now, since time.Duration) bool {
	return p.late >= busyLate && p.lateAt >= since && now-p.lateAt <= busyWindow
}

// confirmFor is how long the evidence for a failover must hold before the
// offerer acts on it: a ping interval, plus twice the local loop's recent
// lateness, at most FailoverAfter. On a busy machine (two processes
// starved of CPU on one host) the peer answers both paths late, and the
// answers are read by goroutines scheduled at different times: the
// standby's answer can be read a few tens of milliseconds before the
// active path's, which looks, for that moment, like the active path
// failing while the standby works. Sustained evidence is needed, not a
// moment's.
func (p *pathPolicy) confirmFor(now time.Duration) time.Duration {
	c := p.cfg.PingInterval
	if now-p.lateAt <= busyWindow {
		c += 2 * p.late
	}
	return min(c, p.cfg.FailoverAfter)
}

func (p *pathPolicy) path(k TransportKind) *pathEvidence { return &p.paths[k.idx()] }

// answered records the answer, at now, to the probe sent at sentAt on path
// k, with round trip rtt, and reports whether rtt measures the path: a
// round trip that spans a local stall, or longer than the probe's grace
// (the answer to a probe already judged lost), measures the stall or an
// outage, and is left out of the path's figures (srtt is the smoothed
// round trip the caller keeps, without it).
func (p *pathPolicy) answered(k TransportKind, now, sentAt, rtt time.Duration) bool {
	e := p.path(k)
	if p.silent {
		// The first answer after every path went silent: the peer (or the
		// network) is back. Probes sent before now waited for it.
		p.silent = false
		p.wokeAt, p.woke = now, true
	}
	measured := rtt <= p.grace(e) && !p.stall.overlaps(sentAt-wakeGrace, now) && (!p.woke || sentAt >= p.wokeAt+wakeGrace)
	e.answer(now, sentAt, rtt, e.srtt)
	if measured {
		e.sample(rtt)
	}
	return measured
}

// setRTT sets path k's smoothed round trip (the grace period depends on it).
func (p *pathPolicy) setRTT(k TransportKind, srtt time.Duration) { p.path(k).srtt = srtt }

// grace is how long a probe on e may go unanswered.
func (p *pathPolicy) grace(e *pathEvidence) time.Duration { return p.cfg.FailoverAfter + e.srtt }

// stalled records that the local loop did not run from from to to.
func (p *pathPolicy) stalled(from, to time.Duration) { p.stall.add(from, to) }

// onset returns the send time of the oldest probe on e that is unanswered
// at now and not excused by a local stall.
func (p *pathPolicy) onset(now time.Duration, e *pathEvidence) (time.Duration, bool) {
	g := p.grace(e)
	for _, s := range e.pending[:e.nPending] {
		if now-s <= g {
			break // this one and the newer ones are still within their grace
		}
		// Excused: a probe whose grace overlaps a local stall, and one sent
		// before the end of a silence of every path (a paused peer; see
		// observe): neither is evidence about this path.
		if !p.stall.overlaps(s-wakeGrace, s+g) && (!p.woke || s >= p.wokeAt+wakeGrace) {
			return s, true
		}
	}
	return 0, false
}

// failed reports whether path k has failed at now, and why.
func (p *pathPolicy) failed(now time.Duration, k TransportKind) (bool, time.Duration, string) {
	e := p.path(k)
	if !e.up {
		return true, e.downAt, fmt.Sprintf("%v closed", k)
	}
	if s, ok := p.onset(now, e); ok {
		return true, s, fmt.Sprintf("%v probes unanswered for %v", k, (now - s).Round(time.Millisecond))
	}
	return false, 0, ""
}

// worksSince reports whether path k is open and answered a probe sent at
// or after t.
func (p *pathPolicy) worksSince(k TransportKind, t time.Duration) bool {
	e := p.path(k)
	return e.up && e.answered && e.lastAnsweredSent >= t
}

// healthy reports whether path k is open, answered a probe and has none
// unanswered (unexcused) at now.
func (p *pathPolicy) healthy(now time.Duration, k TransportKind) bool {
	f, _, _ := p.failed(now, k)
	return !f && p.path(k).answered
}

// suspect reports whether path k has had a probe outstanding for longer
// than a ping interval plus its round trip: it may be failing.
func (p *pathPolicy) suspect(now time.Duration, k TransportKind) bool {
	e := p.path(k)
	return e.up && e.nPending > 0 && now-e.pending[0] > p.cfg.PingInterval+e.srtt
}

// probeDue reports whether a probe should be sent on path k at now
// (calibratorDue: the clock calibrator wants a ping). The active path is
// probed at least every PingInterval; the standby every
// StandbyPingInterval, or every PingInterval while the active path is
// suspect and for standbyFastFor after a switch or after it came up.
func (p *pathPolicy) probeDue(now time.Duration, k TransportKind, calibratorDue bool) bool {
	e := p.path(k)
	if !e.up {
		return false
	}
	every := p.cfg.StandbyPingInterval
	if k == p.active {
		if calibratorDue {
			return true
		}
		every = p.cfg.PingInterval
	} else if now-p.lastSwitch < standbyFastFor || now-e.upAt < standbyFastFor ||
		(p.active != TransportUnknown && p.suspect(now, p.active)) {
		every = p.cfg.PingInterval
	}
	return !e.probed || now-e.lastProbe >= every
}

// interrupted reports whether every open path has an unanswered probe:
// the peer (or the whole network) is silent, which no switch can fix.
func (p *pathPolicy) interrupted(now time.Duration) bool {
	any := false
	for i := range p.paths {
		e := &p.paths[i]
		if !e.up {
			continue
		}
		any = true
		if _, ok := p.onset(now, e); !ok {
			return false
		}
	}
	return any
}

// observe notes, at every run of the loop, whether every open path is
// silent (see interrupted): the answers to probes sent before the silence
// ends measure the silence, not the paths.
func (p *pathPolicy) observe(now time.Duration) {
	if !p.silent && p.interrupted(now) {
		p.silent = true
	}
}

// offererPolicy decides the active path (the offerer decides; the answerer
// follows its select messages).
type offererPolicy struct {
	pathPolicy
	switches    int           // after the initial choice (the caller counts them)
	tcpBetter   bool          // TCP pinged better than WebRTC at every decision since tcpBetterAt
	tcpBetterAt time.Duration // (see betterFor)
	failing     bool          // a failover was due at every decision since failingAt
	failingAt   time.Duration // (see confirmFor)
}

// decide returns the path to switch to at now, or TransportUnknown to stay.
func (p *offererPolicy) decide(now time.Duration) (TransportKind, string) {
	a := p.active
	if a == TransportUnknown {
		return TransportUnknown, ""
	}
	o := a.other()
	ae, oe := p.path(a), p.path(o)
	wasBetter := p.tcpBetter
	p.tcpBetter = false // unless this decision finds it better again
	if fail, since, why := p.failed(now, a); fail {
		// A closed path is left at once; a silent one not within minDwell
		// of the last switch.
		if ae.up && p.switches > 0 && now-p.lastSwitch < minDwell {
			return TransportUnknown, ""
		}
		// Fresh evidence: the other path answered a probe sent after the
		// active one's trouble began (for a closed path: within a standby
		// interval before it closed).
		ref := since
		if !ae.up {
			ref = since - p.cfg.StandbyPingInterval - oe.srtt
		}
		if !p.worksSince(o, ref) {
			p.failing = false
			return TransportUnknown, ""
		}
		if ae.up {
			// A silent path: the evidence must hold for confirmFor.
			if !p.failing {
				p.failing, p.failingAt = true, now
			}
			if now-p.failingAt < p.confirmFor(now) {
				return TransportUnknown, ""
			}
		}
		p.failing = false
		return o, "failover: " + why
	}
	p.failing = false
	if !oe.up || !oe.answered || oe.nPending > 0 && p.suspect(now, o) || oe.streak < 3 || oe.n3 < 3 || ae.n3 < 3 ||
		now-p.lastSwitch < switchBackAfter {
		return TransportUnknown, ""
	}
	if pr := p.cfg.Prefer; pr != TransportUnknown {
		if o == pr {
			return o, fmt.Sprintf("preferred %v works again (ping %v)", pr, oe.max3())
		}
		return TransportUnknown, ""
	}
	am, om := ae.max3(), oe.max3()
	margin := max(p.cfg.SwitchMargin, am/10)
	switch {
	case o == TransportWebRTC && om <= am+margin/2:
		// Ties go to WebRTC, as in the initial choice: back to the data
		// channel once it works and pings no worse. Leaving WebRTC needs
		// TCP better by the whole margin, taking it back half of it: the
		// band between keeps pings that hover near the line from flapping.
		return o, fmt.Sprintf("webrtc works and pings no worse: %v vs tcp %v", om, am)
	case om+margin < am:
		if o == TransportTCP {
			if !wasBetter || p.busy(now, p.tcpBetterAt) {
				// A busy machine (the local loop ran late since) makes
				// pion's several goroutines answer later than the relay's
				// one: no evidence about the paths. The 2 s start again.
				p.tcpBetterAt = now
			}
			p.tcpBetter = true
			if now-p.tcpBetterAt < betterFor {
				return TransportUnknown, ""
			}
			p.tcpBetter = false
			return o, fmt.Sprintf("tcp pings better: %v vs %v, for %v", om, am, (now - p.tcpBetterAt).Round(time.Millisecond))
		}
		return o, fmt.Sprintf("%v pings better: %v vs %v", o, om, am)
	}
	return TransportUnknown, ""
}

// switched records that the active path became k at now.
func (p *pathPolicy) switched(now time.Duration, k TransportKind) {
	p.active = k
	p.lastSwitch = now
}

// answererPolicy follows the offerer: it adopts the transport of every
// select with a newer epoch. Selects are accepted only from authenticated
// paths: the WebRTC data channel (DTLS) and the relay once its TLS
// handshake has pinned the peer's certificate (nothing of the session
// crosses the relay before that).
type answererPolicy struct {
	pathPolicy
	epoch uint32
	seen  bool
}

// onSelect handles a select (epoch, transport) and reports whether the
// active transport changed (adopt) and whether to acknowledge it.
func (p *answererPolicy) onSelect(now time.Duration, epoch uint32, k TransportKind) (changed, ack bool) {
	if k != TransportWebRTC && k != TransportTCP {
		return false, false
	}
	if !p.seen || epoch > p.epoch {
		p.seen = true
		p.epoch = epoch
		changed = k != p.active
		p.switched(now, k)
	}
	return changed, epoch == p.epoch
}

// sendPath returns the path the answerer sends on at now: the active one,
// unless it is closed and the other is open (until the offerer's next
// select).
func (p *answererPolicy) sendPath() TransportKind {
	a := p.active
	if a == TransportUnknown || p.path(a).up || !p.path(a.other()).up {
		return a
	}
	return a.other()
}
