package p2p

import (
	"fmt"
	"time"

	"github.com/ragsync/ragsync/p2p/internal/wire"
	"github.com/ragsync/ragsync/signaling"
)

// rolePolicy is this peer's part in choosing the transport, chosen once,
// at start, for its role: the offerer decides (offererRole), the answerer
// follows the offerer's selects (answererRole). The session asks it
// instead of comparing its role. Like the policies of policy.go, the role
// policies hold no locks and start no goroutines: the session calls them
// with Session.mu held and carries out what they return (messages to send,
// a transport to start on); the tests drive them with made-up timelines.
type rolePolicy interface {
	// paths is the evidence about the two paths, which both roles keep.
	paths() *pathPolicy
	// leader reports whether this peer leads: it is the clock leader and
	// the relay's TLS client, sends the offer and renegotiates WebRTC.
	leader() bool
	// startsEarly reports whether the connecting phase may end with these
	// links (before the others resolve).
	startsEarly(links *[2]linkState) bool
	// probesLate reports whether a link of kind k that opens while the
	// others are probed is probed too.
	probesLate(k TransportKind) bool
	// afterProbes says what follows a probing round at now (done: every
	// probe was answered or lost).
	afterProbes(now time.Duration, links *[2]linkState, done bool) probeOutcome
	// overdue reports whether the answerer waited too long at now for the
	// offerer's choice.
	overdue(now time.Duration) bool
	// choose makes k the active path at now (again: switch counts it as a
	// switch) and returns the select to send, if this role sends one.
	choose(now time.Duration, k TransportKind, again bool) (wire.Control, bool)
	// decide returns the path to switch to at now, or TransportUnknown.
	decide(now time.Duration) (TransportKind, string)
	// selectDue returns the select to repeat at now, if it is not
	// acknowledged and due (or force).
	selectDue(now time.Duration, force bool) (wire.Control, bool)
	// onSelect handles the offerer's select (epoch, k): adopt says to make
	// k the active transport, ack to acknowledge it; ok is false for a
	// role that takes no select (a protocol error by the peer).
	onSelect(now time.Duration, epoch uint32, k TransportKind) (adopt, ack, ok bool)
	// onSelectAck handles the answerer's acknowledgement of epoch.
	onSelectAck(epoch uint32)
}

// probeOutcome is what a probing round leads to: start on k (with
// reason), wait for the offerer's select (await), give up (fail, why),
// probe the open links again (retry: every probe was lost), or go on
// probing (the zero value).
type probeOutcome struct {
	k      TransportKind
	reason string
	await  bool
	fail   string
	retry  bool
}

// newRolePolicy returns the policy of role. deadline is when the answerer
// gives up waiting for the offerer's choice, and the last moment the
// offerer starts another round of probes when every probe was lost.
func newRolePolicy(role signaling.Role, cfg policyConfig, deadline time.Duration) rolePolicy {
	awaitDeadline := deadline
	if role == signaling.RoleOfferer {
		o := &offererRole{retryUntil: deadline}
		o.cfg = cfg
		return o
	}
	a := &answererRole{awaitDeadline: awaitDeadline}
	a.cfg = cfg
	return a
}

// offererRole decides the active transport: the 3-probe rule at start
// (earlyChoice, initialChoice), offererPolicy.decide afterwards, and tells
// the answerer with select messages under a new epoch each, repeated
// every PingInterval until acknowledged.
type offererRole struct {
	offererPolicy
	retryUntil time.Duration // probe again until then when every probe was lost
	epoch      uint32        // of the last decision
	acked      bool          // the answerer acknowledged epoch
	nextSelect time.Duration
}

func (o *offererRole) paths() *pathPolicy { return &o.pathPolicy }
func (o *offererRole) leader() bool       { return true }

// startsEarly: the offerer does not wait for the relay once WebRTC is
// open, unless TCP is preferred (see earlyChoice).
func (o *offererRole) startsEarly(links *[2]linkState) bool {
	return o.cfg.Prefer != TransportTCP && links[0].up()
}

// probesLate: the offerer started probing WebRTC before the relay opened
// (see tickLinks); a relay that opens before the choice is probed too.
func (o *offererRole) probesLate(k TransportKind) bool { return k == TransportTCP }

