package relay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

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
		t.Run(fmt.Sprint("cut at ", cut), func(t *testing.T) {
			fr = NewReader(bytes.NewReader(f1[:cut]), 0)
			if _, err := fr.ReadFrame(make([]byte, 100)); err != io.ErrUnexpectedEOF {
				t.Fatalf("cut at %d: %v", cut, err)
			}
		})
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
