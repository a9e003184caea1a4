package server

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
)

// bareWS is an idle WebSocket client as small as one can be: a TCP
// connection that did the handshake and read the welcome, and no
// goroutine. Its memory is the socket's, so what a benchmark measures per
// connection is essentially the server's.
type bareWS struct{ net.Conn }

// dialBare opens a bareWS from d to the server at addr.
func dialBare(ctx context.Context, d *net.Dialer, addr string) (*bareWS, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	var key [16]byte
	rand.Read(key[:])
	req := "GET /ws?v=1 HTTP/1.1\r\nHost: " + addr + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key[:]) + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(c, 512)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, fmt.Errorf("handshake: %s", resp.Status)
	}
	// The welcome: one unmasked text frame with a 7- or 16-bit length.
	var h [4]byte
	if _, err := io.ReadFull(br, h[:2]); err != nil {
		c.Close()
		return nil, err
	}
	n := int(h[1] & 0x7f)
	if n == 126 {
		if _, err := io.ReadFull(br, h[2:4]); err != nil {
			c.Close()
			return nil, err
		}
		n = int(h[2])<<8 | int(h[3])
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		c.Close()
		return nil, err
	}
	if m, err := signaling.DecodeMessage(body); err != nil || m.Type != signaling.TypeWelcome {
		c.Close()
		return nil, fmt.Errorf("welcome: %q %v", body, err)
	}
	c.SetDeadline(time.Time{})
	return &bareWS{c}, nil
}

// ping writes a masked ping message, as a keepalive.
func (w *bareWS) ping() error {
	const msg = `{"type":"ping"}`
	var f [6 + len(msg)]byte
	f[0], f[1] = 0x81, 0x80|byte(len(msg))
	rand.Read(f[2:6])
	for i := 0; i < len(msg); i++ {
		f[6+i] = msg[i] ^ f[2+i%4]
	}
	w.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := w.Write(f[:])
	return err
}

// The load benchmark runs the server in a child process (this test
// binary again, running TestLoadServerProcess): 10,000 connections need
// 10,000 descriptors on each side, and the two sides together would not
// fit under a common hard limit of 20,000 that an unprivileged process
// cannot raise. It also makes the memory measured the server's alone.
const loadChildEnv = "RAGSYNC_SIGNALING_LOAD_CHILD"

// TestLoadServerProcess is the child of BenchmarkLoad10k; run on its own
// it does nothing. It serves a Server with the limits in the JSON config
// of the environment variable, prints "ADDR host:port", and serves until
// its stdin is closed. /debug/mem answers the Go heap and stacks in use
// after a GC, and the goroutine count.
func TestLoadServerProcess(t *testing.T) {
	cfgJSON := os.Getenv(loadChildEnv)
	if cfgJSON == "" {
		t.Skip("the server process of BenchmarkLoad10k")
	}
	var lc loadChildConfig
	if err := json.Unmarshal([]byte(cfgJSON), &lc); err != nil {
		t.Fatal(err)
	}
	raiseFDLimit(t, uint64(lc.MaxConns)+1024)
	cfg := benchConfig()
	cfg.MaxConns = lc.MaxConns
	cfg.IdleTimeout = lc.IdleTimeout
	cfg.AddrRatePerSec, cfg.AddrRateBurst = lc.AddrRate, lc.AddrBurst
	cfg.Logger = testLogger(t)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", s)
	mux.HandleFunc("/debug/mem", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]uint64{"bytes": heapAndStacks(), "goroutines": uint64(runtime.NumGoroutine()), "clients": uint64(s.Stats().Clients)})
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux, ConnContext: withConn}
	go hs.Serve(&trackListener{Listener: l, s: s})
	fmt.Printf("ADDR %s\n", l.Addr())
	io.Copy(io.Discard, os.Stdin) // until the parent closes it
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Shutdown(ctx)
	hs.Shutdown(ctx)
}

type loadChildConfig struct {
	MaxConns    int
	IdleTimeout time.Duration
	AddrRate    float64
	AddrBurst   int
}

// loadChild is the server process of BenchmarkLoad10k.
type loadChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	hc    *http.Client
}

func startLoadChild(tb testing.TB, lc loadChildConfig) *loadChild {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Skipf("cannot find the test binary: %v", err)
	}
	cfgJSON, _ := json.Marshal(lc)
	cmd := exec.Command(exe, "-test.run=^TestLoadServerProcess$", "-test.bench=^$", "-test.timeout=20m")
	cmd.Env = append(os.Environ(), loadChildEnv+"="+string(cfgJSON))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	ch := &loadChild{cmd: cmd, stdin: stdin, hc: &http.Client{Transport: &http.Transport{}}}
	tb.Cleanup(ch.stop)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			ch.addr = a
			break
		}
	}
	if ch.addr == "" {
		tb.Fatal("the server process did not start")
	}
	go io.Copy(io.Discard, stdout)
	return ch
}