func (o *offererRole) afterProbes(now time.Duration, links *[2]linkState, done bool) probeOutcome {
	if !done {
		k, reason := o.earlyChoice(links)
		return probeOutcome{k: k, reason: reason}
	}
	k, reason := o.initialChoice(links)
	if k == TransportUnknown && links[1].state == LinkConnecting {
		// WebRTC lost its probes while the relay is still connecting: wait
		// for the relay (or its deadline, see tick).
		return probeOutcome{}
	}
	if k == TransportUnknown && now < o.retryUntil {
		// A lossy link at the start (30 % of the packets lost each way
		// loses all three probes one time in eight): time remains, probe
		// again rather than give up.
		return probeOutcome{retry: true}
	}
	if k == TransportUnknown {
		return probeOutcome{fail: "every probe was lost"}
	}
	return probeOutcome{k: k, reason: reason}
}

func (o *offererRole) overdue(time.Duration) bool { return false }

func (o *offererRole) choose(now time.Duration, k TransportKind, again bool) (wire.Control, bool) {
	if again {
		o.switches++
	}
	o.epoch++
	o.acked = false
	o.switched(now, k)
	o.nextSelect = now
	return o.selectDue(now, true)
}

func (o *offererRole) selectDue(now time.Duration, force bool) (wire.Control, bool) {
	if o.acked || !force && now < o.nextSelect {
		return wire.Control{}, false
	}
	o.nextSelect = now + o.cfg.PingInterval
	return wire.Control{Kind: wire.CtrlSelect, Epoch: o.epoch, Transport: uint8(o.active)}, true
}

func (o *offererRole) onSelect(time.Duration, uint32, TransportKind) (adopt, ack, ok bool) {
	return false, false, false
}

func (o *offererRole) onSelectAck(epoch uint32) {
	if epoch == o.epoch {
		o.acked = true
	}
}

// answererRole follows the offerer's selects (see answererPolicy) and
// gives up connecting at awaitDeadline.
type answererRole struct {
	answererPolicy
	awaitDeadline time.Duration
}

func (a *answererRole) paths() *pathPolicy             { return &a.pathPolicy }
func (a *answererRole) leader() bool                   { return false }
func (a *answererRole) startsEarly(*[2]linkState) bool { return false }
func (a *answererRole) probesLate(TransportKind) bool  { return false }
func (a *answererRole) overdue(now time.Duration) bool { return now > a.awaitDeadline }
func (a *answererRole) onSelectAck(uint32)             {}
func (a *answererRole) decide(time.Duration) (TransportKind, string) {
	return TransportUnknown, ""
}

func (a *answererRole) afterProbes(now time.Duration, _ *[2]linkState, done bool) probeOutcome {
	if a.overdue(now) {
		return probeOutcome{fail: "the offerer did not choose a transport in time"}
	}
	return probeOutcome{await: done}
}

func (a *answererRole) choose(now time.Duration, k TransportKind, _ bool) (wire.Control, bool) {
	a.switched(now, k)
	return wire.Control{}, false
}

func (a *answererRole) selectDue(time.Duration, bool) (wire.Control, bool) {
	return wire.Control{}, false
}

func (a *answererRole) onSelect(now time.Duration, epoch uint32, k TransportKind) (adopt, ack, ok bool) {
	first := !a.seen
	changed, ack := a.answererPolicy.onSelect(now, epoch, k)
	return first && a.seen || changed, ack, true
}

