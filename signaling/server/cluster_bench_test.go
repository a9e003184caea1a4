package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
	"github.com/ragsync/ragsync/signaling/server/natsclient"
	"github.com/ragsync/ragsync/signaling/server/natsembed"
)

// startTestCluster starts n servers in this process whose embedded NATS
// servers form one cluster on loopback, and waits for their JetStream.
func startTestCluster(tb testing.TB, n int, base Config) []*Running {
	tb.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var rs []*Running
	for i, p := range ports {
		cfg := base
		cfg.Secret = []byte("0123456789abcdef0123456789abcdef")
		cfg.Node = fmt.Sprintf("n%d", i+1)
		cfg.NATS = NATSConfig{ClusterListen: fmt.Sprintf("127.0.0.1:%d", p), ClusterRoutes: routes, Embed: natsembed.Start, Connect: natsclient.Connect}
		r, err := Start("127.0.0.1:0", cfg)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { r.Close() })
		rs = append(rs, r)
	}
	ctx, cancel := testwait.ContextFrom(context.Background(), tb)
	defer cancel()
	for _, r := range rs {
		select {
		case <-r.cl.ready:
		case <-ctx.Done():
			tb.Fatalf("JetStream of %s not ready", r.cfg.Node)
		}
	}
	return rs
}

// natsOut is the NATS messages the servers have published so far
// (signaling's own and their JetStream requests).
func natsOut(rs []*Running) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.cl.bb.Status().Sent
	}
	return n
}

// BenchmarkCluster: three servers in one embedded-NATS cluster on
// loopback, each with RAGSYNC_BENCH_IDLE idle WebSocket clients (default
// 500; the figure is 5000). It reports memory per idle client
// (both ends are in this process), and pairing by room code, creator and
// joiner on the same node and on two nodes, in the same run: p50 and p99
// from the join to both players paired, and the NATS messages per
// pairing (create, join and paired; JetStream requests included).
func BenchmarkCluster(b *testing.B) {
	idle := 500
	if v, err := strconv.Atoi(os.Getenv("RAGSYNC_BENCH_IDLE")); err == nil && v > 0 {
		idle = v
	}
	raiseFDLimit(b, uint64(6*idle+1024))
	cfg := benchConfig()
	cfg.MaxConnsPerAddr = 1 << 20
	cfg.MaxConns = 1 << 20
	cfg.MaxRoomsPerAddr = 1 << 20
	cfg.AddrRatePerSec, cfg.AddrRateBurst = 1e9, 1<<30
	cfg.IPv4Prefixes = []PrefixLimit{}
	cfg.MaxHandshakesPerAddr = 1 << 20
	cfg.FailedJoinBurst = 1 << 20
	cfg.Logger = testLogger(b)
	rs := startTestCluster(b, 3, cfg)
	ctx, cancel := testwait.ContextFrom(context.Background(), b)
	defer cancel()

	before := heapAndStacks()
	var mu sync.Mutex
	var conns []*websocket.Conn
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	sem := make(chan struct{}, 64)
	for _, r := range rs {
		ws := strings.Replace(r.URL(), "http://", "ws://", 1) + "/ws?v=1"
		for range idle {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				c, _, err := websocket.Dial(ctx, ws, nil)
				if err == nil {
					_, _, err = c.Read(ctx)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatalf("dial: %v", err)
	default:
	}
	perClient := float64(heapAndStacks()-before) / float64(3*idle)

	dialC := func(r *Running) *signaling.Client {
		c, err := signaling.Dial(ctx, r.URL(), signaling.ClientConfig{KeepAlive: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	pairOnce := func(a, j *signaling.Client) (time.Duration, uint64) {
		code, err := a.CreateRoom(ctx)
		if err != nil {
			b.Fatal(err)
		}
		m0 := natsOut(rs)
		t0 := time.Now()
		if err := j.JoinRoom(ctx, string(code)); err != nil {
			b.Fatal(err)
		}
		for _, c := range []*signaling.Client{a, j} {
			if ev, err := c.Recv(ctx); err != nil || ev.Kind != signaling.EventPaired {
				b.Fatalf("%v %v", ev.Kind, err)
			}
		}
		d := time.Since(t0)
		msgs := natsOut(rs) - m0
		j.Leave(ctx)
		a.Recv(ctx) // peer_left
		a.Leave(ctx)
		return d, msgs
	}
	same := [2]*signaling.Client{dialC(rs[0]), dialC(rs[0])}
	cross := [2]*signaling.Client{dialC(rs[0]), dialC(rs[1])}
	var dSame, dCross []time.Duration
	var mSame, mCross uint64
	b.ResetTimer()
	for range b.N {
		d, m := pairOnce(same[0], same[1])
		dSame, mSame = append(dSame, d), mSame+m
		d, m = pairOnce(cross[0], cross[1])
		dCross, mCross = append(dCross, d), mCross+m
	}
	b.StopTimer()
	pct := func(ds []time.Duration, p float64) float64 {
		slices.Sort(ds)
		return float64(ds[min(len(ds)-1, int(p*float64(len(ds))))].Microseconds()) / 1000
	}
	b.ReportMetric(perClient, "B/idle-client")
	b.ReportMetric(pct(dSame, 0.5), "ms-p50-same-node")
	b.ReportMetric(pct(dSame, 0.99), "ms-p99-same-node")
	b.ReportMetric(pct(dCross, 0.5), "ms-p50-cross-node")
	b.ReportMetric(pct(dCross, 0.99), "ms-p99-cross-node")
	b.ReportMetric(float64(mSame)/float64(b.N), "nats-msgs/pairing-same")
	b.ReportMetric(float64(mCross)/float64(b.N), "nats-msgs/pairing-cross")
}
