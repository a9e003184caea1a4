package netsim

import (
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
)

// fakeClock is a manual Clock: time moves only in Advance.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c      *fakeClock
	ch     chan time.Time
	when   time.Time
	active bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1e9, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	t.Reset(d)
	return t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		t.fireLocked()
	}
}

func (t *fakeTimer) fireLocked() {
	if t.active && !t.when.After(t.c.now) {
		t.active = false
		t.ch <- t.c.now
	}
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	select {
	case <-t.ch:
	default:
	}
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	select {
	case <-t.ch:
	default:
	}
	t.when, t.active = t.c.now.Add(d), true
	t.fireLocked()
	return was
}

// waitFor polls cond until it holds. It has no time limit of its own,
// only the test binary's: a loaded machine delivers later, not less.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, what, cond)
}

// TestPipeFollowsModel drives a Pipe on a fake clock in 1 ms steps and
// checks it delivers exactly what a virtual-time Link with the same config
// and seed delivers, never before the arrival time and within the step
// after it.
func TestPipeFollowsModel(t *testing.T) {
	leaktest.Check(t)
	cfg := Config{Latency: 50 * ms, Jitter: 20 * ms, Loss: 0.1, Duplicate: 0.1, Reorder: 0.05}
	const n, every = 100, 10 * ms

	ref := newLink(t, cfg, 5)
	var want []delivery
	for i := range n {
		ref.Send(time.Duration(i)*every, binary.BigEndian.AppendUint64(nil, uint64(i)))
	}
	want = deliverUntil(ref, time.Hour, nil)

	clock := newFakeClock()
	start := clock.Now()
	var mu sync.Mutex
	var got []delivery
	p, err := NewPipe(cfg, 5, clock, func(b []byte) {
		mu.Lock()
		got = append(got, delivery{clock.Now().Sub(start), binary.BigEndian.Uint64(b)})
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	for now := time.Duration(0); now <= n*every+200*ms; now += ms {
		if now%every == 0 && now < n*every {
			if err := p.Send(binary.BigEndian.AppendUint64(nil, uint64(now/every))); err != nil {
				t.Fatal(err)
			}
		}
		due := 0
		for _, d := range want {
			if d.at <= now {
				due++
			}
		}
		waitFor(t, "deliveries", func() bool { return count() >= due })
		clock.Advance(ms)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("pipe delivered %d, model %d", len(got), len(want))
	}
	for i := range got {
		if got[i].seq != want[i].seq || got[i].at < want[i].at || got[i].at >= want[i].at+ms {
			t.Fatalf("delivery %d: pipe %+v, model %+v", i, got[i], want[i])
		}
	}
	if s := p.Stats(); s != ref.Stats() {
		t.Errorf("pipe stats %+v, model %+v", s, ref.Stats())
	}
}

func TestPipeCloseDiscardsAndStops(t *testing.T) {
	leaktest.Check(t)
	clock := newFakeClock()
	delivered := 0
	p, err := NewPipe(Config{Latency: time.Hour}, 1, clock, func([]byte) { delivered++ })
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		p.Send([]byte("x"))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	clock.Advance(2 * time.Hour)
	if s := p.Stats(); s.Discarded != 10 || s.InFlight != 0 || delivered != 0 {
		t.Errorf("after Close: %+v, delivered %d", s, delivered)
	}
	if err := p.Send([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	if _, err := NewPipe(Config{Loss: 2}, 1, nil, func([]byte) {}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewPipe with a bad config: %v", err)
	}
}

// TestPipeSystemClock runs a Pipe on the real clock with a short delay. It
// asserts what was delivered, never how long it took.
func TestPipeSystemClock(t *testing.T) {
	leaktest.Check(t)
	cfg := Config{Latency: 2 * ms, Jitter: ms, Loss: 0.3}
	ref := newLink(t, cfg, 77)
	var want []uint64
	for i := range 200 {
		ref.Send(0, binary.BigEndian.AppendUint64(nil, uint64(i)))
	}
	for _, d := range deliverUntil(ref, time.Hour, nil) {
		want = append(want, d.seq)
	}
	var mu sync.Mutex
	var got []uint64
	p, err := NewPipe(cfg, 77, nil, func(b []byte) {
		mu.Lock()
		got = append(got, binary.BigEndian.Uint64(b))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	for w := range 4 { // concurrent senders
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 200; i += 4 {
				p.Send(binary.BigEndian.AppendUint64(nil, uint64(i)))
			}
		}()
	}
	wg.Wait()
	waitFor(t, "deliveries", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= len(want) })
	// Loss draws do not depend on time, so exactly as many packets survive
	// as in the model, although which ones depends on the send order.
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Errorf("delivered %d, model %d", len(got), len(want))
	}
}

func TestPacketConnLoopback(t *testing.T) {
	leaktest.Check(t)
	a, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := Config{Latency: 3 * ms, Jitter: 2 * ms, Loss: 0.2, Duplicate: 0.1}
	ca, err := NewPacketConn(a, cfg, 99, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()

	ref := newLink(t, cfg, 99)
	const n = 200
	for i := range n {
		ref.Send(0, binary.BigEndian.AppendUint64(nil, uint64(i)))
	}
	want := len(deliverUntil(ref, time.Hour, nil))

	for i := range n {
		if k, err := ca.WriteTo(binary.BigEndian.AppendUint64(nil, uint64(i)), b.LocalAddr()); err != nil || k != 8 {
			t.Fatalf("WriteTo: %d, %v", k, err)
		}
	}
	if d, ok := testwait.Deadline(t); ok {
		b.SetReadDeadline(d)
	}
	buf := make([]byte, 64)
	var got []uint64
	for len(got) < want {
		k, from, err := b.ReadFrom(buf)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(got), want, err)
		}
		if from.String() != a.LocalAddr().String() || k != 8 {
			t.Fatalf("datagram of %d bytes from %v", k, from)
		}
		got = append(got, binary.BigEndian.Uint64(buf))
	}
	s := ca.Stats()
	if s.Delivered != uint64(want) || s.LostRandom == 0 || s.Duplicated == 0 {
		t.Errorf("stats %+v, want %d delivered", s, want)
	}
	slices.Sort(got)
	if got[len(got)-1] >= n {
		t.Errorf("garbage sequence number %d", got[len(got)-1])
	}
	if errs, _ := ca.WriteErrors(); errs != 0 {
		t.Errorf("%d write errors", errs)
	}

	// A write to a closed socket fails later and is counted.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ca.SetConfig(Config{})
	ca.WriteTo([]byte("x"), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 0})
	waitFor(t, "write error", func() bool { n, _ := ca.WriteErrors(); return n > 0 })
	if _, err := ca.WriteErrors(); err == nil {
		t.Error("no last write error")
	}

	if err := ca.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.WriteTo([]byte("x"), b.LocalAddr()); !errors.Is(err, net.ErrClosed) || !strings.Contains(err.Error(), "netsim") {
		t.Errorf("WriteTo after Close: %v", err)
	}
}