// earlyChoice lets the offerer start on WebRTC before the probes are
// done. When the relay is not being probed (still connecting, or down),
// it has no evidence to compare with: the offerer starts on WebRTC as soon
// as its data channel is open, whose DTLS handshake (and, without SNAP,
// SCTP's) crossed the path both ways, so a probe round trip would add
// only a ping figure, at the cost of
// a round trip through the peer (in a browser, through the page's one
// thread, behind its frames). Waiting for the relay would cost its connect
// time. Once running, the relay is probed as the standby when it opens,
// and the session moves to it if it pings better (see decide), as after
// any initial choice; so it does while the relay, open, has answered no
// probe yet. With both links probing, or TCP preferred, the
// 3-probe rule decides (initialChoice), except that the offerer starts on
// WebRTC once it answered a probe, unless the relay already answered one
// faster by the switch margin: one answered probe shows the path works,
// and a relay that pings better over the next seconds takes over as after
// any choice.
//
// The other way round, with WebRTC not open (still connecting, or its
// data channel failed) and the relay probed alone, the offerer starts on
// the relay once it answered one probe (unless WebRTC is preferred): on
// a lossy link its next two probes wait for TCP's retransmissions, and
// WebRTC takes over when it opens and pings better, as after any choice.
func (o *offererRole) earlyChoice(links *[2]linkState) (TransportKind, string) {
	w, t := &links[0], &links[1]
	answeredMax := func(ls *linkState) (m time.Duration, ok bool) {
		for _, r := range ls.probe.res[:ls.probe.n] {
			if r > 0 {
				m, ok = max(m, r), true
			}
		}
		return m, ok
	}
	if !w.up() {
		rtt, ok := answeredMax(t)
		if !ok && t.late > 0 {
			rtt, ok = t.late, true // answered after its round ended
		}
		if ok && t.up() && o.cfg.Prefer != TransportWebRTC {
			return TransportTCP, fmt.Sprintf("tcp answered a probe (ping %v) while webrtc is %v: starting on tcp, judging webrtc once it opens", rtt, w.whyNot())
		}
		return TransportUnknown, ""
	}
	if o.cfg.Prefer == TransportTCP {
		return TransportUnknown, ""
	}
	if !t.probe.running && t.probe.n == 0 {
		return TransportWebRTC, fmt.Sprintf("webrtc's data channel is open while tcp is %v: starting on webrtc, judging tcp once it opens", t.whyNot())
	}
	trtt, ok := answeredMax(t)
	if !ok {
		// The relay is open but has answered no probe yet (on a lossy
		// link its probes wait for TCP's retransmissions): it is no
		// better known than a relay still connecting.
		return TransportWebRTC, "webrtc's data channel is open while tcp has answered no probe yet: starting on webrtc, judging tcp in the background"
	}
	if w.probe.n-w.probe.lost < 1 {
		return TransportUnknown, ""
	}
	rtt, _ := answeredMax(w)
	if ok && trtt+max(o.cfg.SwitchMargin, rtt/10) < rtt {
		return TransportUnknown, "" // the 3-probe rule decides
	}
	return TransportWebRTC, fmt.Sprintf("webrtc answered a probe (ping %v) and tcp pinged no better so far: starting on webrtc, judging tcp in the background", rtt)
}

// initialChoice applies the 3-probe rule to the probe results: a transport
// that answered at least one probe is usable; with Config.Prefer set and
// usable, it wins; otherwise the lower 3-probe maximum wins, ties to WebRTC.
func (o *offererRole) initialChoice(links *[2]linkState) (TransportKind, string) {
	usable := func(ls *linkState) bool { return ls.up() && ls.probe.n == 3 && ls.probe.lost < 3 }
	w, t := &links[0], &links[1]
	wu, tu := usable(w), usable(t)
	switch {
	case !wu && !tu:
		return TransportUnknown, ""
	case wu && !tu:
		return TransportWebRTC, fmt.Sprintf("only webrtc works (3-probe ping %v; tcp %v)", w.probe.max, t.whyNot())
	case tu && !wu:
		return TransportTCP, fmt.Sprintf("only tcp works (3-probe ping %v; webrtc %v)", t.probe.max, w.whyNot())
	}
	if p := o.cfg.Prefer; p != TransportUnknown {
		return p, fmt.Sprintf("preferred by config (3-probe ping webrtc %v, tcp %v)", w.probe.max, t.probe.max)
	}
	margin := max(o.cfg.SwitchMargin, w.probe.max/10)
	if t.probe.max+margin < w.probe.max {
		return TransportTCP, fmt.Sprintf("lower 3-probe ping: tcp %v < webrtc %v by more than %v", t.probe.max, w.probe.max, margin)
	}
	if t.probe.max < w.probe.max {
		return TransportWebRTC, fmt.Sprintf("3-probe pings within %v count as a tie, which webrtc wins: webrtc %v, tcp %v", margin, w.probe.max, t.probe.max)
	}
	return TransportWebRTC, fmt.Sprintf("lower or equal 3-probe ping: webrtc %v <= tcp %v", w.probe.max, t.probe.max)
}

func (ls *linkState) whyNot() string {
	switch {
	case ls.state == LinkDisabled:
		return "disabled"
	case ls.state == LinkUp && ls.probe.lost == 3:
		return "lost all 3 probes"
	case ls.err != "":
		return ls.state.String() + ": " + ls.err
	}
	return ls.state.String()
}
