package ownership

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/physics"
)

// irregularLink is how an honest attacker's states reach the victim in
// TestHonestAttackerIrregularLink.
type irregularLink struct {
	bursty   bool               // frames of 12-52 ms, one in ten up to 200 ms longer; ticks caught up per frame
	freeze   time.Duration      // one frame this long, freezeAt in
	freezeAt time.Duration      // zero: 10 s
	offset   clocksync.GameTime // the attacker's clock error (its stamps less the true game time)
	coarse   bool               // stamps rounded to 1 ms: ticks of a frame share a stamp (duplicates dropped)
	lossy    bool               // about 13 % lost, in runs
	spammer  bool               // the attacker presses punch and kick as fast as the move table allows (else physics.Bot)
	seconds  int
	minBurst int // the largest number of ticks one frame must have run (the pattern happened)
}

type flight struct {
	at  clocksync.GameTime // arrival, true game time
	pkt []byte
}

// An honest attacker attacking as fast as its fighter allows (the demo's
// autoplay bot, and a player pressing punch and kick every other tick),
// whose game runs its ticks in bursts the way the demo's Update catches up
// (several 60 Hz ticks per frame after a slow frame, up to 60, a backlog
// of more than 3 s dropped), with its clock ahead or behind, stamps coarse
// enough that a frame's ticks share one (the filter drops the duplicates:
// several ticks between the states that arrive), runs of lost packets
// (about 13 %) and jitter that reorders within MaxDelay: the victim never
// refuses any of its states or hit reports. (The attack-rate rule judged in
// game time refused 1 to 29 states per seed in every bursty case: an
// attack's phases spanned microseconds or hundreds of ms of game time.)
func TestHonestAttackerIrregularLink(t *testing.T) {
	for _, c := range []struct {
		name string
		link irregularLink
	}{
		{"steady ticks, lossy jittery link", irregularLink{lossy: true, seconds: 24, minBurst: 1}},
		{"bursty ticks", irregularLink{bursty: true, seconds: 24, minBurst: 5}},
		{"bursty ticks, lossy jittery link", irregularLink{bursty: true, lossy: true, seconds: 24, minBurst: 5}},
		{"bursty ticks, coarse stamps, lossy", irregularLink{bursty: true, coarse: true, lossy: true, seconds: 24, minBurst: 5}},
		{"bursty ticks, clock 60 ms ahead", irregularLink{bursty: true, lossy: true, offset: 60_000, seconds: 24, minBurst: 5}},
		{"bursty ticks, clock 60 ms behind", irregularLink{bursty: true, lossy: true, offset: -60_000, seconds: 24, minBurst: 5}},
		{"a 2.5 s freeze, then catching up", irregularLink{bursty: true, lossy: true, freeze: 2500 * time.Millisecond, seconds: 25, minBurst: 60}},
		{"spammer, steady ticks, lossy", irregularLink{spammer: true, lossy: true, seconds: 20, minBurst: 1}},
		{"spammer, bursty ticks, coarse stamps, lossy", irregularLink{spammer: true, bursty: true, coarse: true, lossy: true, seconds: 24, minBurst: 5}},
		{"spammer, a 2.9 s freeze", irregularLink{spammer: true, bursty: true, freeze: 2900 * time.Millisecond, seconds: 25, minBurst: 60}},
	} {
		t.Run(c.name, func(t *testing.T) {
			seeds := uint64(2)
			if testing.Short() {
				seeds = 1
				// One seed, half as long; a freeze 4 s in.
				c.link.seconds = max(c.link.seconds/2, 12)
				c.link.freezeAt = 4 * time.Second
			}
			for seed := uint64(1); seed <= seeds; seed++ {
				st, attacks, burst := playIrregular(t, c.link, seed)
				if st.Refused.Total() != 0 {
					t.Errorf("seed %d: refused %v (%d attacks, stats %+v)", seed, st.Refused, attacks, st.Hits)
				}
				if burst < c.link.minBurst {
					t.Errorf("seed %d: at most %d ticks in a frame, want %d", seed, burst, c.link.minBurst)
				}
				if attacks < c.link.seconds/2 {
					t.Errorf("seed %d: %d attacks in %d s: the attacker hardly attacked", seed, attacks, c.link.seconds)
				}
				if st.Applied < uint64(c.link.seconds)*15 {
					t.Errorf("seed %d: %d states applied in %d s", seed, st.Applied, c.link.seconds)
				}
			}
		})
	}
}

