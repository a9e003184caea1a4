package replay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/feed"
	"github.com/ragsync/ragsync/physics"
)

// testWorld has two fighters (1, 2) and a crate (3).
func testWorld(t testing.TB) *physics.World {
	t.Helper()
	w, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range []float64{-1, 1} {
		if _, err := w.AddFighter(physics.ObjectID(i+1), physics.FighterConfig{X: x}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.AddCrate(3, physics.PropConfig{Pos: physics.V(3, 1)}); err != nil {
		t.Fatal(err)
	}
	return w
}

var testHeader = Header{Fighters: [2]physics.ObjectID{1, 2}, Props: []physics.ObjectID{3}, Start: 1_000_000, Game: []byte("arena=16x10")}

// testFrames are n ticks of both sides' frames of w, stamped at their
// game time.
func testFrames(t testing.TB, w *physics.World, n int) (stamps []clocksync.GameTime, frames [][]byte) {
	t.Helper()
	w.Fighter(1).SetInput(physics.InputRight | physics.InputKick)
	for i := range n {
		w.Step()
		g := testHeader.Start + clocksync.GameTime(i*16_667)
		for side := uint8(1); side <= 2; side++ {
			f := &feed.Frame{Side: side, Round: 1, RoundStart: testHeader.Start, RoundLength: time.Minute}
			f.Snapshot.Reset(g, uint32(i))
			f.Snapshot.Add(w.Object(physics.ObjectID(side)))
			if side == 1 {
				f.Snapshot.Add(w.Object(3))
				f.Claims = []feed.Claim{{ID: 3}}
			}
			p, err := feed.Append(nil, w, f)
			if err != nil {
				t.Fatal(err)
			}
			stamps, frames = append(stamps, g), append(frames, p)
		}
	}
	return stamps, frames
}

func writeFile(t testing.TB, stamps []clocksync.GameTime, frames [][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := NewWriter(&b, testHeader)
	if err != nil {
		t.Fatal(err)
	}
	for i := range frames {
		if err := w.Append(stamps[i], frames[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestWriteRead(t *testing.T) {
	w := testWorld(t)
	stamps, frames := testFrames(t, w, 120)
	data := writeFile(t, stamps, frames)
	r, err := NewReader(data)
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	if h.Fighters != testHeader.Fighters || len(h.Props) != 1 || h.Props[0] != 3 || h.Start != testHeader.Start ||
		string(h.Game) != string(testHeader.Game) || r.Len() != len(frames) || r.Truncated() != 0 || r.End() != stamps[len(stamps)-1] {
		t.Fatalf("header %+v, %d frames, end %v", h, r.Len(), r.End())
	}
	if err := r.Verify(w); err != nil {
		t.Fatal(err)
	}
	for i := range frames {
		s, p, ok := r.Next()
		if !ok || s != stamps[i] || !bytes.Equal(p, frames[i]) {
			t.Fatalf("frame %d: %v %v", i, s, ok)
		}
	}
	if _, _, ok := r.Next(); ok {
		t.Fatal("a frame after the last")
	}
	// Seek to a time between two ticks, to an exact one, before the start
	// and past the end.
	for _, c := range []struct {
		t    clocksync.GameTime
		want int
	}{{stamps[40] + 1, 42}, {stamps[40], 40}, {0, 0}, {stamps[len(stamps)-1] + 1, len(frames)}} {
		r.Seek(c.t)
		s, _, ok := r.Next()
		if c.want == len(frames) {
			if ok {
				t.Errorf("seek past the end: a frame at %v", s)
			}
			continue
		}
		if !ok || s != stamps[c.want] {
			t.Errorf("seek %v: frame at %v, want %v", c.t, s, stamps[c.want])
		}
	}
	per := float64(len(data)) / float64(len(frames))
	t.Logf("%d frames, %d bytes: %.1f bytes a record", len(frames), len(data), per)

	// A file cut inside its last record is read up to it.
	cut := data[:len(data)-5]
	r, err = NewReader(cut)
	if err != nil || r.Len() != len(frames)-1 || r.Truncated() == 0 {
		t.Fatalf("truncated file: %v, %d frames, %d bytes left over", err, r.Len(), r.Truncated())
	}
}

// Every bad file is an *Error wrapping ErrBadFile that names the field,
// the offending value and where.
func TestReadErrors(t *testing.T) {
	w := testWorld(t)
	stamps, frames := testFrames(t, w, 3)
	good := writeFile(t, stamps, frames)
	hdr := func(mod func(b []byte) []byte) []byte {
		var b []byte
		b = mod(b)
		f := append([]byte(Magic), Version)
		f = binary.AppendUvarint(f, uint64(len(b)))
		return append(f, b...)
	}
	fields := func(f1, f2 uint64, props []uint64, start int64, rec byte, game uint64) func([]byte) []byte {
		return func(b []byte) []byte {
			b = binary.AppendUvarint(b, f1)
			b = binary.AppendUvarint(b, f2)
			b = binary.AppendUvarint(b, uint64(len(props)))
			for _, p := range props {
				b = binary.AppendUvarint(b, p)
			}
			b = binary.AppendVarint(b, start)
			b = append(b, rec)
			b = binary.AppendUvarint(b, game)
			return append(b, make([]byte, min(game, 10))...)
		}
	}
	okHeader := hdr(fields(1, 2, []uint64{3}, 0, 0, 0))
	if _, err := NewReader(okHeader); err != nil {
		t.Fatalf("a hand-built header: %v", err)
	}
	rec := func(step, length uint64, frame []byte) []byte {
		b := bytes.Clone(okHeader)
		b = binary.AppendUvarint(b, step)
		b = binary.AppendUvarint(b, length)
		return append(b, frame...)
	}
	for _, c := range []struct {
		name   string
		data   []byte
		field  string
		value  int64
		record int
	}{
		{"empty", nil, "magic", 0, -1},
		{"magic", append([]byte("RIFF"), good[4:]...), "magic", 0, -1},
		{"version", append([]byte(Magic+"\x02"), good[5:]...), "version", 2, -1},
		{"header too long", append([]byte(Magic+"\x01"), binary.AppendUvarint(nil, MaxHeader+1)...), "header length", MaxHeader + 1, -1},
		{"header cut", good[:8], "header", int64(good[5]), -1},
		{"fighter 0", hdr(fields(0, 2, nil, 0, 0, 0)), "fighter", 0, -1},
		{"same fighters", hdr(fields(2, 2, nil, 0, 0, 0)), "fighter", 2, -1},
		{"fighter id too large", hdr(fields(1, 70000, nil, 0, 0, 0)), "fighter", 70000, -1},
		{"too many props", hdr(fields(1, 2, make([]uint64, 65), 0, 0, 0)), "props", 65, -1},
		{"props not increasing", hdr(fields(1, 2, []uint64{4, 3}, 0, 0, 0)), "prop", 3, -1},
		{"a prop is a fighter", hdr(fields(1, 2, []uint64{2}, 0, 0, 0)), "prop", 2, -1},
		{"start", hdr(fields(1, 2, nil, 1<<62+1, 0, 0)), "start", 1<<62 + 1, -1},
		{"recorder", hdr(fields(1, 2, nil, 0, 3, 0)), "recorder", 3, -1},
		{"game too long", hdr(fields(1, 2, nil, 0, 0, MaxGame+1)), "game length", MaxGame + 1, -1},
		{"game cut", hdr(fields(1, 2, nil, 0, 0, 100)), "game", 100, -1},
		{"trailing header", hdr(func(b []byte) []byte { return append(fields(1, 2, nil, 0, 0, 0)(b), 9) }), "header", 1, -1},
		{"stamp step over a minute", rec(uint64(MaxGap.Microseconds())+1, 3, frames[0][:3]), "stamp step", MaxGap.Microseconds() + 1, 0},
		{"frame too short", rec(0, 2, frames[0][:2]), "frame length", 2, 0},
		{"frame too long", rec(0, feed.MaxSize+1, nil), "frame length", feed.MaxSize + 1, 0},
		{"not a frame", rec(0, 3, []byte("abc")), "frame", 'a', 0},
		{"frame version", rec(0, 3, []byte{feed.Kind, 9, 1}), "frame", int64(feed.Kind), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewReader(c.data)
			var re *Error
			if !errors.Is(err, ErrBadFile) || !errors.As(err, &re) || re.Field != c.field || re.Value != c.value || re.Record != c.record {
				t.Fatalf("got %v (%+v), want field %q value %d record %d", err, re, c.field, c.value, c.record)
			}
		})
	}
	// A frame that frames well but does not decode: Verify says which.
	bad := bytes.Clone(frames[1])
	bad[len(bad)-1] ^= 0xff
	r, err := NewReader(writeFile(t, stamps, [][]byte{frames[0], bad, frames[2], frames[3], frames[4], frames[5]}))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Verify(w)
	var re *Error
	if !errors.As(err, &re) || re.Record != 1 || !errors.Is(err, feed.ErrMalformed) {
		t.Fatalf("Verify: %v, want record 1's feed error", err)
	}
}

func TestWriterRefuses(t *testing.T) {
	var b bytes.Buffer
	if _, err := NewWriter(&b, Header{Fighters: [2]physics.ObjectID{1, 1}}); !errors.Is(err, ErrBadFile) {
		t.Fatalf("same fighters: %v", err)
	}
	w, err := NewWriter(&b, testHeader)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		stamp clocksync.GameTime
		frame []byte
	}{
		{"before the start", testHeader.Start - 1, []byte{feed.Kind, feed.Version, 1}},
		{"a minute's gap", testHeader.Start + clocksync.GameTimeOf(MaxGap) + 1, []byte{feed.Kind, feed.Version, 1}},
		{"not a frame", testHeader.Start, []byte("abc")},
		{"too long", testHeader.Start, make([]byte, feed.MaxSize+1)},
	} {
		if err := w.Append(c.stamp, c.frame); !errors.Is(err, ErrBadFile) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	frame := []byte{feed.Kind, feed.Version, 1}
	if n := testing.AllocsPerRun(100, func() {
		if err := w.Append(testHeader.Start, frame); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Append: %v allocations", n)
	}
}

// FuzzReader checks that no file makes the Reader panic, that every error
// is an *Error wrapping ErrBadFile, and that a file it accepts iterates,
// seeks and verifies without panicking.
func FuzzReader(f *testing.F) {
	w := testWorld(f)
	stamps, frames := testFrames(f, w, 4)
	good := writeFile(f, stamps, frames)
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add(good[:20])
	m := bytes.Clone(good)
	m[len(m)/2] ^= 0x40
	f.Add(m)
	f.Add([]byte(Magic + "\x01\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(data)
		if err != nil {
			var re *Error
			if !errors.As(err, &re) || !errors.Is(err, ErrBadFile) {
				t.Fatalf("error %T %v is not an *Error wrapping ErrBadFile", err, err)
			}
			return
		}
		if err := r.Verify(w); err != nil {
			var re *Error
			if !errors.As(err, &re) || !errors.Is(err, feed.ErrMalformed) {
				t.Fatalf("Verify error %T %v is not an *Error wrapping feed.ErrMalformed", err, err)
			}
		}
		prev := r.Header().Start
		n := 0
		for {
			s, p, ok := r.Next()
			if !ok {
				break
			}
			if s < prev || len(p) < 3 || len(p) > feed.MaxSize || p[0] != feed.Kind {
				t.Fatalf("frame %d at %v after %v, %d bytes", n, s, prev, len(p))
			}
			prev = s
			n++
		}
		if n != r.Len() {
			t.Fatalf("%d frames iterated, Len %d", n, r.Len())
		}
		r.Seek(r.End())
		if s, _, ok := r.Next(); n > 0 && (!ok || s != r.End()) {
			t.Fatalf("seek to the end: %v %v, end %v", s, ok, r.End())
		}
	})
}
