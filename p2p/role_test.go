package p2p

import (
	"testing"
	"time"

	"github.com/ragsync/ragsync/p2p/internal/wire"
	"github.com/ragsync/ragsync/signaling"
)

// The offerer chooses, tells the answerer under a new epoch, repeats the
// select every PingInterval until acknowledged, and takes no select.
func TestOffererRoleSelects(t *testing.T) {
	p := newRolePolicy(signaling.RoleOfferer, testPolicyConfig(), 0)
	if !p.leader() || !p.probesLate(TransportTCP) || p.probesLate(TransportWebRTC) {
		t.Fatal("the offerer leads and probes a late relay")
	}
	var links [2]linkState
	links[0].state, links[1].state = LinkUp, LinkConnecting
	if !p.startsEarly(&links) {
		t.Error("the offerer does not wait for the relay once WebRTC is open")
	}
	if o := p.afterProbes(0, &links, false); o.k != TransportWebRTC {
		t.Errorf("early choice %+v, want webrtc", o)
	}
	c, ok := p.choose(0, TransportWebRTC, false)
	if !ok || c.Kind != wire.CtrlSelect || c.Epoch != 1 || TransportKind(c.Transport) != TransportWebRTC {
		t.Fatalf("choose sent %+v %v, want select epoch 1 webrtc", c, ok)
	}
	if _, ok := p.selectDue(50*time.Millisecond, false); ok {
		t.Error("select repeated before PingInterval")
	}
	if c, ok := p.selectDue(100*time.Millisecond, false); !ok || c.Epoch != 1 {
		t.Errorf("select not repeated after PingInterval: %+v %v", c, ok)
	}
	p.onSelectAck(0) // a stale epoch
	if _, ok := p.selectDue(time.Second, true); !ok {
		t.Error("a stale ack stopped the repeats")
	}
	p.onSelectAck(1)
	if _, ok := p.selectDue(2*time.Second, true); ok {
		t.Error("select repeated after its ack")
	}
	c, _ = p.choose(3*time.Second, TransportTCP, true)
	if c.Epoch != 2 || TransportKind(c.Transport) != TransportTCP {
		t.Errorf("a switch sent %+v, want epoch 2 tcp", c)
	}
	if _, _, ok := p.onSelect(0, 9, TransportTCP); ok {
		t.Error("the offerer took a select")
	}
	links[1].state = LinkConnecting
	if o := p.afterProbes(0, &links, true); o != (probeOutcome{}) {
		t.Errorf("no usable probe while the relay connects: %+v, want to wait", o)
	}
	links[1].state = LinkDown
	if o := p.afterProbes(0, &links, true); o.fail == "" {
		t.Errorf("no usable probe and no relay: %+v, want to give up", o)
	}
}

// The answerer adopts the select of every newer epoch, acknowledges the
// current one, awaits the offerer after its probes, and gives up at its
// deadline.
func TestAnswererRoleFollows(t *testing.T) {
	p := newRolePolicy(signaling.RoleAnswerer, testPolicyConfig(), 10*time.Second)
	var links [2]linkState
	links[0].state = LinkUp
	if p.leader() || p.startsEarly(&links) || p.probesLate(TransportTCP) {
		t.Fatal("the answerer follows")
	}
	if o := p.afterProbes(time.Second, &links, true); !o.await || o.k != TransportUnknown {
		t.Errorf("after its probes: %+v, want to await the offerer", o)
	}
	if o := p.afterProbes(11*time.Second, &links, false); o.fail == "" || !p.overdue(11*time.Second) {
		t.Errorf("past the deadline: %+v, want to give up", o)
	}
	if adopt, ack, ok := p.onSelect(0, 1, TransportWebRTC); !adopt || !ack || !ok {
		t.Errorf("first select: adopt %v ack %v ok %v", adopt, ack, ok)
	}
	if adopt, ack, _ := p.onSelect(0, 1, TransportWebRTC); adopt || !ack {
		t.Errorf("repeated select: adopt %v ack %v, want an ack only", adopt, ack)
	}
	if adopt, ack, _ := p.onSelect(0, 0, TransportTCP); adopt || ack {
		t.Errorf("stale select: adopt %v ack %v, want neither", adopt, ack)
	}
	if adopt, _, _ := p.onSelect(0, 2, TransportTCP); !adopt || p.paths().active != TransportTCP {
		t.Errorf("newer select not adopted")
	}
	if k, _ := p.decide(time.Hour); k != TransportUnknown {
		t.Error("the answerer decided")
	}
	if _, ok := p.selectDue(time.Hour, true); ok {
		t.Error("the answerer sent a select")
	}
}

