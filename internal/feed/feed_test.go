package feed

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/physics"
)

// testWorld has two fighters (1, 2) and two props (3, 4).
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
	if _, err := w.AddBall(4, physics.PropConfig{Pos: physics.V(-3, 4)}); err != nil {
		t.Fatal(err)
	}
	return w
}

// testFrame is side 1's frame after n steps: its fighter and the crate.
func testFrame(t testing.TB, w *physics.World, n int) *Frame {
	t.Helper()
	w.Fighter(1).SetInput(physics.InputRight | physics.InputPunch)
	for range n {
		w.Step()
	}
	f := &Frame{Side: 1, Round: 3, RoundStart: 5_000_000, RoundLength: 90 * time.Second,
		HitsTaken: 7, Damage: 41, HitsDealt: 9, Claims: []Claim{{3, 12}}}
	f.Snapshot.Reset(clocksync.GameTime(60_000_000+n*16_667), uint32(3600+n))
	f.Snapshot.Add(w.Object(1))
	f.Snapshot.Add(w.Object(3))
	return f
}

func sameFrame(a, b *Frame) bool {
	if a.Side != b.Side || a.Round != b.Round || a.RoundStart != b.RoundStart || a.RoundLength != b.RoundLength ||
		a.HitsTaken != b.HitsTaken || a.Damage != b.Damage || a.HitsDealt != b.HitsDealt ||
		len(a.Claims) != len(b.Claims) || a.Snapshot.Time != b.Snapshot.Time || a.Snapshot.Seq != b.Snapshot.Seq ||
		len(a.Snapshot.Objects) != len(b.Snapshot.Objects) {
		return false
	}
	for i := range a.Claims {
		if a.Claims[i] != b.Claims[i] {
			return false
		}
	}
	for i := range a.Snapshot.Objects {
		x, y := &a.Snapshot.Objects[i], &b.Snapshot.Objects[i]
		if x.ID != y.ID || x.Fighter != y.Fighter || len(x.Bodies) != len(y.Bodies) {
			return false
		}
		for k := range x.Bodies {
			if x.Bodies[k] != y.Bodies[k] {
				return false
			}
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	w := testWorld(t)
	f := testFrame(t, w, 30)
	p, err := Append([]byte("prefix"), w, f)
	if err != nil {
		t.Fatal(err)
	}
	if string(p[:6]) != "prefix" {
		t.Fatal("Append overwrote dst")
	}
	p = p[6:]
	var g Frame
	if err := Decode(p, w, &g); err != nil {
		t.Fatal(err)
	}
	if g.Side != 1 || g.Round != 3 || g.RoundStart != 5_000_000 || g.RoundLength != 90*time.Second ||
		g.HitsTaken != 7 || g.Damage != 41 || g.HitsDealt != 9 || len(g.Claims) != 1 || g.Claims[0] != (Claim{3, 12}) ||
		g.Time() != f.Time() || len(g.Snapshot.Objects) != 2 {
		t.Fatalf("decoded %+v", g)
	}
	if e, ok := g.Epoch(3); !ok || e != 12 {
		t.Errorf("Epoch(3) = %d, %v", e, ok)
	}
	if _, ok := g.Epoch(4); ok {
		t.Error("Epoch(4) claimed")
	}
	// Decoding and re-encoding is exact.
	q, err := Append(nil, w, &g)
	if err != nil {
		t.Fatal(err)
	}
	var h Frame
	if err := Decode(q, w, &h); err != nil || !sameFrame(&g, &h) {
		t.Fatalf("re-encoded frame differs (%v)", err)
	}
	t.Logf("a frame of a fighter and a crate: %d bytes (header %d)", len(p), len(p)-snapshotLen(t, w, f))
}

func snapshotLen(t *testing.T, w *physics.World, f *Frame) int {
	b, err := w.AppendSnapshot(nil, &f.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// Every bad frame is an *Error wrapping ErrMalformed, naming the field and
// the offending value.
func TestDecodeErrors(t *testing.T) {
	w := testWorld(t)
	good, err := Append(nil, w, testFrame(t, w, 10))
	if err != nil {
		t.Fatal(err)
	}
	set := func(i int, b byte) []byte {
		p := bytes.Clone(good)
		p[i] = b
		return p
	}
	snap, err := w.AppendSnapshot(nil, &testFrame(t, w, 10).Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	// raw builds a frame by hand: side 1, the fields given as uvarints
	// (round start as a varint), then the crate and fighter snapshot.
	raw := func(round uint64, start int64, length, hits, damage, dealt uint64, claims ...uint64) []byte {
		b := []byte{Kind, Version, 1}
		b = binary.AppendUvarint(b, round)
		b = binary.AppendVarint(b, start)
		for _, v := range append([]uint64{length, hits, damage, dealt}, claims...) {
			b = binary.AppendUvarint(b, v)
		}
		return append(b, snap...)
	}
	if err := Decode(raw(1, 0, 0, 0, 0, 0, 1, 3, 0), w, new(Frame)); err != nil {
		t.Fatalf("a hand-built frame: %v", err)
	}
	for _, c := range []struct {
		name  string
		p     []byte
		field string
		value int64
	}{
		{"empty", nil, "header", 0},
		{"kind", set(0, 'S'), "kind", 'S'},
		{"version", set(1, 2), "version", 2},
		{"side 0", set(2, 0), "side", 0},
		{"side 3", set(2, 3), "side", 3},
		{"truncated header", good[:5], "round start", 0},
		{"round over 2³²", raw(1<<32, 0, 0, 0, 0, 0, 0), "round", 1 << 32},
		{"round start over 24 h", raw(1, 86_400_000_001, 0, 0, 0, 0, 0), "round start", 86_400_000_001},
		{"round length over 24 h", raw(1, 0, 86_400_001, 0, 0, 0, 0), "round length", 86_400_001},
		{"hits over 2³²", raw(1, 0, 0, 1<<32, 0, 0, 0), "hits taken", 1 << 32},
		{"damage over 2³²", raw(1, 0, 0, 0, 1<<32, 0, 0), "damage", 1 << 32},
		{"claims over 64", raw(1, 0, 0, 0, 0, 0, 65), "claims", 65},
		{"claim id 0", raw(1, 0, 0, 0, 0, 0, 1, 0, 0), "claim id", 0},
		{"claim ids not increasing", raw(1, 0, 0, 0, 0, 0, 2, 3, 0, 3, 0), "claim id", 3},
		{"claim epoch over 2³²", raw(1, 0, 0, 0, 0, 0, 1, 3, 1<<32), "claim epoch", 1 << 32},
		{"claim for an object not carried", raw(1, 0, 0, 0, 0, 0, 1, 4, 0), "claim id", 4},
		{"claim for a fighter", raw(1, 0, 0, 0, 0, 0, 2, 1, 0, 3, 0), "claim id", 1},
		{"truncated snapshot", good[:len(good)-2], "snapshot", 0},
		{"trailing byte", append(bytes.Clone(good), 0), "snapshot", 0},
		{"too long", make([]byte, MaxSize+1), "size", MaxSize + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f Frame
			err := Decode(c.p, w, &f)
			var fe *Error
			if !errors.Is(err, ErrMalformed) || !errors.As(err, &fe) || fe.Field != c.field || fe.Value != c.value {
				t.Fatalf("got %v, want field %q value %d", err, c.field, c.value)
			}
		})
	}
}

func TestAppendErrors(t *testing.T) {
	w := testWorld(t)
	for _, c := range []struct {
		name  string
		mod   func(f *Frame)
		field string
	}{
		{"side", func(f *Frame) { f.Side = 0 }, "side"},
		{"round start", func(f *Frame) { f.RoundStart = f.Time() + clocksync.GameTimeOf(25*time.Hour) }, "round start"},
		{"round length", func(f *Frame) { f.RoundLength = time.Millisecond / 2 }, "round length"},
		{"claim order", func(f *Frame) { f.Claims = []Claim{{3, 1}, {3, 2}} }, "claim id"},
		{"claim not carried", func(f *Frame) { f.Claims = []Claim{{4, 1}} }, "claim id"},
		{"snapshot", func(f *Frame) { f.Snapshot.Objects[0].Fighter.HP = 5000 }, "snapshot"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := testFrame(t, w, 1)
			c.mod(f)
			dst := []byte("keep")
			out, err := Append(dst, w, f)
			var fe *Error
			if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrMalformed) || string(out) != "keep" {
				t.Fatalf("got %q, %v; want dst unchanged and field %q", out, err, c.field)
			}
		})
	}
}

func TestNoAllocations(t *testing.T) {
	w := testWorld(t)
	f := testFrame(t, w, 20)
	buf := make([]byte, 0, 256)
	var g Frame
	p, _ := Append(nil, w, f)
	_ = Decode(p, w, &g)
	if n := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = Append(buf[:0], w, f); err != nil {
			t.Fatal(err)
		}
		if err := Decode(buf, w, &g); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per Append+Decode", n)
	}
}

// FuzzDecode checks that decoding any bytes never panics, that every error
// is an *Error wrapping ErrMalformed, and that whatever decodes re-encodes
// to the same frame.
func FuzzDecode(f *testing.F) {
	w := testWorld(f)
	for i := range 4 {
		fr := testFrame(f, w, 15*i)
		if i%2 == 1 {
			fr.Side, fr.Claims = 2, nil
			fr.Snapshot.Objects = fr.Snapshot.Objects[:1]
			fr.Snapshot.Objects[0].ID = 2
			fr.Snapshot.Reset(fr.Time(), 1)
			fr.Snapshot.Add(w.Object(2))
			fr.Snapshot.Add(w.Object(4))
			fr.Claims = []Claim{{4, 1<<32 - 1}}
		}
		p, err := Append(nil, w, fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
		f.Add(p[:len(p)/2])
		m := bytes.Clone(p)
		m[len(m)/3] ^= 0x20
		f.Add(m)
	}
	f.Add([]byte{Kind, Version, 1})
	var d1, d2 Frame
	var buf []byte
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Decode(data, w, &d1)
		if err != nil {
			var fe *Error
			if !errors.As(err, &fe) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %T %v is not an *Error wrapping ErrMalformed", err, err)
			}
			return
		}
		buf, err = Append(buf[:0], w, &d1)
		if err != nil {
			t.Fatalf("a decoded frame does not encode: %v", err)
		}
		if err := Decode(buf, w, &d2); err != nil {
			t.Fatalf("a re-encoded frame does not decode: %v", err)
		}
		if !sameFrame(&d1, &d2) {
			t.Fatalf("re-encoded frame differs:\n%+v\n%+v", d1, d2)
		}
	})
}