// playIrregular plays A (the victim, 60 Hz) against B (the attacker)
// over link for its seconds, and returns A's stats, how many attacks B
// started and the most ticks one of B's frames ran.
func playIrregular(t *testing.T, link irregularLink, seed uint64) (Stats, int, int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	a := newPeer(t, peerA, peerB, nil)
	b := newPeer(t, peerB, peerA, nil)
	bot := physics.NewBot(seed)
	fb := b.w.Fighter(fighterB)
	var toA, toB []flight
	var wall clocksync.GameTime // B's next frame, true game time
	var done int64              // B's ticks run
	attacks, burst, lastSeq := 0, 0, fb.State().AttackSeq
	lossy, froze := false, false
	byArrival := func(x, y flight) int { return int(x.at - y.at) }
	deliver := func(q *[]flight, upTo clocksync.GameTime, fn func([]byte)) {
		slices.SortStableFunc(*q, byArrival)
		for len(*q) > 0 && (*q)[0].at <= upTo {
			fn((*q)[0].pkt)
			*q = (*q)[1:]
		}
	}
	for i := range int64(link.seconds) * physics.TickRate {
		now := clocksync.GameTime(i) * tickUS
		for wall <= now { // B's frames due by now, as the demo's Update runs them
			due := int64(wall/tickUS) + 1
			n := int64(1)
			switch behind := due - done; {
			case behind > 180:
				done = due - 1
			case behind > 2:
				n = min(behind, 60)
			case behind < -2:
				n = 0
			}
			burst = max(burst, int(n))
			for k := range n {
				stamp := wall + link.offset + clocksync.GameTime(k*40) // a tick takes 40 µs
				if link.coarse {
					stamp -= stamp % 1000
				}
				deliver(&toB, wall, func(p []byte) { _ = b.r.HandlePacket(p, stamp) })
				in := bot.Input(b.w, fighterB, fighterA)
				if link.spammer {
					in = 0
					switch done % 4 { // a new press every other tick, punch and kick in turn
					case 0:
						in = physics.InputPunch
					case 2:
						in = physics.InputKick
					}
				}
				fb.SetInput(in)
				b.r.BeforeStep(stamp)
				b.w.Step()
				b.r.AfterStep()
				if s := fb.State(); s.AttackSeq != lastSeq {
					attacks++
					lastSeq = s.AttackSeq
				}
				out, err := b.r.AppendPacket(b.buf[:0], stamp)
				if err != nil {
					t.Fatal(err)
				}
				b.buf = out
				if link.lossy && rng.Float64() < 0.04 {
					lossy = !lossy // runs of about 25 packets, lost at 50 %
				}
				if !lossy || rng.Float64() < 0.5 {
					toA = append(toA, flight{at: wall + 40_000 + clocksync.GameTime(rng.Int64N(100_000)), pkt: append([]byte(nil), out...)})
				}
				done++
			}
			frame := tickUS
			if link.bursty {
				frame = 12_000 + clocksync.GameTime(rng.Int64N(40_000))
				if rng.Float64() < 0.1 {
					frame += clocksync.GameTime(rng.Int64N(200_000))
				}
			}
			if link.freeze > 0 && !froze && wall > us(cmp.Or(link.freezeAt, 10*time.Second)) {
				frame, froze = us(link.freeze), true
			}
			wall += frame
		}
		deliver(&toA, now, func(p []byte) { _ = a.r.HandlePacket(p, now) })
		a.r.BeforeStep(now)
		a.w.Step()
		a.r.AfterStep()
		out, err := a.r.AppendPacket(a.buf[:0], now)
		if err != nil {
			t.Fatal(err)
		}
		a.buf = out
		toB = append(toB, flight{at: now + 40_000 + clocksync.GameTime(rng.Int64N(20_000)), pkt: append([]byte(nil), out...)})
	}
	return a.r.Stats(), attacks, burst
}

// The rival's tick count follows its packets' sequence numbers through
// bursts, lost packets and silences, but runs ahead of their game times by
// at most tickLead: a peer numbering its packets 30 ticks apart every tick
// gains tickLead of ticks once, then one per tick of game time.
func TestRivalClock(t *testing.T) {
	lead := int64(tickLead / physics.TickDuration)
	t.Run("honest bursts", func(t *testing.T) {
		var c rivalClock
		seq := uint32(1 << 31) // counted from the first packet, wrapping
		at := clocksync.GameTime(0)
		c.advance(seq, at)
		first := seq
		for frame := range 200 {
			n := uint32(1 + frame%5) // 1-5 ticks per frame, the last one's state arrives
			if frame%50 == 49 {
				n = 60 // a catch-up after a freeze
			}
			seq += n
			at += clocksync.GameTime(n) * tickUS
			if frame%50 == 48 {
				at += 60 * tickUS // the freeze: game time ran, ticks did not
			}
			if got := c.advance(seq, at+clocksync.GameTime(frame%3)*tickUS); got != int64(seq-first) {
				t.Fatalf("frame %d: tick %d, want %d", frame, got, seq-first)
			}
		}
	})
	t.Run("forged numbering", func(t *testing.T) {
		var c rivalClock
		c.advance(0, 0)
		var last int64
		for i := 1; i <= 600; i++ {
			last = c.advance(uint32(30*i), clocksync.GameTime(i)*tickUS)
		}
		if want := lead + 600; last > want {
			t.Errorf("600 ticks numbered 30 apart counted as %d ticks, want at most %d", last, want)
		}
		// Numbers that go back gain nothing either.
		before := c.advance(100, 601*tickUS)
		if after := c.advance(30*600+1, 602*tickUS); after-before > 2 {
			t.Errorf("a sequence number going back and forth gained %d ticks in 2", after-before)
		}
	})
	t.Run("hit times", func(t *testing.T) {
		var c rivalClock
		c.advance(10, 1000)
		c.advance(14, 1000+4*tickUS)
		c.advance(15, 1000+4*tickUS+40) // a burst: stamps 40 µs apart
		if lo, hi := c.at(1000+2*tickUS, 1000+4*tickUS+40, 5); lo != 0 || hi != 4 {
			t.Errorf("a hit between two packets: ticks [%d, %d], want [0, 4]", lo, hi)
		}
		if !c.only(1000+4*tickUS+40) || c.only(1000+4*tickUS) {
			t.Error("only: the last packet's own tick not told apart")
		}
		c.advance(17, 1000+4*tickUS+80) // its predecessor lost: another tick may share the stamp
		if c.only(1000 + 4*tickUS + 80) {
			t.Error("only: true after a lost packet")
		}
	})
}
