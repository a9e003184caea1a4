package relay

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
)

// gateWriter blocks every Write until released, recording what it got.
type gateWriter struct {
	mu      sync.Mutex
	entered chan struct{}
	release chan struct{}
	got     []byte
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.entered <- struct{}{}
	<-g.release
	g.mu.Lock()
	g.got = append(g.got, p...)
	g.mu.Unlock()
	return len(p), nil
}

func frames(t *testing.T, b []byte) []string {
	t.Helper()
	fr := NewReader(bytes.NewReader(b), 0)
	var out []string
	buf := make([]byte, MaxFrameLen)
	for {
		p, err := fr.ReadFrame(buf)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(p))
	}
}

func TestSenderLatestOnly(t *testing.T) {
	leaktest.Check(t)
	g := &gateWriter{entered: make(chan struct{}), release: make(chan struct{})}
	s := NewSender(g, SenderConfig{})
	const state, hp = 's', 'h'
	// The first state goes straight to the (now blocked) writer.
	if err := s.Send(state, []byte("state-1")); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	// While blocked: nine more states, two of another key, an empty
	// message, two control frames.
	for i := 2; i <= 10; i++ {
		s.Send(state, []byte("state-"+string(rune('0'+i%10))))
	}
	s.Send(hp, []byte("hp-1"))
	s.Send(hp, []byte("hp-2"))
	s.Send(NumKeys-1, nil)
	s.SendControl([]byte("ping-1"))
	s.SendControl([]byte("ping-2"))
	g.release <- struct{}{} // first write done
	<-g.entered             // second write: everything pending, in one Write
	g.release <- struct{}{}
	s.Close()
	got := frames(t, g.got)
	// Control first, then the keys in the order they became pending.
	want := []string{"state-1", "ping-1", "ping-2", "state-0", "hp-2", ""}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	st := s.Stats()
	if st.Superseded != 9 || st.Frames != 6 || st.Writes != 2 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
	if st.Bytes != uint64(len(g.got)) {
		t.Fatalf("bytes %d, wrote %d", st.Bytes, len(g.got))
	}
	if err := s.Send(0, []byte("x")); !errors.Is(err, ErrSenderClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
}

func TestSenderControlQueue(t *testing.T) {
	leaktest.Check(t)
	g := &gateWriter{entered: make(chan struct{}), release: make(chan struct{})}
	s := NewSender(g, SenderConfig{ControlQueue: 2})
	s.SendControl([]byte("a"))
	<-g.entered
	if s.SendControl([]byte("b")) != nil || s.SendControl([]byte("c")) != nil {
		t.Fatal("queue refused within capacity")
	}
	if err := s.SendControl([]byte("d")); !errors.Is(err, ErrControlQueueFull) {
		t.Fatalf("full queue: %v", err)
	}
	if err := s.Send(NumKeys, nil); err == nil {
		t.Fatal("key out of range accepted")
	}
	if err := s.Send(0, make([]byte, MaxFrameLen+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatal("oversized frame accepted")
	}
	g.release <- struct{}{}
	<-g.entered
	g.release <- struct{}{}
	s.Close()
	if got := frames(t, g.got); len(got) != 3 || got[1] != "b" || got[2] != "c" {
		t.Fatalf("got %q", got)
	}
	if st := s.Stats(); st.ControlFull != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSenderOverTCPWithBlockedReader(t *testing.T) {
	leaktest.Check(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() { c, _ := l.Accept(); accepted <- c }()
	a, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	defer b.Close()
	a.(*net.TCPConn).SetWriteBuffer(4096)
	b.(*net.TCPConn).SetReadBuffer(4096)
	s := NewSender(a, SenderConfig{})
	// Nobody reads b: the socket buffers fill, the writer blocks, and
	// states supersede each other instead of queueing.
	state := make([]byte, 1000)
	const n = 5000
	for i := 0; i < n; i++ {
		state[0], state[1] = byte(i>>8), byte(i)
		if err := s.Send(int(state[2]), state); err != nil {
			t.Fatal(err)
		}
	}
	// Now the reader catches up: it must end with the newest state.
	type result struct{ count, last int }
	res := make(chan result, 1)
	go func() {
		fr := NewReader(b, 0)
		buf := make([]byte, MaxFrameLen)
		r := result{last: -1}
		for {
			p, err := fr.ReadFrame(buf)
			if err != nil {
				res <- r
				return
			}
			v := int(p[0])<<8 | int(p[1])
			if v <= r.last {
				r.count = -1 << 30 // out of order
			}
			r.last = v
			r.count++
		}
	}()
	testwait.For(t, "the sender to drain", func() bool { st := s.Stats(); return st.Frames+st.Superseded == n })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	a.Close()
	r := <-res
	st := s.Stats()
	if r.count != int(st.Frames) || r.last != n-1 {
		t.Fatalf("read %d frames ending with state %d; stats %+v", r.count, r.last, st)
	}
	if st.Superseded < n/2 || st.Dropped != 0 {
		t.Fatalf("a blocked reader should make most states superseded: %+v", st)
	}
	t.Logf("%d states sent, %d written in %d writes, %d superseded", n, st.Frames, st.Writes, st.Superseded)
}

func BenchmarkSenderSend(b *testing.B) {
	s := NewSender(io.Discard, SenderConfig{})
	defer s.Close()
	payload := make([]byte, 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s.Send(i&3, payload)
	}
}
