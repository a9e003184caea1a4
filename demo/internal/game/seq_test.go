package game

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/p2p"
)

// The link numbers the state packets it sends and the receiving link
// strips the number: the Match gets its packet back byte for byte, for a
// real replicator's packets; other packets pass untouched.
func TestNumberedStates(t *testing.T) {
	a, err := newArena()
	if err != nil {
		t.Fatal(err)
	}
	r, err := ownership.New(a.world, 1, 2, ownership.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		id     int
		owner  ownership.PeerID
		shared bool
	}{{0, 1, false}, {1, 2, false}, {2, 1, true}, {3, 1, true}} {
		if err := r.Track(Objects[o.id], o.owner, o.shared); err != nil {
			t.Fatal(err)
		}
	}
	var pkt, wire []byte
	for i := range 70000 { // wraps the 16-bit number
		seq := uint16(i)
		if i%1000 == 0 {
			if pkt, err = r.AppendPacket(pkt[:0], clocksync.GameTime(i)*16667); err != nil {
				t.Fatal(err)
			}
		}
		var ok bool
		wire, ok = numberState(wire[:0], pkt, seq)
		if !ok {
			t.Fatalf("packet %d not numbered", i)
		}
		got, body, ok := unnumber(wire)
		if !ok || got != seq || !bytes.Equal(body, pkt) {
			t.Fatalf("packet %d: number %d (%v), body equal %v", i, got, ok, bytes.Equal(body, pkt))
		}
	}
	msg := AppendMessage(nil, &Message{Round: 1, Length: time.Minute})
	huge := append([]byte{ownership.KindState}, make([]byte, p2p.DefaultMaxMessageSize)...)
	for _, p := range [][]byte{nil, {}, msg, {clocksync.Magic, 1, 2, 3}, huge} {
		if out, ok := numberState(nil, p, 7); ok || len(out) != 0 {
			t.Errorf("numberState(%.8x...) numbered it", p)
		}
		if _, body, ok := unnumber(p); ok || !bytes.Equal(body, p) {
			t.Errorf("unnumber(%.8x...) changed it", p)
		}
	}
}

// The loss counted from sequence numbers: a slow sender loses nothing,
// reordering and duplicates are not loss, gaps are.
func TestSeqCounter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		seqs       []uint16
		sent, got  uint64
		wantLossPc float64
	}{
		{"every one", []uint16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 10, 10, 0},
		{"slow sender (30 Hz: fewer numbers, none missing)", []uint16{100, 101, 102, 103, 104}, 4, 4, 0},
		{"one in five lost", []uint16{0, 1, 2, 3, 5, 6, 7, 8, 10}, 10, 8, 20},
		{"reordered", []uint16{0, 2, 1, 4, 3, 5}, 5, 5, 0},
		{"duplicated", []uint16{0, 1, 1, 2, 2, 2, 3}, 3, 3, 0},
		{"wraps around", []uint16{math.MaxUint16 - 1, math.MaxUint16, 0, 1}, 3, 3, 0},
		{"far too old ignored", []uint16{1000, 1001, 10, 1002}, 2, 2, 0},
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
