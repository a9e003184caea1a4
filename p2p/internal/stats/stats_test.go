package stats

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestSeqTrackerInOrder(t *testing.T) {
	var tr SeqTracker
	for i := uint32(10); i < 20; i++ {
		if r := tr.Add(i); r != SeqInOrder {
			t.Fatalf("seq %d: %v", i, r)
		}
	}
	if tr.Expected() != 10 || tr.Received() != 10 || tr.Lost() != 0 || tr.Loss() != 0 {
		t.Errorf("expected %d received %d lost %d", tr.Expected(), tr.Received(), tr.Lost())
	}
}

func TestSeqTrackerLossDupReorder(t *testing.T) {
	var tr SeqTracker
	tr.Begin(0)
	// 0 1 _ 3 4 2(reordered) 4(dup) _ _ 8 1(dup) 9
	want := []struct {
		seq uint32
		r   SeqResult
	}{
		{0, SeqInOrder}, {1, SeqInOrder}, {3, SeqInOrder}, {4, SeqInOrder},
		{2, SeqReordered}, {4, SeqDuplicate}, {8, SeqInOrder}, {1, SeqDuplicate}, {9, SeqInOrder},
	}
	for _, w := range want {
		if r := tr.Add(w.seq); r != w.r {
			t.Errorf("seq %d: %v, want %v", w.seq, r, w.r)
		}
	}
	if tr.Expected() != 10 || tr.Received() != 7 || tr.Lost() != 3 {
		t.Errorf("expected %d received %d lost %d, want 10 7 3", tr.Expected(), tr.Received(), tr.Lost())
	}
	if tr.Duplicates() != 2 || tr.Reordered() != 1 || tr.Late() != 0 {
		t.Errorf("dups %d reordered %d late %d", tr.Duplicates(), tr.Reordered(), tr.Late())
	}
	if math.Abs(tr.Loss()-0.3) > 1e-9 {
		t.Errorf("loss %v", tr.Loss())
	}
	// A late packet fills a gap: one loss less.
	tr.Add(5)
	if tr.Lost() != 2 {
		t.Errorf("lost %d after a reordered arrival", tr.Lost())
	}
}

func TestSeqTrackerBeginCountsLeadingLoss(t *testing.T) {
	var tr SeqTracker
	tr.Begin(0)
	tr.Add(3) // 0, 1, 2 lost
	if tr.Expected() != 4 || tr.Lost() != 3 {
		t.Errorf("expected %d lost %d", tr.Expected(), tr.Lost())
	}
	var tr2 SeqTracker
	tr2.Add(3)
	tr2.Add(2) // before the first seen: reordered, extends the start
	if tr2.Expected() != 2 || tr2.Lost() != 0 || tr2.Reordered() != 1 {
		t.Errorf("expected %d lost %d reordered %d", tr2.Expected(), tr2.Lost(), tr2.Reordered())
	}
}

func TestSeqTrackerWrapAndLate(t *testing.T) {
	var tr SeqTracker
	start := uint32(math.MaxUint32 - 5)
	tr.Begin(start)
	for i := uint32(0); i < 20; i++ {
		if r := tr.Add(start + i); r != SeqInOrder {
			t.Fatalf("seq %d: %v", start+i, r)
		}
	}
	if tr.Expected() != 20 || tr.Lost() != 0 {
		t.Errorf("across the wrap: expected %d lost %d", tr.Expected(), tr.Lost())
	}
	newest := start + 19
	if r := tr.Add(newest - SeqWindow); r != SeqLate {
		t.Errorf("window-old packet: %v", r)
	}
	if r := tr.Add(newest + 2*SeqWindow); r != SeqInOrder {
		t.Errorf("big jump: %v", r)
	}
	if r := tr.Add(newest + 2*SeqWindow); r != SeqDuplicate {
		t.Errorf("dup after jump: %v", r)
	}
	if r := tr.Add(newest + 2*SeqWindow - 1); r != SeqReordered {
		t.Errorf("gap after jump: %v", r)
	}
	if tr.Late() != 1 {
		t.Errorf("late %d", tr.Late())
	}
}

