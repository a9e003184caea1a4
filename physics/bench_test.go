package physics

import "testing"

// BenchmarkWorldStep steps a world with two fighters standing on the ground,
// pressed against each other and trading blows.
func BenchmarkWorldStep(b *testing.B) {
	w := newWorld(b)
	f1 := addFighter(b, w, 1, -0.3)
	f2 := addFighter(b, w, 2, 0.3)
	f1.SetInput(InputRight)
	f2.SetInput(InputLeft)
	steps(w, 60)
	if len(w.Contacts()) == 0 {
		b.Fatal("fighters not in contact")
	}
	in := []Input{InputRight | InputPunch, InputRight, InputRight | InputKick, InputRight}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f1.SetInput(in[i/20%len(in)])
		w.Step()
		for _, h := range w.Hits() {
			w.Fighter(h.Victim).setHP(w.Fighter(h.Victim).MaxHP()) // keep both standing
		}
	}
}

func benchSnapshot(b *testing.B) (*snapshotCodec, *Snapshot) {
	w := newWorld(b)
	f := addFighter(b, w, 1, 0)
	f.SetInput(InputRight)
	steps(w, 40)
	var s Snapshot
	s.Reset(3_600_000_000, 216_000)
	s.Add(f.Object())
	return w.codec, &s
}

func BenchmarkSnapshotAppend(b *testing.B) {
	c, s := benchSnapshot(b)
	buf := make([]byte, 0, maxPacketSize)
	var err error
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf, err = c.appendSnapshot(buf[:0], s)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)), "bytes/fighter")
}

func BenchmarkSnapshotDecode(b *testing.B) {
	c, s := benchSnapshot(b)
	buf, err := c.appendSnapshot(nil, s)
	if err != nil {
		b.Fatal(err)
	}
	var d Snapshot
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.decodeSnapshot(buf, &d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)), "bytes/fighter")
}
