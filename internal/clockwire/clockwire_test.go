package clockwire

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"
)

func TestWireRoundTrip(t *testing.T) {
	pings := []Ping{
		{},
		{Seq: 1, T1: 123456789, Leader: true},
		{Seq: math.MaxUint32, T1: math.MinInt64},
		{Seq: 7, T1: math.MaxInt64, Leader: true},
	}
	for _, p := range pings {
		b := AppendPing([]byte{0xAA}, p)
		if len(b) != 1+PingLen || b[0] != 0xAA {
			t.Fatalf("AppendPing(%+v) = % x", p, b)
		}
		if k, err := PeekKind(b[1:]); k != KindPing || err != nil {
			t.Errorf("PeekKind = %v, %v", k, err)
		}
		got, err := ParsePing(b[1:])
		if err != nil || got != p {
			t.Errorf("ParsePing(AppendPing(%+v)) = %+v, %v", p, got, err)
		}
	}
	pongs := []Pong{
		{},
		{Seq: 9, T1: 1, T2: 2, T3: 3, Leader: true, GameValid: true, Running: true, Game: -5},
		{Seq: math.MaxUint32, T1: math.MaxInt64, T2: math.MinInt64, T3: -1, GameValid: true, Game: math.MaxInt64},
		{Running: true},
	}
	for _, p := range pongs {
		b := AppendPong(nil, p)
		if len(b) != PongLen {
			t.Fatalf("AppendPong(%+v): %d bytes", p, len(b))
		}
		got, err := ParsePong(b)
		if err != nil || got != p {
			t.Errorf("ParsePong(AppendPong(%+v)) = %+v, %v", p, got, err)
		}
	}
	// Game is not sent without GameValid.
	if got, _ := ParsePong(AppendPong(nil, Pong{Game: 42})); got.Game != 0 {
		t.Errorf("game time sent without GameValid: %+v", got)
	}
}

func TestWireLayout(t *testing.T) {
	b := AppendPing(nil, Ping{Seq: 0x01020304, T1: 0x1112131415161718, Leader: true})
	want := []byte{0xC5, 1, 1, 1, 2, 3, 4, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18}
	if !bytes.Equal(b, want) {
		t.Errorf("ping % x, want % x", b, want)
	}
	b = AppendPong(nil, Pong{Seq: 1, T1: 2, T2: 3, T3: 4, GameValid: true, Running: true, Game: 5})
	if b[2] != 6 || b[6] != 1 || b[14] != 2 || b[22] != 3 || b[30] != 4 || b[38] != 5 {
		t.Errorf("pong % x", b)
	}
}

