package p2p

import (
	"fmt"
	"testing"
	"time"
)

const ms = time.Millisecond

func testPolicyConfig() policyConfig {
	return policyConfig{PingInterval: defaultPingInterval, StandbyPingInterval: defaultStandbyPingInterval,
		FailoverAfter: defaultFailoverAfter, SwitchMargin: defaultSwitchMargin}
}

// policySim drives an offerer policy through a timeline in 10 ms ticks, as
// the session loop does: probes when the policy says they are due, answers
// one round trip later when the path carries them and the peer runs,
// local stalls as gaps between ticks.
type policySim struct {
	p        offererPolicy
	now      time.Duration
	rtt      [2]time.Duration
	slower   [2]func(t time.Duration) time.Duration // added to the path's round trip at t (nil: none)
	dead     [2]func(t time.Duration) bool          // the path drops everything at t
	paused   func(t time.Duration) bool             // the peer does not run at t
	stalled  func(t time.Duration) bool             // this process does not run at t
	inflight []simProbe
	switches []string
	ran      time.Duration // when the loop last ran
}

type simProbe struct {
	k          TransportKind
	sent, back time.Duration
}

func newPolicySim(active TransportKind) *policySim {
	never := func(time.Duration) bool { return false }
	s := &policySim{rtt: [2]time.Duration{20 * ms, 30 * ms}, dead: [2]func(time.Duration) bool{never, never}, paused: never, stalled: never}
	s.p.cfg = testPolicyConfig()
	s.now = 10 * time.Second
	for _, k := range []TransportKind{TransportWebRTC, TransportTCP} {
		s.p.path(k).setUp(s.now, true)
	}
	s.p.switched(s.now-time.Minute, active)
	return s
}

// run advances to end.
func (s *policySim) run(end time.Duration) {
	for s.now < end {
		s.now += 10 * ms
		if s.stalled(s.now) {
			continue
		}
		// A loop that did not run for a while notices it now.
		if st := s.lastRun(); s.now-st > tickInterval+stallSlack {
			s.p.stalled(st, s.now)
		}
		s.ran = s.now
		// Answers that arrived meanwhile.
		keep := s.inflight[:0]
		for _, pr := range s.inflight {
			if pr.back <= s.now {
				s.p.setRTT(pr.k, s.rtt[pr.k.idx()])
				s.p.answered(pr.k, s.now, pr.sent, s.now-pr.sent)
				continue
			}
			keep = append(keep, pr)
		}
		s.inflight = keep
		s.p.observe(s.now)
		if k, why := s.p.decide(s.now); k != TransportUnknown {
			s.switches = append(s.switches, fmt.Sprintf("%v at %v: %s", k, s.now, why))
			s.p.switched(s.now, k)
			s.p.switches++
		}
		for _, k := range []TransportKind{TransportWebRTC, TransportTCP} {
			if !s.p.probeDue(s.now, k, false) {
				continue
			}
			s.p.path(k).probeSent(s.now)
			if s.dead[k.idx()](s.now) {
				continue
			}
			// The peer answers when it runs: at once, or when it wakes up
			// (a stopped process answers everything on waking).
			half := s.rtt[k.idx()] / 2
			if f := s.slower[k.idx()]; f != nil {
				half += f(s.now) / 2
			}
			at := s.now + half
			for s.paused(at) {
				at += 10 * ms
			}
			back := at + half
			if !s.dead[k.idx()](back) {
				s.inflight = append(s.inflight, simProbe{k, s.now, back})
			}
		}
	}
}

func (s *policySim) lastRun() time.Duration {
	if s.ran == 0 {
		return s.now - 10*ms
	}
	return s.ran
}

func between(from, to time.Duration) func(time.Duration) bool {
	return func(t time.Duration) bool { return t >= from && t < to }
}

// every returns a predicate true for d out of every period, from start to end.
func every(start, end, period, d time.Duration) func(time.Duration) bool {
	return func(t time.Duration) bool {
		return t >= start && t < end && (t-start)%period < d
	}
}