// TestSeqTrackerRandom checks the counters against a brute-force model
// under random loss, duplication and bounded reordering.
func TestSeqTrackerRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 20000
	var arrivals []uint32
	for i := uint32(0); i < n; i++ {
		if rng.Float64() < 0.1 {
			continue // lost
		}
		arrivals = append(arrivals, i)
		if rng.Float64() < 0.05 {
			arrivals = append(arrivals, i) // duplicate
		}
	}
	// Local reordering: swap neighbours.
	for i := 0; i+1 < len(arrivals); i++ {
		if rng.Float64() < 0.1 {
			arrivals[i], arrivals[i+1] = arrivals[i+1], arrivals[i]
		}
	}
	var tr SeqTracker
	tr.Begin(0)
	seen := map[uint32]bool{}
	var dups, reordered uint64
	var newest int64 = -1
	for _, s := range arrivals {
		r := tr.Add(s)
		switch {
		case seen[s]:
			dups++
			if r != SeqDuplicate {
				t.Fatalf("seq %d: %v, want duplicate", s, r)
			}
		case int64(s) < newest:
			reordered++
			if r != SeqReordered {
				t.Fatalf("seq %d: %v, want reordered", s, r)
			}
		default:
			if r != SeqInOrder {
				t.Fatalf("seq %d: %v, want in-order", s, r)
			}
		}
		seen[s] = true
		newest = max(newest, int64(s))
	}
	if tr.Received() != uint64(len(seen)) || tr.Duplicates() != dups || tr.Reordered() != reordered {
		t.Errorf("received %d/%d dups %d/%d reordered %d/%d", tr.Received(), len(seen), tr.Duplicates(), dups, tr.Reordered(), reordered)
	}
	if tr.Lost() != uint64(newest+1)-uint64(len(seen)) {
		t.Errorf("lost %d", tr.Lost())
	}
	if l := tr.Loss(); l < 0.08 || l > 0.12 {
		t.Errorf("loss %.3f, want ~0.10", l)
	}
}

func TestJitter(t *testing.T) {
	var j Jitter
	// Constant transit (plus any constant offset): no jitter.
	for i := 0; i < 100; i++ {
		j.Add(5*time.Second + 20*time.Millisecond)
	}
	if j.Value() != 0 {
		t.Errorf("constant transit: jitter %v", j.Value())
	}
	// Alternating ±d around a mean: |D| = 2d every time, so J → 2d.
	var k Jitter
	d := 5 * time.Millisecond
	for i := 0; i < 500; i++ {
		if i%2 == 0 {
			k.Add(50*time.Millisecond + d)
		} else {
			k.Add(50*time.Millisecond - d)
		}
	}
	if v := k.Value(); v < 2*d-100*time.Microsecond || v > 2*d {
		t.Errorf("alternating ±%v: jitter %v, want ~%v", d, v, 2*d)
	}
	// Uniform ±J transit: E|D| for the difference of two U(−a,a) is 2a/3.
	var u Jitter
	rng := rand.New(rand.NewPCG(5, 6))
	a := 10 * time.Millisecond
	var sum time.Duration
	for i := 0; i < 20000; i++ {
		u.Add(30*time.Millisecond + time.Duration((rng.Float64()*2-1)*float64(a)))
		if i >= 10000 {
			sum += u.Value()
		}
	}
	mean := sum / 10000
	if want := 2 * a / 3; mean < want*9/10 || mean > want*11/10 {
		t.Errorf("uniform ±%v: mean jitter %v, want ~%v", a, mean, want)
	}
}

func TestRateMeter(t *testing.T) {
	var r RateMeter
	r.Update(0)
	for i := 0; i < 60; i++ {
		r.Add(100)
	}
	if r.Update(500 * time.Millisecond) {
		t.Error("window closed early")
	}
	if !r.Update(time.Second) {
		t.Fatal("window did not close")
	}
	if r.PacketsPerSec() != 60 || r.BytesPerSec() != 6000 {
		t.Errorf("rates %v pps %v Bps", r.PacketsPerSec(), r.BytesPerSec())
	}
	r.Add(10)
	r.Update(3 * time.Second) // a 2 s window
	if r.PacketsPerSec() != 0.5 || r.BytesPerSec() != 5 {
		t.Errorf("rates %v pps %v Bps", r.PacketsPerSec(), r.BytesPerSec())
	}
	if p, b := r.Totals(); p != 61 || b != 6010 {
		t.Errorf("totals %d %d", p, b)
	}
}

func TestEstimatorsDoNotAllocate(t *testing.T) {
	var tr SeqTracker
	var j Jitter
	var r RateMeter
	i := uint32(0)
	n := testing.AllocsPerRun(1000, func() {
		tr.Add(i)
		i += 2
		j.Add(time.Duration(i))
		r.Add(10)
		r.Update(time.Duration(i) * time.Millisecond)
	})
	if n != 0 {
		t.Errorf("%v allocs per run", n)
	}
}