func TestWireErrors(t *testing.T) {
	ping := AppendPing(nil, Ping{Seq: 1, T1: 2})
	pong := AppendPong(nil, Pong{Seq: 1, T1: 2, T2: 3, T3: 4, GameValid: true, Game: 5})
	mod := func(b []byte, i int, v byte) []byte {
		c := bytes.Clone(b)
		c[i] = v
		return c
	}
	cases := []struct {
		name  string
		input []byte
		pong  bool
		want  error
	}{
		{"empty", nil, false, ErrTruncated},
		{"one byte", []byte{Magic}, false, ErrTruncated},
		{"truncated ping", ping[:PingLen-1], false, ErrTruncated},
		{"truncated pong", pong[:PongLen-1], true, ErrTruncated},
		{"pong cut to ping size", pong[:PingLen], true, ErrTruncated},
		{"trailing", append(bytes.Clone(ping), 0), false, ErrTrailing},
		{"bad magic", mod(ping, 0, 0xC4), false, ErrBadMagic},
		{"text", []byte("hello, world!!!"), false, ErrBadMagic},
		{"kind 0", mod(ping, 1, 0), false, ErrBadKind},
		{"kind 3", mod(ping, 1, 3), false, ErrBadKind},
		{"pong as ping", pong, false, ErrBadKind},
		{"ping as pong", ping, true, ErrBadKind},
		{"ping flags", mod(ping, 2, 2), false, ErrBadFlags},
		{"pong flags", mod(pong, 2, 0x80), true, ErrBadFlags},
		{"pong game without flag", mod(pong, 2, 0), true, ErrBadPong},
	}
	for _, c := range cases {
		var err error
		if c.pong {
			_, err = ParsePong(c.input)
		} else {
			_, err = ParsePing(c.input)
		}
		var we *WireError
		if !errors.Is(err, c.want) || !errors.Is(err, ErrMalformed) || !errors.As(err, &we) || we.Len != len(c.input) || !bytes.Equal(we.Input, c.input[:min(16, len(c.input))]) {
			t.Errorf("%s: %v, want %v with the input", c.name, err, c.want)
		}
	}
	if KindPing.String() != "ping" || KindPong.String() != "pong" || Kind(9).String() != "Kind(9)" {
		t.Error("Kind.String")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(AppendPing(nil, Ping{Seq: 1, T1: 2, Leader: true}))
	f.Add(AppendPong(nil, Pong{Seq: 1, T1: 2, T2: 3, T3: 4, GameValid: true, Game: 5}))
	f.Add([]byte{Magic, 2})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := PeekKind(b)
		ping, perr := ParsePing(b)
		pong, qerr := ParsePong(b)
		if perr == nil && qerr == nil {
			t.Fatal("both a ping and a pong")
		}
		if err != nil && (perr == nil || qerr == nil) {
			t.Fatalf("PeekKind failed (%v) but a parser succeeded", err)
		}
		if perr == nil {
			if k != KindPing || !bytes.Equal(AppendPing(nil, ping), b) {
				t.Fatalf("ping % x does not re-encode", b)
			}
		}
		if qerr == nil {
			if k != KindPong || !bytes.Equal(AppendPong(nil, pong), b) {
				t.Fatalf("pong % x does not re-encode", b)
			}
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add(uint32(1), int64(2), int64(3), int64(4), int64(5), uint8(7))
	f.Fuzz(func(t *testing.T, seq uint32, t1, t2, t3, game int64, flags uint8) {
		p := Ping{Seq: seq, T1: time.Duration(t1), Leader: flags&1 != 0}
		if got, err := ParsePing(AppendPing(nil, p)); err != nil || got != p {
			t.Fatalf("ping %+v → %+v, %v", p, got, err)
		}
		q := Pong{Seq: seq, T1: time.Duration(t1), T2: time.Duration(t2), T3: time.Duration(t3),
			Leader: flags&1 != 0, GameValid: flags&2 != 0, Running: flags&4 != 0, Game: game}
		if !q.GameValid {
			q.Game = 0
		}
		if got, err := ParsePong(AppendPong(nil, q)); err != nil || got != q {
			t.Fatalf("pong %+v → %+v, %v", q, got, err)
		}
	})
}

func TestWireAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	ping := Ping{Seq: 1, T1: 2}
	pong := Pong{Seq: 1, T1: 2, T2: 3, T3: 4, GameValid: true, Game: 5}
	pb := AppendPing(nil, ping)
	qb := AppendPong(nil, pong)
	for name, f := range map[string]func(){
		"AppendPing": func() { buf = AppendPing(buf[:0], ping) },
		"AppendPong": func() { buf = AppendPong(buf[:0], pong) },
		"ParsePing":  func() { ParsePing(pb) },
		"ParsePong":  func() { ParsePong(qb) },
		"PeekKind":   func() { PeekKind(qb) },
	} {
		t.Run(name, func(t *testing.T) {
			if a := testing.AllocsPerRun(100, f); a != 0 {
				t.Errorf("%s: %v allocs", name, a)
			}
		})
	}
}

func BenchmarkWire(b *testing.B) {
	buf := make([]byte, 0, 64)
	pong := Pong{Seq: 1, T1: 2, T2: 3, T3: 4, GameValid: true, Game: 5}
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendPong(buf[:0], pong)
		if _, err := ParsePong(buf); err != nil {
			b.Fatal(err)
		}
	}
}
