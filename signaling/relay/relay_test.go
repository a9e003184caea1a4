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

// checkLeaks fails the test if goroutines it started are still running
// after it (they may take until near the test binary's deadline to exit).
func checkLeaks(t testing.TB) { leaktest.Check(t) }

func TestFrameRoundTrip(t *testing.T) {
	payloads := [][]byte{{}, []byte("a"), bytes.Repeat([]byte{7}, 300), bytes.Repeat([]byte{9}, MaxFrameLen)}
	var stream []byte
	for _, p := range payloads {
		var err error
		stream, err = AppendFrame(stream, p)
		if err != nil {
			t.Fatal(err)
		}
	}
	fr := NewReader(bytes.NewReader(stream), 0)
	buf := make([]byte, MaxFrameLen)
	for i, p := range payloads {
		got, err := fr.ReadFrame(buf)
		if err != nil || !bytes.Equal(got, p) {
			t.Fatalf("frame %d: %d bytes, %v", i, len(got), err)
		}
	}
	if _, err := fr.ReadFrame(buf); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
	if _, err := AppendFrame(nil, make([]byte, MaxFrameLen+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized AppendFrame: %v", err)
	}
}

func TestReaderErrors(t *testing.T) {
	f1, _ := AppendFrame(nil, []byte("hello world"))
	f2, _ := AppendFrame(nil, []byte("ok"))
	stream := append(append([]byte{}, f1...), f2...)

	// Too long for the caller's buffer: skipped, stream stays in sync.
	fr := NewReader(bytes.NewReader(stream), 100)
	small := make([]byte, 4)
	_, err := fr.ReadFrame(small)
	var fe *FrameSizeError
	if !errors.As(err, &fe) || !fe.Skipped || fe.Size != 11 || fe.Limit != 4 || !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("short buffer: %v", err)
	}
	if got, err := fr.ReadFrame(small); err != nil || string(got) != "ok" {
		t.Fatalf("after skip: %q %v", got, err)
	}

	// Over the reader's maximum: not skipped.
	fr = NewReader(bytes.NewReader(stream), 5)
	_, err = fr.ReadFrame(make([]byte, 100))
	if !errors.As(err, &fe) || fe.Skipped || fe.Limit != 5 {
		t.Fatalf("over max: %v", err)
	}

	// Truncated header and payload.
	for _, cut := range []int{1, 2, 5} {
		fr = NewReader(bytes.NewReader(f1[:cut]), 0)
		if _, err := fr.ReadFrame(make([]byte, 100)); err != io.ErrUnexpectedEOF {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	// Truncated inside a skipped frame.
	fr = NewReader(bytes.NewReader(f1[:6]), 0)
	if _, err := fr.ReadFrame(small); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut in skipped frame: %v", err)
	}
}

func TestFrameAllocs(t *testing.T) {
	payload := bytes.Repeat([]byte{1}, 200)
	dst := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { dst, _ = AppendFrame(dst[:0], payload) }); n != 0 {
		t.Fatalf("AppendFrame: %v allocs", n)
	}
	stream := bytes.Repeat(dst, 8)
	src := bytes.NewReader(stream)
	fr := NewReader(src, 0)
	buf := make([]byte, 1024)
	if n := testing.AllocsPerRun(100, func() {
		src.Reset(stream)
		fr.Reset(src)
		for i := 0; i < 8; i++ {
			if _, err := fr.ReadFrame(buf); err != nil {
				panic(err)
			}
		}
	}); n != 0 {
		t.Fatalf("ReadFrame: %v allocs", n)
	}
}

func FuzzReadFrame(f *testing.F) {
	f1, _ := AppendFrame(nil, []byte("state"))
	f2, _ := AppendFrame(f1, nil)
	f.Add(f2, 16, 100)
	f.Add([]byte{0xff, 0xff, 1}, 0, 10)
	f.Add([]byte{0}, 3, 3)
	f.Fuzz(func(t *testing.T, data []byte, bufLen, max int) {
		bufLen %= 1 << 17
		if bufLen < 0 {
			bufLen = -bufLen
		}
		fr := NewReader(bytes.NewReader(data), max)
		buf := make([]byte, bufLen)
		var out []byte
		consumed := 0
		for {
			p, err := fr.ReadFrame(buf)
			if err != nil {
				var fe *FrameSizeError
				switch {
				case err == io.EOF:
					if consumed != len(data) {
						t.Fatalf("EOF after %d of %d bytes", consumed, len(data))
					}
				case err == io.ErrUnexpectedEOF:
				case errors.As(err, &fe):
					if fe.Size <= fe.Limit {
						t.Fatalf("size error within limit: %v", fe)
					}
					if fe.Skipped {
						consumed += HeaderLen + fe.Size
						continue
					}
				default:
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(p) > fr.Max() || len(p) > len(buf) {
				t.Fatalf("frame of %d bytes", len(p))
			}
			// Re-encoding what was read reproduces the input bytes.
			out, _ = AppendFrame(out[:0], p)
			if !bytes.Equal(out, data[consumed:consumed+len(out)]) {
				t.Fatalf("re-encoded frame differs from input at %d", consumed)
			}
			consumed += len(out)
		}
	})
}

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
	checkLeaks(t)
	g := &gateWriter{entered: make(chan struct{}), release: make(chan struct{})}
	s := NewSender(g, SenderConfig{Classes: 2})
	// The first state goes straight to the (now blocked) writer.
	if err := s.Send(1, []byte("state-1")); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	// While blocked: nine more states, two of another class, two control frames.
	for i := 2; i <= 10; i++ {
		s.Send(1, []byte("state-"+string(rune('0'+i%10))))
	}
	s.Send(0, []byte("hp-1"))
	s.Send(0, []byte("hp-2"))
	s.SendControl([]byte("ping-1"))
	s.SendControl([]byte("ping-2"))
	g.release <- struct{}{} // first write done
	<-g.entered             // second write: everything pending, in one Write
	g.release <- struct{}{}
	s.Close()
	got := frames(t, g.got)
	want := []string{"state-1", "ping-1", "ping-2", "hp-2", "state-0"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	st := s.Stats()
	if st.Superseded != 9 || st.ClassSupersede[1] != 8 || st.ClassSupersede[0] != 1 || st.Frames != 5 || st.Writes != 2 || st.Dropped != 0 {
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
	checkLeaks(t)
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
	if err := s.Send(7, nil); err == nil {
		t.Fatal("class out of range accepted")
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
	checkLeaks(t)
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
		if err := s.Send(0, state); err != nil {
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

func BenchmarkAppendFrame(b *testing.B) {
	payload := make([]byte, 256)
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for i := 0; i < b.N; i++ {
		dst, _ = AppendFrame(dst[:0], payload)
	}
}

func BenchmarkReadFrame(b *testing.B) {
	one, _ := AppendFrame(nil, make([]byte, 256))
	stream := bytes.Repeat(one, 64)
	src := bytes.NewReader(stream)
	fr := NewReader(src, 0)
	buf := make([]byte, 512)
	b.ReportAllocs()
	b.SetBytes(256)
	for i := 0; i < b.N; i++ {
		if _, err := fr.ReadFrame(buf); err == io.EOF {
			src.Reset(stream)
			fr.Reset(src)
			i--
		}
	}
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
