package p2p

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/transport/v5/vnet"

	"github.com/ragsync/ragsync/internal/leaktest"
)

// delayConn delays what is written to a connection by a fixed one-way
// delay, in order, as a long link does; writes return at once (the kernel
// buffers them). Inside a synctest bubble the delay is virtual.
type delayConn struct {
	net.Conn
	delay time.Duration

	mu     sync.Mutex
	queue  []delayed
	wake   chan struct{}
	closed chan struct{}
	once   sync.Once
	done   chan struct{}
}

type delayed struct {
	due  time.Time
	data []byte
}

func newDelayConn(c net.Conn, delay time.Duration) *delayConn {
	d := &delayConn{Conn: c, delay: delay, wake: make(chan struct{}, 1), closed: make(chan struct{}), done: make(chan struct{})}
	go d.pump()
	return d
}

func (d *delayConn) Write(p []byte) (int, error) {
	select {
	case <-d.closed:
		return 0, net.ErrClosed
	default:
	}
	d.mu.Lock()
	d.queue = append(d.queue, delayed{time.Now().Add(d.delay), slices.Clone(p)})
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (d *delayConn) pump() {
	defer close(d.done)
	for {
		d.mu.Lock()
		var next *delayed
		if len(d.queue) > 0 {
			next = &d.queue[0]
		}
		d.mu.Unlock()
		if next == nil {
			select {
			case <-d.wake:
				continue
			case <-d.closed:
				return
			}
		}
		if w := time.Until(next.due); w > 0 {
			select {
			case <-time.After(w):
			case <-d.closed:
				return
			}
		}
		d.mu.Lock()
		data := d.queue[0].data
		d.queue = d.queue[1:]
		d.mu.Unlock()
		if _, err := d.Conn.Write(data); err != nil {
			_ = d.Conn.Close()
			return
		}
	}
}

func (d *delayConn) Close() error {
	d.once.Do(func() { close(d.closed) })
	err := d.Conn.Close()
	<-d.done
	return err
}

// pairingTime pairs two sessions through an in-memory signaling server
// over a link with a one-way delay of oneWay both for signaling (and the
// relay) and for WebRTC, which also loses loss of its packets (seeded),
// and returns how long it took from the start of pairing to both sessions
// running. Run it inside a synctest bubble.
func pairingTime(t *testing.T, oneWay time.Duration, loss float64, seed uint64) time.Duration {
	t.Helper()
	m, url, _ := startMemServer(t)
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := m.dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newDelayConn(c, oneWay), nil
	}}
	t.Cleanup(tr.CloseIdleConnections)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 1))
	na, nb := newVNet(t, oneWay, func(vnet.Chunk) bool {
		mu.Lock()
		defer mu.Unlock()
		return rng.Float64() >= loss
	})
	cfg := func(n *vnet.Net) Config {
		c := testConfig()
		c.Logger = testLogger()
		c.Signaling.HTTPClient = &http.Client{Transport: tr}
		c.Net, c.Interfaces = n, InterfacesAll
		return c
	}
	start := time.Now()
	a, _ := pairByRoom(t, url, cfg(na), cfg(nb))
	took := time.Since(start)
	st := a.Stats()
	// A session that started on the relay moves to WebRTC once it opens.
	var onRTC time.Duration
	for i := 0; i < 600 && a.Stats().Transport != TransportWebRTC; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if a.Stats().Transport == TransportWebRTC {
		onRTC = time.Since(start)
	} else {
		t.Errorf("seed %d: not on WebRTC a minute after pairing: %+v", seed, a.Stats().WebRTC)
	}
	t.Logf("seed %d: running after %v on %v (%s); on webrtc after %v", seed, took.Round(time.Millisecond), st.Transport, st.ChoiceReason, onRTC.Round(time.Millisecond))
	return took
}

// TestPairingOnBadLink measures pairing, from the start of Connect to a
// running session, on a 300 ms RTT link that loses 30 % of WebRTC's
// packets (the signaling and relay stream are delayed as much; TCP hides
// its losses as delay), in virtual time over ten seeds: the median must be
// at most 5 s. And on a clean link with 1 ms of delay each way, well under
// 100 ms.
func TestPairingOnBadLink(t *testing.T) {
	leaktest.Check(t)
	for _, tc := range []struct {
		name   string
		oneWay time.Duration
		loss   float64
		runs   int
		goal   time.Duration
	}{
		{"300ms RTT, 30% loss", 150 * time.Millisecond, 0.3, 10, 5 * time.Second},
		{"2ms RTT", time.Millisecond, 0, 3, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var times []time.Duration
			for seed := range uint64(tc.runs) {
				t.Run("", func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						times = append(times, pairingTime(t, tc.oneWay, tc.loss, seed))
					})
				})
			}
			if len(times) < tc.runs {
				return
			}
			slices.Sort(times)
			med := times[len(times)/2]
			t.Logf("pairing in %v: median %v, max %v", tc.name, med.Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
			if med > tc.goal {
				t.Errorf("median pairing %v, want at most %v", med, tc.goal)
			}
		})
	}
}
