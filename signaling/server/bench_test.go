package server

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
)

// benchConfig lifts the per-connection rate limit so it does not throttle
// the benchmark itself.
func benchConfig() Config {
	return Config{RatePerSec: 1e9, RateBurst: 1 << 30}
}

// BenchmarkPairing measures create → join → paired (both sides) → leave on
// already-connected clients: the server's pairing path plus one WebSocket
// round trip each way.
func BenchmarkPairing(b *testing.B) {
	_, url := startServer(b, benchConfig())
	const pairs = 8
	type pair struct{ a, b *signaling.Client }
	ps := make(chan pair, pairs)
	for i := 0; i < pairs; i++ {
		ps <- pair{dial(b, url, signaling.ClientConfig{KeepAlive: -1}), dial(b, url, signaling.ClientConfig{KeepAlive: -1})}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p := <-ps
			code, err := p.a.CreateRoom(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			if err := p.b.JoinRoom(ctx, string(code)); err != nil {
				b.Error(err)
				return
			}
			for _, c := range []*signaling.Client{p.a, p.b} {
				if ev, err := c.Recv(ctx); err != nil || ev.Kind != signaling.EventPaired {
					b.Errorf("%v %v", ev.Kind, err)
					return
				}
			}
			p.b.Leave(ctx)
			p.a.Recv(ctx) // peer_left
			p.a.Leave(ctx)
			ps <- p
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pairings/s")
}

// BenchmarkQuickMatchConnect measures quick match including the WebSocket
// connection: dial, quick, paired, close, for two fresh clients per op.
func BenchmarkQuickMatchConnect(b *testing.B) {
	_, url := startServer(b, benchConfig())
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var cs [2]*signaling.Client
			for i := range cs {
				c, err := signaling.Dial(ctx, url, signaling.ClientConfig{KeepAlive: -1})
				if err != nil {
					b.Error(err)
					return
				}
				cs[i] = c
				if err := c.QuickMatch(ctx); err != nil {
					b.Error(err)
					return
				}
			}
			// With parallel workers the two may be paired with others; each
			// waits for its own pairing.
			for _, c := range cs {
				if ev, err := c.Recv(ctx); err != nil || ev.Kind != signaling.EventPaired {
					b.Errorf("%v %v", ev.Kind, err)
				}
			}
			for _, c := range cs {
				c.Close()
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pairings/s")
}

// raiseFDLimit makes sure the process may open n descriptors: it raises
// the soft limit, and the hard one when that is below n and the process
// may (root, CAP_SYS_RESOURCE). It skips tb when it cannot.
func raiseFDLimit(tb testing.TB, n uint64) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		tb.Skipf("cannot read the fd limit: %v", err)
	}
	if rl.Cur >= n {
		return
	}
	want := rl
	want.Cur = n
	if want.Max < n {
		want.Max = n
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		tb.Skipf("this benchmark needs %d file descriptors; the limit is %d (hard %d) and cannot be raised: %v (raise it with ulimit -n)", n, rl.Cur, rl.Max, err)
	}
}

func heapAndStacks() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// BenchmarkIdleClients connects 2,000 bare WebSocket clients to one server
// on loopback and reports memory per idle connection (server side plus the
// bare client's WebSocket state: both ends live in this process) and the
// connection rate. Each op then pairs all of them by quick match and has
// them leave again (1,000 pairings per op), reporting pairings/s with 2,000
// connections open.
func BenchmarkIdleClients(b *testing.B) {
	const n = 2000
	raiseFDLimit(b, 2*n+256)
	s, url := startServer(b, benchConfig())
	wsURL := strings.Replace(url, "http://", "ws://", 1) + "/ws?v=1"
	ctx, cancel := testwait.ContextFrom(context.Background(), b)
	defer cancel()

	before := heapAndStacks()
	conns := make([]*websocket.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.CloseNow()
			}
		}
	}()
	dialStart := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			c, _, err := websocket.Dial(ctx, wsURL, nil)
			if err != nil {
				errs <- err
				return
			}
			if _, _, err := c.Read(ctx); err != nil { // welcome
				errs <- err
				return
			}
			conns[i] = c
		}(i)
	}
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatalf("dial: %v", err)
	default:
	}
	dialTime := time.Since(dialStart)
	if st := s.Stats(); st.Clients != n {
		b.Fatalf("%d clients connected, want %d", st.Clients, n)
	}
	perConn := float64(heapAndStacks()-before) / float64(n)

	// until reads messages until one of type typ.
	until := func(c *websocket.Conn, typ signaling.MsgType) error {
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return err
			}
			m, err := signaling.DecodeMessage(data)
			if err != nil {
				return err
			}
			if m.Type == typ {
				return nil
			}
		}
	}
	round := func(c *websocket.Conn) error {
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"quick"}`)); err != nil {
			return err
		}
		if err := until(c, signaling.TypePaired); err != nil {
			return err
		}
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"leave"}`)); err != nil {
			return err
		}
		return until(c, signaling.TypeLeft)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for _, c := range conns {
			wg.Add(1)
			go func(c *websocket.Conn) {
				defer wg.Done()
				if err := round(c); err != nil {
					errs <- err
				}
			}(c)
		}
		wg.Wait()
		select {
		case err := <-errs:
			b.Fatalf("quick match: %v", err)
		default:
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if st := s.Stats(); st.Pairings != uint64(b.N*n/2) || st.Rooms != 0 || st.Queued != 0 {
		b.Fatalf("stats %+v after %d rounds", st, b.N)
	}
	b.ReportMetric(perConn, "B/idle-conn")
	b.ReportMetric(float64(n)/dialTime.Seconds(), "conns/s")
	b.ReportMetric(float64(b.N*n/2)/elapsed.Seconds(), "pairings/s")
}
