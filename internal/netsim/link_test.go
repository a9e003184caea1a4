package netsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

// delivery is one packet handed out by a Link in a test.
type delivery struct {
	at  time.Duration // time Deliver was called with
	seq uint64        // sequence number written into the payload by sendSeq
}

// run sends n packets, one every interval starting at 0, each carrying its
// index, delivering in steps of tick, then drains the link. It returns the
// deliveries in order, with at = the tick they came out at, and the send
// time of each packet index.
func run(t testing.TB, l *Link, n int, interval, tick time.Duration) []delivery {
	t.Helper()
	var out []delivery
	var buf [8]byte
	fn := func(now time.Duration) func(p []byte) {
		return func(p []byte) {
			out = append(out, delivery{now, binary.BigEndian.Uint64(p)})
		}
	}
	now := time.Duration(0)
	next := time.Duration(0)
	sent := 0
	for sent < n {
		for sent < n && next <= now {
			binary.BigEndian.PutUint64(buf[:], uint64(sent))
			if err := l.Send(next, buf[:]); err != nil {
				t.Fatal(err)
			}
			sent++
			next += interval
		}
		l.Deliver(now, fn(now))
		now += tick
	}
	for {
		at, ok := l.NextArrival()
		if !ok {
			break
		}
		l.Deliver(at, fn(at))
	}
	return out
}

// transmit sends n packets, one every interval from time 0, each carrying
// its index, and returns the deliveries with their exact arrival times: it
// jumps from event to event, delivering what is due before each send, and
// drains the link at the end.
func transmit(t testing.TB, l *Link, n int, interval time.Duration) []delivery {
	t.Helper()
	var out []delivery
	var buf [8]byte
	for i := range n {
		now := time.Duration(i) * interval
		out = deliverUntil(l, now, out)
		binary.BigEndian.PutUint64(buf[:], uint64(i))
		if err := l.Send(now, buf[:]); err != nil {
			t.Fatal(err)
		}
	}
	return deliverUntil(l, math.MaxInt64, out)
}

// deliverUntil delivers, event by event, what arrives at or before until,
// appending it to out.
func deliverUntil(l *Link, until time.Duration, out []delivery) []delivery {
	for {
		at, ok := l.NextArrival()
		if !ok || at > until {
			return out
		}
		l.Deliver(at, func(p []byte) {
			out = append(out, delivery{at, binary.BigEndian.Uint64(p)})
		})
	}
}