// mem returns the child's heap and stacks in use after a GC, and its
// clients.
func (ch *loadChild) mem(tb testing.TB) (bytes, clients uint64) {
	tb.Helper()
	resp, err := ch.hc.Get("http://" + ch.addr + "/debug/mem")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]uint64
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		tb.Fatal(err)
	}
	return m["bytes"], m["clients"]
}

func (ch *loadChild) stop() {
	ch.hc.CloseIdleConnections()
	ch.stdin.Close()
	ch.cmd.Wait()
}

// BenchmarkLoad10k connects 10,000 idle WebSocket clients to one server
// over loopback, from 100 source addresses (127.0.2.1-100, 100 each: the
// default per-address limit), keeps them alive with a ping every 15 s each
// (the Client's default), and reports the server's memory per idle
// connection (Go heap and stacks of the server process after a GC) and the
// latency of pairings made meanwhile (two connected Clients: create, join,
// both paired, then leave; one op is one pairing). The server runs in a
// child process (see TestLoadServerProcess).
//
//	go test -run '^$' -bench Load10k -benchtime 2000x ./signaling
func BenchmarkLoad10k(b *testing.B) {
	const n, addrs = 10000, 100
	raiseFDLimit(b, n+1024)
	// Per-connection and per-address message rates are lifted so the
	// pairing clients measure the server, not their own limits.
	child := startLoadChild(b, loadChildConfig{MaxConns: n + 100, IdleTimeout: 10 * time.Minute, AddrRate: 1e9, AddrBurst: 1 << 30})
	addr := child.addr
	url := "http://" + addr
	ctx, cancel := testwait.ContextFrom(context.Background(), b)
	defer cancel()

	before, _ := child.mem(b)
	conns := make([]*bareWS, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	dialers := make([]*net.Dialer, addrs)
	for i := range dialers {
		dialers[i] = &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 2, byte(i+1))}}
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	work := make(chan int)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c, err := dialBare(ctx, dialers[i%addrs], addr)
				if err != nil {
					select {
					case errs <- fmt.Errorf("client %d: %w", i, err):
					default:
					}
					continue
				}
				conns[i] = c
			}
		}()
	}
	for i := range conns {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	dialTime := time.Since(start)
	var after, clients uint64
	waitFor(b, func() bool { after, clients = child.mem(b); return clients == n })
	perConn := float64(after-before) / n

	// Keepalive: every client pings once per 15 s, spread evenly.
	pingCtx, stopPing := context.WithCancel(ctx)
	var pingErr error
	pingDone := make(chan struct{})
	go func() {
		defer close(pingDone)
		t := time.NewTicker(15 * time.Second / n)
		defer t.Stop()
		for i := 0; ; i = (i + 1) % n {
			select {
			case <-t.C:
			case <-pingCtx.Done():
				return
			}
			if err := conns[i].ping(); err != nil {
				pingErr = err
				return
			}
		}
	}()

	pairer := newFrom(b, "127.0.3.1")
	x := dial(b, url, pairer.client(signaling.ClientConfig{KeepAlive: -1}))
	y := dial(b, url, pairer.client(signaling.ClientConfig{KeepAlive: -1}))
	lat := make([]time.Duration, 0, 1024)
	pstart := time.Now()
	for b.Loop() {
		t0 := time.Now()
		code, err := x.CreateRoom(ctx)
		if err == nil {
			err = y.JoinRoom(ctx, string(code))
		}
		for _, c := range []*signaling.Client{x, y} {
			if err == nil {
				var ev signaling.Event
				if ev, err = c.Recv(ctx); err == nil && ev.Kind != signaling.EventPaired {
					err = fmt.Errorf("event %v", ev.Kind)
				}
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		if err := y.Leave(ctx); err != nil {
			b.Fatal(err)
		}
		if ev, err := x.Recv(ctx); err != nil || ev.Kind != signaling.EventPeerLeft {
			b.Fatal(ev.Kind, err)
		}
		if err := x.Leave(ctx); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(pstart)
	stopPing()
	<-pingDone
	if pingErr != nil && !errors.Is(pingErr, net.ErrClosed) {
		b.Fatalf("keepalive: %v", pingErr)
	}
	if _, c := child.mem(b); c != n+2 {
		b.Fatalf("%d clients connected at the end, want %d", c, n+2)
	}
	b.ReportMetric(perConn, "B/idle-conn")
	b.ReportMetric(float64(n)/dialTime.Seconds(), "conns/s")
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "pairings/s")
}
