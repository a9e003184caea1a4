package clocksync

import (
	"math"
	"testing"
	"time"
)

func TestFilter(t *testing.T) {
	ms := GameTime(1000)
	var f Filter // defaults: 500 ms old, 1 s ahead
	steps := []struct {
		ts, now GameTime
		want    Reason
	}{
		{10 * ms, 50 * ms, Accepted},       // first state
		{10 * ms, 50 * ms, Duplicate},      // same timestamp again
		{26 * ms, 60 * ms, Accepted},       // newer
		{18 * ms, 61 * ms, OutOfOrder},     // overtaken by 26
		{26 * ms, 62 * ms, Duplicate},      // a duplicate of the newest
		{100 * ms, 700 * ms, TooOld},       // newer, but 600 ms old
		{200 * ms, 700 * ms, Accepted},     // exactly 500 ms old: still fine
		{1801 * ms, 800 * ms, TooNew},      // 1.001 s ahead
		{1800 * ms, 800 * ms, Accepted},    // exactly 1 s ahead
		{1000 * ms, 2000 * ms, OutOfOrder}, // older than 1800 (and too old: order first)
		{math.MaxInt64, 2000 * ms, TooNew},
		{math.MinInt64, 2000 * ms, OutOfOrder},
	}
	for i, s := range steps {
		if got := f.Check(s.ts, s.now); got != s.want {
			t.Fatalf("step %d: Check(%v, %v) = %v, want %v", i, s.ts, s.now, got, s.want)
		}
	}
	c := f.Counts()
	if c.Accepted != 4 || c.Duplicate != 2 || c.OutOfOrder != 3 || c.TooOld != 1 || c.TooNew != 2 || c.Dropped() != 8 {
		t.Errorf("counts %+v", c)
	}
	if n, ok := f.Newest(); !ok || n != 1800*ms {
		t.Errorf("Newest = %v, %v", n, ok)
	}
	f.Reset()
	if _, ok := f.Newest(); ok {
		t.Error("Newest after Reset")
	}
	if f.Check(10*ms, 10*ms) != Accepted {
		t.Error("not accepted after Reset")
	}
	if f.Counts().Accepted != 5 {
		t.Error("Reset cleared the counters")
	}
}

func TestFilterLimits(t *testing.T) {
	f := Filter{MaxDelay: 100 * time.Millisecond, MaxAhead: 20 * time.Millisecond}
	if r := f.Check(0, 100_001); r != TooOld {
		t.Errorf("100.001 ms old: %v", r)
	}
	if r := f.Check(120_001, 100_000); r != TooNew {
		t.Errorf("20.001 ms ahead: %v", r)
	}
	if r := f.Check(50_000, 100_000); r != Accepted {
		t.Errorf("50 ms old: %v", r)
	}
	// Negative limits disable the checks; the order checks remain.
	f = Filter{MaxDelay: -1, MaxAhead: -1}
	if f.Check(math.MinInt64+1, 0) != Accepted || f.Check(math.MaxInt64, 0) != Accepted || f.Check(5, 0) != OutOfOrder {
		t.Error("disabled limits")
	}
	// A timestamp near the int64 limits with a current time near the other
	// limit must not overflow into acceptance.
	var g Filter
	if r := g.Check(math.MinInt64, math.MaxInt64); r != TooOld {
		t.Errorf("MinInt64 at MaxInt64: %v", r)
	}
	if r := g.Check(math.MaxInt64, math.MinInt64); r != TooNew {
		t.Errorf("MaxInt64 at MinInt64: %v", r)
	}
}

func TestReasonString(t *testing.T) {
	want := map[Reason]string{
		ReasonUnknown: "Reason(0)", Accepted: "accepted", Duplicate: "duplicate",
		OutOfOrder: "out-of-order", TooOld: "too-old", TooNew: "too-new", Reason(99): "Reason(99)",
	}
	for r, s := range want {
		if r.String() != s {
			t.Errorf("%d: %q, want %q", r, r.String(), s)
		}
	}
}

func TestFilterAllocs(t *testing.T) {
	var f Filter
	ts := GameTime(0)
	if a := testing.AllocsPerRun(1000, func() {
		ts += 16_667
		f.Check(ts, ts+50_000)
		f.Check(ts, ts+50_000)
	}); a != 0 {
		t.Errorf("%v allocs", a)
	}
}

func BenchmarkFilterCheck(b *testing.B) {
	var f Filter
	ts := GameTime(0)
	b.ReportAllocs()
	for b.Loop() {
		ts += 16_667
		f.Check(ts, ts+50_000)
	}
}