// The offerer starts on WebRTC once its channel is open while the relay,
// open and probing, has answered no probe yet (on a lossy link its probes
// wait for TCP's retransmissions); once the relay has answered one, a
// WebRTC probe must be answered too, no slower by the switch margin.
func TestOffererStartsOnWebRTCWhileTheRelayIsUnproven(t *testing.T) {
	p := newRolePolicy(signaling.RoleOfferer, testPolicyConfig(), 0)
	var links [2]linkState
	links[0].state, links[1].state = LinkUp, LinkUp
	links[0].probe = probeRound{running: true, outstanding: true}
	links[1].probe = probeRound{running: true, n: 1, lost: 1, outstanding: true}
	if o := p.afterProbes(0, &links, false); o.k != TransportWebRTC {
		t.Errorf("relay unproven: %+v, want webrtc", o)
	}
	links[1].probe = probeRound{running: true, n: 1, res: [3]time.Duration{50 * time.Millisecond}, outstanding: true}
	if o := p.afterProbes(0, &links, false); o.k != TransportUnknown {
		t.Errorf("the relay answered, webrtc did not yet: %+v, want to wait", o)
	}
	links[0].probe = probeRound{running: true, n: 1, res: [3]time.Duration{300 * time.Millisecond}, outstanding: true}
	if o := p.afterProbes(0, &links, false); o.k != TransportUnknown {
		t.Errorf("the relay answered faster: %+v, want the 3-probe rule", o)
	}
	links[0].probe.res[0] = 52 * time.Millisecond
	if o := p.afterProbes(0, &links, false); o.k != TransportWebRTC {
		t.Errorf("webrtc answered as fast: %+v, want webrtc", o)
	}
}

// With WebRTC not open (connecting, or its channel failed), the offerer
// starts on the relay once it answered one probe, however late (a probe
// counted lost whose answer came after ProbeTimeout is a late one on TCP),
// unless WebRTC is preferred.
func TestOffererStartsOnTheRelayWhileWebRTCIsNotOpen(t *testing.T) {
	for _, ws := range []LinkState{LinkConnecting, LinkDown} {
		p := newRolePolicy(signaling.RoleOfferer, testPolicyConfig(), 0)
		var links [2]linkState
		links[0].state, links[1].state = ws, LinkUp
		links[1].probe = probeRound{running: true, n: 1, lost: 1, outstanding: true, sent: [3]time.Duration{7}}
		if o := p.afterProbes(0, &links, false); o.k != TransportUnknown {
			t.Errorf("webrtc %v, relay unanswered: %+v, want to wait", ws, o)
		}
		if !links[1].probe.lateAnswer(7, 1200*time.Millisecond) || links[1].probe.lost != 0 {
			t.Fatalf("the late answer was not counted: %+v", links[1].probe)
		}
		if links[1].probe.lateAnswer(7, time.Second) {
			t.Error("one probe's answer counted twice")
		}
		if o := p.afterProbes(0, &links, false); o.k != TransportTCP {
			t.Errorf("webrtc %v, relay answered late: %+v, want tcp", ws, o)
		}
		// A probe of an earlier round, answered after that round ended,
		// counts too.
		links[1].probe = probeRound{running: true, n: 1, lost: 1, outstanding: true}
		if o := p.afterProbes(0, &links, false); o.k != TransportUnknown {
			t.Errorf("webrtc %v, new round unanswered: %+v, want to wait", ws, o)
		}
		links[1].sentProbe(5)
		if links[1].lateProbe(6, time.Second) || !links[1].lateProbe(5, 2*time.Second) {
			t.Fatal("a late answer to an earlier round's probe was not told apart")
		}
		if o := p.afterProbes(0, &links, false); o.k != TransportTCP {
			t.Errorf("webrtc %v, an earlier round's probe answered late: %+v, want tcp", ws, o)
		}
		cfg := testPolicyConfig()
		cfg.Prefer = TransportWebRTC
		p = newRolePolicy(signaling.RoleOfferer, cfg, 0)
		if o := p.afterProbes(0, &links, false); o.k != TransportUnknown {
			t.Errorf("webrtc %v and preferred: %+v, want to wait", ws, o)
		}
	}
}