func TestOffererPolicyTimelines(t *testing.T) {
	const t0 = 10 * time.Second
	for _, c := range []struct {
		name     string
		active   TransportKind
		setup    func(s *policySim)
		switches int
		to       TransportKind // the active path at the end
	}{
		{"steady", TransportWebRTC, func(s *policySim) {}, 0, TransportWebRTC},
		{"peer paused 2 s", TransportWebRTC, func(s *policySim) { s.paused = between(t0+time.Second, t0+3*time.Second) }, 0, TransportWebRTC},
		{"peer paused 2 s on tcp", TransportTCP, func(s *policySim) {
			s.rtt[0] = 60 * ms // tcp pings better: it stays there
			s.paused = between(t0+time.Second, t0+3*time.Second)
		}, 0, TransportTCP},
		{"peer paused 0.5 s every 5 s", TransportWebRTC, func(s *policySim) {
			s.paused = every(t0+time.Second, t0+60*time.Second, 5*time.Second, 500*ms)
		}, 0, TransportWebRTC},
		{"own stalls 0.5 s every 5 s", TransportWebRTC, func(s *policySim) {
			s.stalled = every(t0+time.Second, t0+60*time.Second, 5*time.Second, 500*ms)
		}, 0, TransportWebRTC},
		{"own stall 0.42 s", TransportWebRTC, func(s *policySim) { s.stalled = between(t0+time.Second, t0+time.Second+420*ms) }, 0, TransportWebRTC},
		{"webrtc dies", TransportWebRTC, func(s *policySim) { s.dead[0] = between(t0+time.Second, t0+time.Hour) }, 1, TransportTCP},
		{"webrtc dies and comes back", TransportWebRTC, func(s *policySim) { s.dead[0] = between(t0+time.Second, t0+20*time.Second) }, 2, TransportWebRTC},
		{"udp blocked 60 s", TransportWebRTC, func(s *policySim) { s.dead[0] = between(t0+time.Second, t0+61*time.Second) }, 2, TransportWebRTC},
		{"tcp dies while standby", TransportWebRTC, func(s *policySim) { s.dead[1] = between(t0+time.Second, t0+time.Hour) }, 0, TransportWebRTC},
		{"both die", TransportWebRTC, func(s *policySim) {
			s.dead[0] = between(t0+time.Second, t0+time.Hour)
			s.dead[1] = between(t0+time.Second, t0+time.Hour)
		}, 0, TransportWebRTC},
		{"webrtc pings 30 ms slower for 1 s", TransportWebRTC, func(s *policySim) {
			s.slower[0] = func(t time.Duration) time.Duration {
				if t >= t0+5*time.Second && t < t0+6*time.Second {
					return 30 * ms
				}
				return 0
			}
		}, 0, TransportWebRTC},
		{"webrtc pings 30 ms slower for good", TransportWebRTC, func(s *policySim) {
			s.slower[0] = func(t time.Duration) time.Duration {
				if t >= t0+5*time.Second {
					return 30 * ms
				}
				return 0
			}
		}, 1, TransportTCP},
		{"webrtc dies while the peer is paused", TransportWebRTC, func(s *policySim) {
			s.paused = between(t0+time.Second, t0+3*time.Second)
			s.dead[0] = between(t0+2*time.Second, t0+time.Hour)
		}, 1, TransportTCP},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newPolicySim(c.active)
			c.setup(s)
			s.run(t0 + 70*time.Second)
			if len(s.switches) != c.switches || s.p.active != c.to {
				t.Errorf("%d switches, on %v; want %d, on %v: %q", len(s.switches), s.p.active, c.switches, c.to, s.switches)
			}
		})
	}
}

// A failover happens within FailoverAfter plus a few pings of the path
// dying, and only once the other path has answered a probe sent after.
func TestOffererPolicyFailoverTime(t *testing.T) {
	const t0 = 10 * time.Second
	s := newPolicySim(TransportWebRTC)
	s.dead[0] = between(t0+time.Second, t0+time.Hour)
	s.run(t0 + 3*time.Second)
	if len(s.switches) != 1 {
		t.Fatalf("switches %q", s.switches)
	}
	if took := s.p.lastSwitch - (t0 + time.Second); took > s.p.cfg.FailoverAfter+3*s.p.cfg.PingInterval {
		t.Errorf("failover %v after the path died: %s", took, s.switches[0])
	}
}

