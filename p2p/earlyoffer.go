package p2p

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ragsync/ragsync/signaling"
)

// An early offer (see earlyOffers) that is slow to come (a loaded
// machine: a browser's first RTCPeerConnection, its offer and its first
// candidate can take seconds) is not lost: Connect waits for it at most
// earlyOfferWait before it joins, and joins without it after that; the
// offer then goes on its own, as a late early offer (an offer message
// while the player waits, see signaling's Early offers), as soon as it is
// ready, if the player is not paired yet. Paired as the offerer, the
// session adopts it (waiting for it if it is still being made, rather
// than start a second RTCPeerConnection): the offer the server delivered
// needs nothing more; one it did not (an older server refuses an offer
// before the pairing) is sent as the session's offer.

// earlyOfferWait bounds how long Connect and CreateRoom wait for the early
// offer before they join without one (it is sent later, see above).
const earlyOfferWait = 3 * time.Second

// earlyPlan is the early offer Connect makes: its kind, and how long the
// join waits for it. Connect's is the build's (earlyOffers,
// earlyOfferWait); connect takes another, whose gate (nil: none) the
// offer's making waits for before it starts, and whose sentLate (nil:
// none) is called once a late offer went out: the package's tests make
// an offer late that way, and know when the server has it.
type earlyPlan struct {
	kind     offerKind
	wait     time.Duration
	gate     <-chan struct{}
	sentLate func(*signaling.Client)
}

// defaultPlan is Connect's plan of kind.
func defaultPlan(kind offerKind) earlyPlan { return earlyPlan{kind: kind, wait: earlyOfferWait} }

// earlyOfferFor bounds the making of an early offer.
const earlyOfferFor = 20 * time.Second

// pendingOffer is an early offer being made (nil: none is).
type pendingOffer struct {
	plan   earlyPlan
	done   chan struct{} // closed when e is set
	e      *earlyOffer   // nil: it failed
	cancel context.CancelFunc

	mu      sync.Mutex
	joined  bool // it went with the join (signaling.Client.SetOffer)
	late    bool // it went as a late early offer
	refused bool // the server refused the late one (before the pairing)
	paired  bool // the pairing came: nothing is sent any more
	stop    chan struct{}
}

// startEarlyOffer makes an early offer of kind in the background (where
// the build sends one, see earlyOffers), if WebRTC is on.
func startEarlyOffer(ctx context.Context, cfg Config, id func() (*identity, error), plan earlyPlan) *pendingOffer {
	if plan.kind == offerNone || cfg.DisableWebRTC {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), earlyOfferFor)
	p := &pendingOffer{plan: plan, done: make(chan struct{}), cancel: cancel, stop: make(chan struct{})}
	start := time.Now()
	go func() {
		defer cancel()
		if plan.gate != nil {
			select {
			case <-plan.gate:
			case <-ctx.Done():
			}
		}
		e, err := prepareOffer(ctx, &cfg, id)
		if err != nil {
			cfg.Logger.Warn("p2p: no early offer: pairing will take longer", "err", err, "after", time.Since(start))
		}
		p.e = e
		close(p.done)
	}()
	return p
}

// ready returns the offer if it is made (nil: not yet, or it failed).
func (p *pendingOffer) ready() *earlyOffer {
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return p.e
	default:
		return nil
	}
}

// made reports whether the making has ended (with an offer or not).
func (p *pendingOffer) made() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for the offer at most d (nil: it failed, or it is not made
// within d).
func (p *pendingOffer) wait(ctx context.Context, d time.Duration) *earlyOffer {
	if p == nil {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return p.e
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// withJoin hands the offer, if it is made, to cl's next join (as a spare
// one, signaling.Client.SetSpareOffer, if it is).
func (p *pendingOffer) withJoin(cl *signaling.Client) {
	if e := p.ready(); e != nil {
		p.mu.Lock()
		p.joined = true
		p.mu.Unlock()
		if p.plan.kind == offerSpare {
			cl.SetSpareOffer(e.sdp)
		} else {
			cl.SetOffer(e.sdp)
		}
	}
}

// sendLate sends the offer on cl once it is made, unless it went with the
// join or the pairing comes first. Call it once joined (or queued): an
// offer before that is refused. A spare offer is not sent late (a late
// offer is not spare): natively the offer is made within milliseconds,
// and one that was not is adopted after the pairing, if this player
// offers.
func (p *pendingOffer) sendLate(ctx context.Context, cl *signaling.Client, log *slog.Logger) {
	if p == nil || p.plan.kind == offerSpare {
		return
	}
	p.mu.Lock()
	joined := p.joined
	p.mu.Unlock()
	if joined {
		return
	}
	start := time.Now()
	go func() {
		select {
		case <-p.done:
		case <-p.stop:
			return
		case <-ctx.Done():
			return
		}
		if p.e == nil {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.paired {
			return
		}
		// Under mu: the pairing (paired) waits for it, so whether it went
		// before the pairing is settled.
		if err := cl.SendOffer(ctx, p.e.sdp); err != nil {
			log.Debug("p2p: sending the late early offer failed", "err", err)
			return
		}
		p.late = true
		log.Debug("p2p: late early offer sent", "waited", time.Since(start))
		if p.plan.sentLate != nil {
			p.plan.sentLate(cl)
		}
	}()
}

// refusedLate records the server's refusal of a late offer (an error
// about an offer before the pairing: a server that takes no late offers).
func (p *pendingOffer) refusedLate() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if !p.paired {
		p.refused = true
	}
	p.mu.Unlock()
}

// setPaired stops late sending and reports whether the server has the
// offer: it went with the join, or late and was not refused (a late
// offer that reached the server after the pairing was relayed to the
// answerer if this player is the offerer).
func (p *pendingOffer) setPaired() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paired {
		p.paired = true
		close(p.stop)
	}
	return p.joined || p.late && !p.refused
}

// discard closes the offer, now or when it is made (nothing if p is nil).
func (p *pendingOffer) discard() {
	if p == nil {
		return
	}
	p.setPaired()
	p.cancel()
	go func() {
		<-p.done
		p.e.close()
	}()
}
