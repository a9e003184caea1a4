package p2p

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragsync/ragsync/signaling"
)

// While a player waits for a rival and then negotiates, its signaling
// connection carries a handful of messages that each matter (joined,
// paired, the offer, the answer, candidates) and nothing else. On a lossy
// link a lost TCP segment on such an idle connection is recovered only by
// the retransmission timer (or a tail-loss probe), which backs off to
// seconds when those are lost too: an offer took 14 s through the server.
// A segment followed by more traffic is recovered by fast retransmit as
// soon as the next segments' acknowledgements come back. So until the
// session runs, the client pings the server (which answers with a pong)
// every nudgeWaiting while waiting for a rival, and every nudgePaired once
// paired: a steady trickle both ways, a few dozen bytes each.
const (
	nudgeWaiting = 500 * time.Millisecond
	nudgePaired  = 250 * time.Millisecond
)

// nudger pings a signaling client until stopped (see nudgeWaiting).
type nudger struct {
	paired atomic.Bool
	stopCh chan struct{}
	once   sync.Once
	done   chan struct{}
}

// startNudging starts pinging cl.
func startNudging(cl *signaling.Client) *nudger {
	n := &nudger{stopCh: make(chan struct{}), done: make(chan struct{})}
	go n.run(cl)
	return n
}

func (n *nudger) run(cl *signaling.Client) {
	defer close(n.done)
	t := time.NewTimer(nudgeWaiting)
	defer t.Stop()
	for {
		select {
		case <-n.stopCh:
			return
		case <-cl.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = cl.Ping(ctx) // a failed ping: the connection's own errors tell
		cancel()
		if n.paired.Load() {
			t.Reset(nudgePaired)
		} else {
			t.Reset(nudgeWaiting)
		}
	}
}

// setPaired switches to the faster pace of the negotiation.
func (n *nudger) setPaired() { n.paired.Store(true) }

// stop stops the pings and waits for the goroutine to end.
func (n *nudger) stop() {
	n.once.Do(func() { close(n.stopCh) })
	<-n.done
}
