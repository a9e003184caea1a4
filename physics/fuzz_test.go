package physics

import (
	"testing"

	"github.com/ragsync/ragsync/clocksync"
)

// fuzzWorld is a world with a fighter, a crate and a ball whose layouts the
// fuzzed decoder uses.
func fuzzWorld(t testing.TB) (*World, *snapshotCodec) {
	w := newWorld(t)
	addFighter(t, w, 1, -1)
	addFighter(t, w, 2, 1)
	if _, err := w.AddCrate(5, PropConfig{Pos: V(3, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddBall(300, PropConfig{Pos: V(-3, 4)}); err != nil {
		t.Fatal(err)
	}
	return w, w.codec
}

func sameSnapshot(a, b *Snapshot) bool {
	if a.Time != b.Time || a.Seq != b.Seq || len(a.Objects) != len(b.Objects) {
		return false
	}
	for i := range a.Objects {
		x, y := &a.Objects[i], &b.Objects[i]
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

// FuzzDecodeSnapshot checks that decoding arbitrary bytes never panics and
// that whatever decodes re-encodes to the same snapshot. (VelShift, the
// precision level the encoder picked, may differ: the values may not.)
func FuzzDecodeSnapshot(f *testing.F) {
	w, c := fuzzWorld(f)
	var s Snapshot
	for i := 0; i < 4; i++ {
		w.Fighters()[0].SetInput([]Input{InputKick, InputPunch, InputRight, InputJump}[i])
		steps(w, 15)
		s.Reset(clocksync.GameTime(i)*1_000_003-5, uint32(i*77))
		for _, o := range w.Objects()[i%2:] {
			s.Add(o)
		}
		buf, err := c.appendSnapshot(nil, &s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(buf)
		f.Add(buf[:len(buf)/2])
		f.Add(append(append([]byte{}, buf...), 0))
		m := append([]byte{}, buf...)
		m[len(m)/3] ^= 0x10
		f.Add(m)
	}
	s.Reset(0, 0)
	empty, _ := c.appendSnapshot(nil, &s)
	f.Add(empty)
	f.Add([]byte{})
	f.Add([]byte{snapshotVersion, c.tag, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})

	var d1, d2 Snapshot
	var buf []byte
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := c.decodeSnapshot(data, &d1); err != nil {
			if _, ok := err.(*CodecError); !ok {
				t.Fatalf("error %T %v is not a *CodecError", err, err)
			}
			return
		}
		for _, o := range d1.Objects {
			if err := w.Object(o.ID).validateBodies(o.Bodies); err != nil {
				t.Fatalf("decoded state does not validate: %v", err)
			}
		}
		var err error
		buf, err = c.appendSnapshot(buf[:0], &d1)
		if err != nil {
			t.Fatalf("re-encoding a decoded snapshot: %v", err)
		}
		if err := c.decodeSnapshot(buf, &d2); err != nil {
			t.Fatalf("decoding a re-encoded snapshot: %v", err)
		}
		if !sameSnapshot(&d1, &d2) {
			t.Fatalf("round trip changed the snapshot:\n%+v\n%+v", d1, d2)
		}
	})
}
