package game

import (
	"math"
	"testing"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
)

// stateSeq reads the sequence number a real replicator writes (both
// fighters, the shared props with their claims, the inputs), and refuses
// anything that is not a state packet.
func TestStateSeq(t *testing.T) {
	a, err := newArena()
	if err != nil {
		t.Fatal(err)
	}
	r, err := ownership.New(a.world, 1, 2, ownership.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []struct {
		id     uint16
		owner  ownership.PeerID
		shared bool
	}{{1, 1, false}, {2, 2, false}, {3, 1, true}, {4, 1, true}} {
		if err := r.Track(Objects[id.id-1], id.owner, id.shared); err != nil {
			t.Fatal(err)
		}
	}
	var buf []byte
	for want := range uint32(300) {
		buf, err = r.AppendPacket(buf[:0], clocksync.GameTime(want)*16667)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := stateSeq(buf)
		if !ok || got != want {
			t.Fatalf("packet %d: stateSeq = %d, %v", want, got, ok)
		}
		for n := range len(buf) - 1 {
			stateSeq(buf[:n]) // never panics on a truncated packet
		}
	}
	for _, p := range [][]byte{nil, {}, {'G', 1}, {clocksync.Magic}, {ownership.KindState, 200}, {ownership.KindState, 0, 17}} {
		if _, ok := stateSeq(p); ok {
			t.Errorf("stateSeq(%v) accepted", p)
		}
	}
}

// The loss counted from sequence numbers: a slow sender loses nothing,
// reordering and duplicates are not loss, gaps are.
func TestSeqCounter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		seqs       []uint32
		sent, got  uint64
		wantLossPc float64
	}{
		{"every one", []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 10, 10, 0},
		{"slow sender (30 Hz: fewer numbers, none missing)", []uint32{100, 101, 102, 103, 104}, 4, 4, 0},
		{"one in five lost", []uint32{0, 1, 2, 3, 5, 6, 7, 8, 10}, 10, 8, 20},
		{"reordered", []uint32{0, 2, 1, 4, 3, 5}, 5, 5, 0},
		{"duplicated", []uint32{0, 1, 1, 2, 2, 2, 3}, 3, 3, 0},
		{"wraps around", []uint32{math.MaxUint32 - 1, math.MaxUint32, 0, 1}, 3, 3, 0},
		{"far too old ignored", []uint32{1000, 1001, 10, 1002}, 2, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c seqCounter
			for _, s := range tc.seqs {
				c.add(s)
			}
			loss := 100 * (1 - float64(c.got)/float64(c.sent))
			if c.sent != tc.sent || c.got != tc.got || math.Abs(loss-tc.wantLossPc) > 1e-9 {
				t.Errorf("sent %d got %d (loss %.1f%%), want %d %d (%.1f%%)", c.sent, c.got, loss, tc.sent, tc.got, tc.wantLossPc)
			}
		})
	}
}