func TestPathEvidence(t *testing.T) {
	p := &pathPolicy{cfg: testPolicyConfig()}
	const t0 = time.Second
	e := p.path(TransportWebRTC)
	e.setUp(t0, true)
	e.probeSent(t0)
	e.probeSent(t0 + 100*ms)
	e.probeSent(t0 + 200*ms)
	if f, _, _ := p.failed(t0+250*ms, TransportWebRTC); f {
		t.Error("failed within the grace")
	}
	if f, since, _ := p.failed(t0+301*ms, TransportWebRTC); !f || since != t0 {
		t.Errorf("not failed past the grace: %v %v", f, since)
	}
	// An answer to a later probe resolves the earlier ones.
	p.setRTT(TransportWebRTC, 20*ms)
	if p.answered(TransportWebRTC, t0+320*ms, t0+100*ms, 220*ms) != true {
		t.Error("a 220 ms answer within the grace is not a measurement")
	}
	if e.nPending != 1 || e.lastAnsweredSent != t0+100*ms {
		t.Errorf("pending %d, last answered %v", e.nPending, e.lastAnsweredSent)
	}
	// A stall that overlaps the grace of the probe sent at t0+200ms excuses it.
	p.stalled(t0+400*ms, t0+900*ms)
	if f, _, why := p.failed(t0+950*ms, TransportWebRTC); f {
		t.Errorf("failed by a probe the stall excuses: %s", why)
	}
	// So does one sent within wakeGrace after it, and its answer is no
	// sample of the path.
	e.probeSent(t0 + 950*ms)
	if f, _, why := p.failed(t0+1300*ms, TransportWebRTC); f {
		t.Errorf("failed by a probe sent right after the stall: %s", why)
	}
	if p.answered(TransportWebRTC, t0+1350*ms, t0+950*ms, 40*ms) {
		t.Error("a round trip started right after the stall is a measurement")
	}
	e.probeSent(t0 + 1950*ms)
	if f, since, _ := p.failed(t0+2300*ms, TransportWebRTC); !f || since != t0+1950*ms {
		t.Errorf("a probe after the stall's wake grace is not judged: %v %v", f, since)
	}
	e.setUp(t0+3*time.Second, false)
	if f, _, why := p.failed(t0+3*time.Second, TransportWebRTC); !f || why != "webrtc closed" {
		t.Errorf("closed path: %v %q", f, why)
	}
}

func TestAnswererPolicy(t *testing.T) {
	p := &answererPolicy{}
	for _, k := range []TransportKind{TransportWebRTC, TransportTCP} {
		p.path(k).setUp(0, true)
	}
	for i, c := range []struct {
		epoch        uint32
		k            TransportKind
		changed, ack bool
		active       TransportKind
	}{
		{1, TransportWebRTC, true, true, TransportWebRTC},
		{1, TransportWebRTC, false, true, TransportWebRTC}, // a repeat: acknowledged again
		{2, TransportTCP, true, true, TransportTCP},
		{1, TransportWebRTC, false, false, TransportTCP}, // an old one: ignored
		{3, TransportKind(7), false, false, TransportTCP},
		{3, TransportTCP, false, true, TransportTCP}, // newer epoch, same transport
	} {
		changed, ack := p.onSelect(time.Duration(i)*time.Second, c.epoch, c.k)
		if changed != c.changed || ack != c.ack || p.active != c.active {
			t.Errorf("select %d %v: changed %v ack %v active %v; want %v %v %v", c.epoch, c.k, changed, ack, p.active, c.changed, c.ack, c.active)
		}
	}
	p.path(TransportTCP).setUp(time.Minute, false)
	if k := p.sendPath(); k != TransportWebRTC {
		t.Errorf("active closed: sends on %v", k)
	}
}

func TestMergeEvents(t *testing.T) {
	ch := func(from, to TransportKind) Event {
		return Event{Kind: EventTransportChanged, From: from, Transport: to}
	}
	q := []Event{
		ch(TransportWebRTC, TransportTCP),
		{Kind: EventInterrupted},
		{Kind: EventResumed, Silence: time.Second},
		ch(TransportTCP, TransportWebRTC),
		ch(TransportWebRTC, TransportTCP),
		{Kind: EventTransportDown, Transport: TransportWebRTC},
		{Kind: EventTransportUp, Transport: TransportWebRTC},
		{Kind: EventDisconnected},
	}
	out, merged, dropped := mergeEvents(append([]Event(nil), q...), 5)
	if len(out) != 5 || merged != 3 || dropped != 0 {
		t.Fatalf("%d events, %d merged, %d dropped: %v", len(out), merged, dropped, out)
	}
	if out[0].Kind != EventTransportChanged || out[0].From != TransportWebRTC || out[0].Transport != TransportTCP || out[0].Merged != 0 {
		t.Errorf("first %v", out[0])
	}
	if out[1].Kind != EventResumed || out[1].Silence != time.Second || out[1].Merged != 1 {
		t.Errorf("second %v", out[1])
	}
	if out[2].Kind != EventTransportChanged || out[2].From != TransportTCP || out[2].Transport != TransportTCP || out[2].Merged != 1 {
		t.Errorf("third %v", out[2])
	}
	if out[4].Kind != EventDisconnected {
		t.Errorf("last %v", out[4])
	}
	out, _, _ = mergeEvents(append([]Event(nil), q...), 3)
	if len(out) != 3 || out[2].Kind != EventDisconnected {
		t.Errorf("down to 3: %v", out)
	}
}
