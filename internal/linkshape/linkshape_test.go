//go:build linux

package linkshape

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ragsync/ragsync/internal/testwait"
)

// TestBadLink shapes its own namespace's loopback as issue 21's bad link
// (every packet 150 ms each way, 30 % lost) and measures through it: a
// UDP echo's round trip takes at least 2×150 ms and loses 1−0.7² = 51 %
// of the probes, every probe accounted for by iptables' drop counter;
// a TCP connection still carries its data, retransmitting.
func TestBadLink(t *testing.T) {
	if !Isolate(t) {
		return
	}
	const (
		delay  = 150 * time.Millisecond
		loss   = 0.3
		probes = 200
	)
	l := Apply(t, Shape{Delay: delay, Loss: loss})

	// UDP: an echo server, probes sent every 10 ms, each carrying its
	// number. A probe is answered, or its request or its reply was
	// dropped: the wait ends when answers + drops = probes.
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		b := make([]byte, 64)
		for {
			n, from, err := srv.ReadFromUDP(b)
			if err != nil {
				return
			}
			srv.WriteToUDP(b[:n], from)
		}
	}()
	c, err := net.DialUDP("udp", nil, srv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var (
		mu   sync.Mutex
		sent [probes]time.Time
		rtts []time.Duration
	)
	go func() {
		b := make([]byte, 64)
		for {
			n, err := c.Read(b)
			if err != nil {
				return
			}
			at := time.Now()
			if n != 4 {
				continue
			}
			i := binary.BigEndian.Uint32(b)
			mu.Lock()
			if i < probes && !sent[i].IsZero() {
				rtts = append(rtts, at.Sub(sent[i]))
				sent[i] = time.Time{} // count each probe once
			}
			mu.Unlock()
		}
	}()
	for i := range uint32(probes) {
		mu.Lock()
		sent[i] = time.Now()
		mu.Unlock()
		if _, err := c.Write(binary.BigEndian.AppendUint32(nil, i)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var answered int
	var dropped uint64
	testwait.For(t, "every UDP probe answered or dropped", func() bool {
		d, _, err := l.Counts()
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		answered = len(rtts)
		mu.Unlock()
		dropped = d
		if answered+int(d) > probes {
			t.Fatalf("%d answers and %d drops for %d probes: something else is on lo", answered, d, probes)
		}
		if answered+int(d) < probes {
			time.Sleep(50 * time.Millisecond)
			return false
		}
		return true
	})
	mu.Lock()
	sorted := slices.Sorted(slices.Values(rtts))
	mu.Unlock()
	lost := 1 - float64(answered)/probes
	t.Logf("FIGURE udp_probes=%d answered=%d dropped=%d loss=%.3f (expected %.3f) rtt_min_ms=%.1f rtt_median_ms=%.1f rtt_p95_ms=%.1f (2×delay = %d ms)",
		probes, answered, dropped, lost, 1-(1-loss)*(1-loss),
		ms(sorted[0]), ms(sorted[len(sorted)/2]), ms(sorted[len(sorted)*95/100]), 2*delay.Milliseconds())
	// The delay is a lower bound whatever the load: each packet is held
	// at least Delay after nfqdelay saw it, after it was sent.
	if sorted[0] < 2*delay {
		t.Errorf("fastest round trip %v, want >= %v", sorted[0], 2*delay)
	}
	if lost < 0.30 || lost > 0.70 {
		t.Errorf("round-trip loss %.3f over %d probes, want 0.51 (between 0.30 and 0.70)", lost, probes)
	}

	// TCP: 32 KiB one way, its SHA-256 back, through the same link: a few
	// dozen segments, so some are lost and retransmitted, but not so many
	// that TCP's backed-off retransmission timer (up to minutes at this
	// loss) makes the test's time a lottery (256 KiB took 3 to 400 s).
	d0, _, err := l.Counts()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		h := sha256.New()
		io.Copy(h, conn)
		conn.Write(h.Sum(nil))
	}()
	payload := bytes.Repeat([]byte("ragsync linkshape "), 32<<10/18+1)[:32<<10]
	start := time.Now()
	var dl net.Dialer
	conn, err := dl.DialContext(testwait.Context(t), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial through the bad link: %v", err)
	}
	defer conn.Close()
	if _, err := conn.Write(payload); err != nil {
		t.Fatal(err)
	}
	tc := conn.(*net.TCPConn)
	tc.CloseWrite()
	sum, err := io.ReadAll(conn)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	took := time.Since(start)
	var info *unix.TCPInfo
	if raw, err := tc.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) { info, _ = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) })
	}
	want := sha256.Sum256(payload)
	if !bytes.Equal(sum, want[:]) {
		t.Fatalf("TCP through the bad link: got digest %x, want %x", sum, want)
	}
	d1, _, err := l.Counts()
	if err != nil {
		t.Fatal(err)
	}
	retrans := uint32(0)
	if info != nil {
		retrans = info.Total_retrans
	}
	st, err := l.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FIGURE tcp_bytes=%d took_s=%.1f dropped=%d client_retransmits=%d", len(payload), took.Seconds(), d1-d0, retrans)
	t.Logf("FIGURE nfqdelay queued=%d received=%d delayed=%d overflow=%d flushed=%d max_held=%d enobufs=%d verdict_errors=%d total_dropped=%d",
		st.Queued, st.Received, st.Delayed, st.Overflow, st.Flushed, st.MaxHeld, st.ENOBUFS, st.VerdictErrors, st.Dropped)
	// Every answered probe was two delayed packets; every packet queued
	// reached nfqdelay, and none passed undelayed.
	if st.Delayed < 2*uint64(answered) {
		t.Errorf("nfqdelay delayed %d packets, want >= %d (2 per answered probe)", st.Delayed, 2*answered)
	}
	// Every packet the rule queued reached nfqdelay, and every one it
	// received was delayed (or released at its exit). A packet in flight
	// through the chain as Close unhooks it can reach nfqdelay without
	// showing in the rule's counters (the kernel swaps the table under
	// it), so nfqdelay may count a few more than the rule.
	if st.Received < st.Queued || st.Delayed+st.Flushed != st.Received || st.Overflow != 0 || st.ENOBUFS != 0 || st.VerdictErrors != 0 {
		t.Errorf("nfqdelay: %+v: want every queued packet received and delayed", st)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func TestShapeValidate(t *testing.T) {
	for _, s := range []Shape{
		{Delay: -1},
		{Jitter: -1},
		{Loss: -0.1},
		{Loss: 1.5},
		{Protocols: []string{"sctp"}},
		{Protocols: []string{"icmp"}, Ports: []uint16{1}},
		{Ports: make([]uint16, 16)},
		{MaxHeld: -1},
	} {
		var se *ShapeError
		if _, err := s.validate(); !errors.As(err, &se) {
			t.Errorf("%+v: got %v, want a *ShapeError", s, err)
		}
	}
	s, err := Shape{Ports: []uint16{80}}.validate()
	if err != nil || !slices.Equal(s.Protocols, []string{"tcp", "udp"}) || s.MaxHeld != 4096 {
		t.Errorf("defaults: %+v %v", s, err)
	}
}

func TestRunPattern(t *testing.T) {
	if got, want := runPattern("TestA/b.c_(d)"), `^TestA$/^b\.c_\(d\)$`; got != want {
		t.Errorf("runPattern = %q, want %q", got, want)
	}
}