func newLink(t testing.TB, cfg Config, seed uint64) *Link {
	t.Helper()
	l, err := NewLink(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func checkInvariant(t *testing.T, s Stats) {
	t.Helper()
	if s.Sent+s.Duplicated != s.Delivered+s.Lost()+s.Discarded+uint64(s.InFlight) {
		t.Errorf("accounting broken: %+v", s)
	}
}

func TestPerfectLink(t *testing.T) {
	l := newLink(t, Config{}, 1)
	for i := range 100 {
		l.Send(time.Duration(i)*ms, binary.BigEndian.AppendUint64(nil, uint64(i)))
	}
	if got := l.Stats().InFlight; got != 100 {
		t.Fatalf("in flight %d, want 100", got)
	}
	// At time 49 ms exactly the first 50 packets are due.
	var got []uint64
	n := l.Deliver(49*ms, func(p []byte) { got = append(got, binary.BigEndian.Uint64(p)) })
	if n != 50 || len(got) != 50 {
		t.Fatalf("delivered %d (%d), want 50", n, len(got))
	}
	for i, d := range deliverUntil(l, math.MaxInt64, nil) {
		if want := uint64(50 + i); d.seq != want || d.at != time.Duration(want)*ms {
			t.Fatalf("delivery %d = %+v, want seq %d at %v", i, d, want, time.Duration(want)*ms)
		}
	}
	s := l.Stats()
	if s.Sent != 100 || s.Delivered != 100 || s.Lost() != 0 || s.Reordered != 0 || s.Duplicated != 0 {
		t.Errorf("stats %+v", s)
	}
	checkInvariant(t, s)
	if _, ok := l.NextArrival(); ok {
		t.Error("NextArrival on an empty link")
	}
}

func TestRandomLossRate(t *testing.T) {
	const n = 100_000
	l := newLink(t, Config{Loss: 0.1}, 7)
	got := len(transmit(t, l, n, ms))
	rate := 1 - float64(got)/n
	// σ = sqrt(0.1·0.9/1e5) ≈ 0.00095; allow 5σ.
	if math.Abs(rate-0.1) > 0.005 {
		t.Errorf("loss rate %.4f, want 0.100 ± 0.005", rate)
	}
	s := l.Stats()
	if s.LostRandom != n-uint64(got) || s.LostBurst != 0 {
		t.Errorf("stats %+v", s)
	}
	checkInvariant(t, s)
}

func TestLatencyAndJitter(t *testing.T) {
	const n = 50_000
	cfg := Config{Latency: 50 * ms, Jitter: 10 * ms}
	l := newLink(t, cfg, 3)
	var sum, sum2 float64
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for _, d := range transmit(t, l, n, ms) {
		delay := d.at - time.Duration(d.seq)*ms
		lo, hi = min(lo, delay), max(hi, delay)
		x := delay.Seconds() * 1000
		sum += x
		sum2 += x * x
	}
	mean := sum / n
	std := math.Sqrt(sum2/n - mean*mean)
	// Uniform on [40, 60] ms: mean 50, σ = 20/√12 ≈ 5.77 ms.
	if math.Abs(mean-50) > 0.1 {
		t.Errorf("mean delay %.3f ms, want 50 ± 0.1", mean)
	}
	if math.Abs(std-20/math.Sqrt(12)) > 0.1 {
		t.Errorf("delay σ %.3f ms, want 5.77 ± 0.1", std)
	}
	if lo < 40*ms || hi > 60*ms || lo > 40*ms+50*time.Microsecond || hi < 60*ms-50*time.Microsecond {
		t.Errorf("delay range [%v, %v], want to fill [40ms, 60ms]", lo, hi)
	}
	s := l.Stats()
	if s.Reordered == 0 {
		t.Error("jitter of ±10 ms on packets 1 ms apart reordered nothing")
	}
	checkInvariant(t, s)
}

func TestJitterClampsAtZero(t *testing.T) {
	l := newLink(t, Config{Latency: ms, Jitter: 5 * ms}, 3)
	zero := 0
	for _, d := range transmit(t, l, 10_000, ms) {
		delay := d.at - time.Duration(d.seq)*ms
		if delay < 0 {
			t.Fatalf("negative delay %v", delay)
		}
		if delay == 0 {
			zero++
		}
	}
	// P(delay clamps to 0) = P(U ≤ −1 ms) = 4/10.
	if zero < 3500 || zero > 4500 {
		t.Errorf("%d of 10000 packets had zero delay, want about 4000", zero)
	}
}

func TestReorderingNeedsJitterOrReorder(t *testing.T) {
	// Without jitter or reordering the link is FIFO.
	l := newLink(t, Config{Latency: 30 * ms, Loss: 0.2, Duplicate: 0.1}, 5)
	last := int64(-1)
	seen := map[uint64]bool{}
	for _, d := range transmit(t, l, 10_000, ms) {
		if seen[d.seq] {
			continue // a duplicate
		}
		seen[d.seq] = true
		if int64(d.seq) < last {
			t.Fatalf("packet %d after %d on a link without jitter", d.seq, last)
		}
		last = int64(d.seq)
	}
	if s := l.Stats(); s.Reordered != 0 {
		t.Errorf("Reordered = %d on a FIFO link", s.Reordered)
	}

	// Jitter alone: packets 16 ms apart with ±10 ms overtake each other
	// (needs |U1 − U2| > 16 ms: P = (4/20)²/2 = 2 %).
	l = newLink(t, Config{Latency: 30 * ms, Jitter: 10 * ms}, 5)
	out := transmit(t, l, 10_000, 16*ms)
	inversions := 0
	for i := 1; i < len(out); i++ {
		if out[i].seq < out[i-1].seq {
			inversions++
		}
	}
	s := l.Stats()
	if inversions == 0 || s.Reordered != uint64(inversions) {
		t.Errorf("inversions %d, Reordered %d", inversions, s.Reordered)
	}
	if frac := float64(s.Reordered) / 10_000; frac < 0.015 || frac > 0.025 {
		t.Errorf("reordered fraction %.4f, want about 0.02", frac)
	}
}

func TestExplicitReorder(t *testing.T) {
	const n = 50_000
	l := newLink(t, Config{Latency: 10 * ms, Reorder: 0.05, ReorderDelay: 10 * ms}, 11)
	out := transmit(t, l, n, ms)
	held := 0
	for _, d := range out {
		switch delay := d.at - time.Duration(d.seq)*ms; delay {
		case 10 * ms:
		case 20 * ms:
			held++
		default:
			t.Fatalf("delay %v, want 10 or 20 ms", delay)
		}
	}
	if frac := float64(held) / n; math.Abs(frac-0.05) > 0.005 {
		t.Errorf("held back %.4f of packets, want 0.05", frac)
	}
	// Every held packet is overtaken by the 10 sent after it.
	if s := l.Stats(); s.Reordered != uint64(held) {
		t.Errorf("Reordered %d, held %d", s.Reordered, held)
	}
}

func TestBurstLoss(t *testing.T) {
	const n = 400_000
	for _, burst := range []float64{1, 3, 8} {
		t.Run(fmt.Sprint("BurstLen ", burst), func(t *testing.T) {
			l := newLink(t, Config{BurstLoss: 0.1, BurstLen: burst}, 13)
			out := transmit(t, l, n, ms)
			// Runs of consecutive missing sequence numbers are the bursts.
			var runs, lost int
			prev := int64(-1)
			for _, d := range append(out, delivery{seq: n}) {
				if gap := int64(d.seq) - prev - 1; gap > 0 {
					runs++
					lost += int(gap)
				}
				prev = int64(d.seq)
			}
			rate := float64(lost) / n
			mean := float64(lost) / float64(runs)
			t.Logf("BurstLen %g: loss %.4f, mean burst %.3f over %d bursts", burst, rate, mean, runs)
			if math.Abs(rate-0.1) > 0.1*0.1 {
				t.Errorf("BurstLen %g: loss rate %.4f, want 0.1 ± 10%%", burst, rate)
			}
			if math.Abs(mean-burst) > 0.05*burst {
				t.Errorf("BurstLen %g: mean burst %.3f, want ± 5%%", burst, mean)
			}
			if s := l.Stats(); s.LostBurst != uint64(lost) || s.LostRandom != 0 {
				t.Errorf("stats %+v, lost %d", s, lost)
			}
		})
	}
}

func TestBurstAndRandomLossCountedSeparately(t *testing.T) {
	l := newLink(t, Config{Loss: 0.05, BurstLoss: 0.05, BurstLen: 4}, 17)
	transmit(t, l, 100_000, ms)
	s := l.Stats()
	// Random loss applies to the 95 % that survive the bursts.
	if r := float64(s.LostRandom) / 100_000; math.Abs(r-0.0475) > 0.004 {
		t.Errorf("random loss %.4f, want 0.0475", r)
	}
	if b := float64(s.LostBurst) / 100_000; math.Abs(b-0.05) > 0.006 {
		t.Errorf("burst loss %.4f, want 0.05", b)
	}
	checkInvariant(t, s)
}

func inWindow(from, to time.Duration, ws []Window) bool {
	for _, w := range ws {
		if from < w.End && to >= w.Start {
			return true
		}
	}
	return false
}

func TestBlackouts(t *testing.T) {
	cfg := Config{
		Latency:       30 * ms,
		Jitter:        5 * ms,
		BlackoutEvery: time.Second,
		BlackoutFor:   200 * ms,
		BlackoutPhase: 300 * ms,
		Blackouts:     []Window{{5500 * ms, 5600 * ms}, {9 * time.Second, 20 * time.Second}},
	}
	windows := slices.Clone(cfg.Blackouts)
	for k := range 10 {
		s := cfg.BlackoutPhase + time.Duration(k)*cfg.BlackoutEvery
		windows = append(windows, Window{s, s + cfg.BlackoutFor})
	}
	// A reference link without blackouts, same seed: the blackout draws
	// nothing random, so both links give every packet the same delay.
	ref := newLink(t, Config{Latency: cfg.Latency, Jitter: cfg.Jitter}, 19)
	l := newLink(t, cfg, 19)
	const n = 10_000 // one per ms: 10 s
	got := transmit(t, l, n, ms)
	all := transmit(t, ref, n, ms)

	gotSet := make(map[uint64]time.Duration, len(got))
	for _, d := range got {
		gotSet[d.seq] = d.at
		if inWindow(d.at, d.at, windows) {
			t.Fatalf("packet %d delivered at %v, inside a blackout", d.seq, d.at)
		}
	}
	dropped := 0
	for _, d := range all {
		sent := time.Duration(d.seq) * ms
		at, ok := gotSet[d.seq]
		if want := !inWindow(sent, d.at, windows); ok != want {
			t.Fatalf("packet %d sent %v arriving %v: delivered %v, want %v", d.seq, sent, d.at, ok, want)
		}
		if ok && at != d.at {
			t.Fatalf("packet %d arrived %v, reference %v", d.seq, at, d.at)
		}
		if !ok {
			dropped++
		}
	}
	s := l.Stats()
	if s.LostBlackout != uint64(dropped) || dropped < 2000 {
		t.Errorf("LostBlackout %d, dropped %d", s.LostBlackout, dropped)
	}
	// Nothing sent in [9 s, 10 s) got through (explicit window to 20 s).
	for seq := range gotSet {
		if seq >= 9000 {
			t.Fatalf("packet %d sent in the long window was delivered", seq)
		}
	}
}

func TestSpikePresetOutage(t *testing.T) {
	l := newLink(t, Spike, 23)
	const n = 60_000 // 60 s, one per ms
	got := transmit(t, l, n, ms)
	// Longest gap between deliveries: a 2 s window plus the time for the
	// first packet after it to arrive.
	var maxGap time.Duration
	for i := 1; i < len(got); i++ {
		if g := got[i].at - got[i-1].at; g > maxGap {
			maxGap = g
		}
	}
	if maxGap < 2*time.Second || maxGap > 2*time.Second+40*ms {
		t.Errorf("longest silence %v, want 2 s + one-way delay", maxGap)
	}
	for _, d := range got {
		if ph := (d.at - 13*time.Second) % (15 * time.Second); d.at >= 13*time.Second && ph < 2*time.Second {
			t.Fatalf("delivery at %v inside a Spike blackout", d.at)
		}
	}
}

func TestDuplicates(t *testing.T) {
	const n = 50_000
	l := newLink(t, Config{Latency: 20 * ms, Duplicate: 0.05, DuplicateDelay: 3 * ms}, 29)
	out := transmit(t, l, n, 10*ms)
	first := map[uint64]time.Duration{}
	dups := 0
	for _, d := range out {
		at, seen := first[d.seq]
		if !seen {
			first[d.seq] = d.at
			if d.at != time.Duration(d.seq)*10*ms+20*ms {
				t.Fatalf("original %d at %v", d.seq, d.at)
			}
			continue
		}
		dups++
		if late := d.at - at; late <= 0 || late > 3*ms {
			t.Fatalf("copy of %d arrived %v after the original, want (0, 3ms]", d.seq, late)
		}
	}
	s := l.Stats()
	if len(first) != n || s.Duplicated != uint64(dups) || s.Delivered != uint64(n+dups) {
		t.Errorf("originals %d, dups %d, stats %+v", len(first), dups, s)
	}
	if frac := float64(dups) / n; math.Abs(frac-0.05) > 0.005 {
		t.Errorf("duplicate rate %.4f, want 0.05", frac)
	}
	if s.Reordered != 0 {
		t.Errorf("copies counted as reordered: %d", s.Reordered)
	}
	checkInvariant(t, s)
}

func TestBandwidth(t *testing.T) {
	// 10 kB/s, 100-byte packets: 10 ms each on the wire.
	l := newLink(t, Config{Latency: 5 * ms, Bandwidth: 10_000, MaxQueueDelay: 95 * ms}, 31)
	p := make([]byte, 100)
	for range 20 {
		if err := l.Send(0, p); err != nil {
			t.Fatal(err)
		}
	}
	var at []time.Duration
	for {
		next, ok := l.NextArrival()
		if !ok {
			break
		}
		l.Deliver(next, func([]byte) { at = append(at, next) })
	}
	// Packets 0..9 wait 0..90 ms, packet 10 would wait 100 ms: dropped.
	if len(at) != 10 {
		t.Fatalf("delivered %d, want 10: %v", len(at), at)
	}
	for i, a := range at {
		if want := time.Duration(i+1)*10*ms + 5*ms; a != want {
			t.Errorf("packet %d at %v, want %v", i, a, want)
		}
	}
	if s := l.Stats(); s.LostQueue != 10 {
		t.Errorf("LostQueue %d, want 10", s.LostQueue)
	}
	// After the queue drained, a packet goes straight through.
	l.Send(time.Second, p)
	if next, _ := l.NextArrival(); next != time.Second+15*ms {
		t.Errorf("idle link: arrival %v", next)
	}
}

func TestMaxInFlightAndSize(t *testing.T) {
	l := newLink(t, Config{Latency: time.Second, MaxInFlight: 10, MaxPacketSize: 100}, 37)
	for i := range 15 {
		if err := l.Send(time.Duration(i), []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	s := l.Stats()
	if s.InFlight != 10 || s.LostQueue != 5 {
		t.Errorf("stats %+v", s)
	}
	err := l.Send(0, make([]byte, 101))
	var se *SizeError
	if !errors.Is(err, ErrPacketTooLarge) || !errors.As(err, &se) || se.Size != 101 || se.Max != 100 {
		t.Errorf("oversized send: %v", err)
	}
	if l.Send(0, make([]byte, 100)) != nil {
		t.Error("packet of exactly MaxPacketSize rejected")
	}
	l.Clear()
	s = l.Stats()
	if s.InFlight != 0 || s.Discarded != 10 {
		t.Errorf("after Clear: %+v", s)
	}
	checkInvariant(t, s)
}

func TestDeterminism(t *testing.T) {
	trace := func(seed uint64) []delivery {
		l := newLink(t, Mobile, seed)
		return run(t, l, 5000, 16*ms, ms)
	}
	a, b := trace(42), trace(42)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different traces")
	}
	if slices.Equal(a, trace(43)) {
		t.Fatal("different seeds, same trace")
	}
	// Pairs: each direction deterministic and independent of the other.
	p1, _ := NewPair(Mobile, 9)
	p2, _ := NewPair(Mobile, 9)
	a1 := transmit(t, p1.AB, 1000, 16*ms)
	transmit(t, p2.BA, 1000, 16*ms) // traffic the other way changes nothing
	if !slices.Equal(a1, transmit(t, p2.AB, 1000, 16*ms)) {
		t.Fatal("pair direction depends on the other direction")
	}
	if slices.Equal(transmit(t, p1.BA, 1000, 16*ms), transmit(t, newLink(t, Mobile, 9), 1000, 16*ms)) {
		t.Error("pair direction uses the raw seed")
	}
}

func TestSendFromDeliver(t *testing.T) {
	// An echo: every delivered packet is sent again until it has made 5
	// hops, from inside the callback.
	l := newLink(t, Config{Latency: 10 * ms}, 41)
	l.Send(0, []byte{0})
	var hops []time.Duration
	for {
		next, ok := l.NextArrival()
		if !ok {
			break
		}
		l.Deliver(next, func(p []byte) {
			hops = append(hops, next)
			if p[0] < 4 {
				l.Send(next, []byte{p[0] + 1})
			}
		})
	}
	if len(hops) != 5 || hops[4] != 50*ms {
		t.Errorf("hops %v", hops)
	}
	// Zero latency: the echo is delivered by the same Deliver call.
	l = newLink(t, Config{}, 41)
	l.Send(0, []byte{0})
	n := l.Deliver(0, func(p []byte) {
		if p[0] < 4 {
			l.Send(0, []byte{p[0] + 1})
		}
	})
	if n != 5 {
		t.Errorf("zero-latency echo delivered %d in one call, want 5", n)
	}
}

func TestPairRoundTripMatchesPreset(t *testing.T) {
	// A request A→B answered at once B→A takes RTT ± jitter: Mobile's
	// 150 ± 30 ms, triangular, mean 150 ms.
	cfg := Mobile
	cfg.Loss, cfg.Duplicate, cfg.Reorder = 0, 0, 0
	p, err := NewPair(cfg, 47)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	var sum float64
	lo, hi := time.Hour, time.Duration(0)
	sent := map[uint64]time.Duration{}
	var buf [8]byte
	for i := 0; ; {
		next, ok := p.NextArrival()
		if i < n && (!ok || next > time.Duration(i)*ms) {
			binary.BigEndian.PutUint64(buf[:], uint64(i))
			p.AB.Send(time.Duration(i)*ms, buf[:])
			i++
			continue
		}
		if !ok {
			break
		}
		p.AB.Deliver(next, func(b []byte) {
			// B answers, echoing the sequence number; remember the send time.
			seq := binary.BigEndian.Uint64(b)
			sent[seq] = time.Duration(seq) * ms
			binary.BigEndian.PutUint64(buf[:], seq)
			p.BA.Send(next, buf[:])
		})
		p.BA.Deliver(next, func(b []byte) {
			rtt := next - sent[binary.BigEndian.Uint64(b)]
			lo, hi = min(lo, rtt), max(hi, rtt)
			sum += rtt.Seconds()
		})
	}
	mean := time.Duration(sum / n * 1e9)
	if mean < 149*ms || mean > 151*ms || lo < 120*ms || hi > 180*ms {
		t.Errorf("round trip mean %v range [%v, %v], want 150 ± 30 ms", mean, lo, hi)
	}
}

func TestConfigValidation(t *testing.T) {
	bad := []Config{
		{Latency: -1},
		{Jitter: 2 * time.Hour},
		{Loss: 1.5},
		{Loss: math.NaN()},
		{Duplicate: -0.1},
		{BurstLoss: 0.5, BurstLen: 0.5},
		{BurstLoss: 0.9, BurstLen: 1}, // p = 9 > 1
		{BurstLoss: 1},
		{BlackoutEvery: time.Second, BlackoutFor: 2 * time.Second},
		{Blackouts: []Window{{2, 1}}},
		{Bandwidth: -1},
		{MaxInFlight: -1},
		{MaxPacketSize: -5},
	}
	for _, c := range bad {
		err := c.Validate()
		var ce *ConfigError
		if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) {
			t.Errorf("%+v: Validate() = %v", c, err)
			continue
		}
		if _, err := NewLink(c, 1); err == nil {
			t.Errorf("NewLink accepted %+v", c)
		}
		if _, err := NewPair(c, 1); err == nil {
			t.Errorf("NewPair accepted %+v", c)
		}
	}
	for _, name := range PresetNames() {
		c, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
		t.Logf("%-9s %v", name, c)
	}
}

func TestPresets(t *testing.T) {
	c, err := Preset(" Mobile ")
	if err != nil || c.Latency != 75*ms || c.Jitter != 15*ms || c.Loss != 0.05 || c.Duplicate != 0.01 || c.Reorder == 0 {
		t.Errorf("Mobile = %+v, %v", c, err)
	}
	if c, _ := Preset("lan"); c.Latency != 5*ms || c.Jitter != ms/2 {
		t.Errorf("LAN = %+v", c)
	}
	if c, _ := Preset("awful"); c.Latency != 150*ms || c.Jitter != 40*ms || c.Loss != 0.15 {
		t.Errorf("Awful = %+v", c)
	}
	if c, _ := Preset("spike"); c.Latency != Broadband.Latency || c.BlackoutFor != 2*time.Second || c.BlackoutEvery != 15*time.Second {
		t.Errorf("Spike = %+v", c)
	}
	if _, err := Preset("dialup"); !errors.Is(err, ErrUnknownPreset) {
		t.Errorf("unknown preset: %v", err)
	}
}

func TestAllocs(t *testing.T) {
	l := newLink(t, Mobile, 1)
	p := make([]byte, 200)
	now := time.Duration(0)
	sink := 0
	fn := func(b []byte) { sink += len(b) }
	step := func() {
		l.Send(now, p)
		l.Deliver(now, fn)
		now += 16 * ms
	}
	for range 1000 { // warm the pool up
		step()
	}
	if a := testing.AllocsPerRun(1000, step); a != 0 {
		t.Errorf("Send+Deliver: %v allocs per run, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { l.NextArrival(); l.Stats() }); a != 0 {
		t.Errorf("NextArrival+Stats: %v allocs", a)
	}
}

func BenchmarkSendDeliver(b *testing.B) {
	for _, name := range []string{"perfect", "mobile", "awful"} {
		b.Run(name, func(b *testing.B) {
			cfg, _ := Preset(name)
			l, _ := NewLink(cfg, 1)
			p := make([]byte, 200)
			now := time.Duration(0)
			fn := func([]byte) {}
			b.ReportAllocs()
			b.SetBytes(int64(len(p)))
			for b.Loop() {
				l.Send(now, p)
				l.Deliver(now, fn)
				now += ms
			}
			s := l.Stats()
			b.ReportMetric(float64(s.InFlight), "inflight")
		})
	}
}
