package game

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
)

const tick = clocksync.GameTime(16_667)

// inFlight is a round message on its way.
type inFlight struct {
	at clocksync.GameTime
	p  []byte
	to int
}

// pair runs the round protocol between two peers over a lossy, reordering,
// duplicating link, with each peer's fighter HP scripted by hp.
type pair struct {
	t       *testing.T
	rules   [2]*Rules
	now     clocksync.GameTime
	skew    [2]clocksync.GameTime // each peer's game clock error
	hp      [2]int
	rng     *rand.Rand
	loss    float64
	dup     float64
	delay   clocksync.GameTime // one way, plus up to the same again of jitter
	flight  []inFlight
	events  [2][]Events
	buf     []byte
	sent    int
	decided [2]int
}

func newPair(t *testing.T, cfg RulesConfig, seed uint64) *pair {
	t.Helper()
	p := &pair{t: t, rng: rand.New(rand.NewPCG(seed, 1)), now: 1_000_000_000, delay: 20_000}
	for i := range 2 {
		c := cfg
		c.Me, c.Rival = 1, 2
		if i == 1 {
			c.Me, c.Rival = 2, 1
		}
		r, err := NewRules(c)
		if err != nil {
			t.Fatal(err)
		}
		p.rules[i] = r
		p.hp[i] = r.cfg.MaxHP
	}
	return p
}

// step runs one tick of both peers.
func (p *pair) step() {
	p.now += tick
	// Deliver what has arrived.
	keep := p.flight[:0]
	var due []inFlight
	for _, f := range p.flight {
		if f.at <= p.now {
			due = append(due, f)
		} else {
			keep = append(keep, f)
		}
	}
	p.flight = keep
	for _, f := range due {
		p.rules[f.to].Handle(f.p, p.now+p.skew[f.to])
	}
	for i, r := range p.rules {
		now := p.now + p.skew[i]
		ev := r.Tick(now, p.hp[i])
		if ev.NewRound {
			p.hp[i] = r.cfg.MaxHP
		}
		if ev.Decided {
			p.decided[i]++
		}
		p.events[i] = append(p.events[i], ev)
		msg, ok := r.AppendMessage(p.buf[:0], now)
		if !ok {
			continue
		}
		p.sent++
		for copies := 1 + boolInt(p.rng.Float64() < p.dup); copies > 0; copies-- {
			if p.rng.Float64() < p.loss {
				continue
			}
			at := p.now + p.delay + clocksync.GameTime(p.rng.Int64N(int64(p.delay)+1))
			p.flight = append(p.flight, inFlight{at: at, p: bytes.Clone(msg), to: 1 - i})
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (p *pair) run(d time.Duration) {
	for end := p.now.Add(d); p.now < end; {
		p.step()
	}
}

func (p *pair) untilPhase(i int, ph Phase, limit time.Duration) {
	p.t.Helper()
	for end := p.now.Add(limit); p.now < end; p.step() {
		if p.rules[i].Phase(p.now+p.skew[i]) == ph {
			return
		}
	}
	p.t.Fatalf("peer %d did not reach phase %v within %v (at %v)", i+1, ph, limit, p.rules[i].Phase(p.now))
}

func (p *pair) results() (Result, Result) {
	p.t.Helper()
	a, oka := p.rules[0].Result()
	b, okb := p.rules[1].Result()
	if !oka || !okb {
		p.t.Fatalf("result known: peer 1 %v, peer 2 %v", oka, okb)
	}
	return a, b
}

func TestRoundTimerFromGameClock(t *testing.T) {
	p := newPair(t, RulesConfig{RoundLength: 30 * time.Second, Countdown: 3 * time.Second}, 1)
	if ph := p.rules[1].Phase(p.now); ph != PhaseWaiting {
		t.Fatalf("peer 2 before any message: %v", ph)
	}
	p.step()
	n, start, length := p.rules[0].Round()
	if n != 1 || length != 30*time.Second || start != p.now.Add(3*time.Second) {
		t.Fatalf("leader's round 1: %d start %v length %v (now %v)", n, start, length, p.now)
	}
	p.untilPhase(1, PhaseCountdown, time.Second)
	if n2, start2, length2 := p.rules[1].Round(); n2 != 1 || start2 != start || length2 != length {
		t.Fatalf("peer 2 adopted round %d start %v length %v", n2, start2, length2)
	}
	// During the countdown the timer shows the whole round.
	for i, r := range p.rules {
		if got := r.Remaining(p.now); got != 30*time.Second {
			t.Errorf("peer %d remaining in countdown: %v", i+1, got)
		}
		if left := r.CountdownLeft(p.now); left <= 0 || left > 3*time.Second || r.CanFight(p.now) {
			t.Errorf("peer %d countdown left %v, can fight %v", i+1, left, r.CanFight(p.now))
		}
	}
	p.untilPhase(0, PhaseFight, 4*time.Second)
	p.run(10 * time.Second)
	// Both derive the same time from the same game time.
	for i, r := range p.rules {
		want := 30*time.Second - p.now.Sub(start)
		if got := r.Remaining(p.now); got != want || !r.CanFight(p.now) {
			t.Errorf("peer %d: remaining %v, want %v (can fight %v)", i+1, got, want, r.CanFight(p.now))
		}
	}
	// Time runs out: equal HP, a draw, and the timer stops at zero.
	p.run(21 * time.Second)
	a, b := p.results()
	if a != b || a.Winner != 0 || a.By != EndTime || a.End != 30_000 {
		t.Errorf("results %v / %v", a, b)
	}
	for i, r := range p.rules {
		if got := r.Remaining(p.now); got != 0 || r.Phase(p.now) != PhaseOver || r.CanFight(p.now) {
			t.Errorf("peer %d after time: remaining %v phase %v", i+1, got, r.Phase(p.now))
		}
	}
}

func TestKOEndsRound(t *testing.T) {
	p := newPair(t, RulesConfig{}, 2)
	p.untilPhase(1, PhaseFight, 5*time.Second)
	p.run(2 * time.Second)
	p.hp[1] = 70
	p.run(time.Second)
	p.hp[0] = 40
	p.run(time.Second)
	p.hp[1] = 0 // peer 2's fighter is knocked out
	p.run(500 * time.Millisecond)
	a, b := p.results()
	if a != b || a.Winner != 1 || a.By != EndKO || a.HP != [2]int{40, 0} {
		t.Errorf("results %v / %v", a, b)
	}
	if p.decided != [2]int{1, 1} {
		t.Errorf("Decided events %v", p.decided)
	}
	// Hits after the round ended change nothing.
	p.hp[0] = 0
	p.run(time.Second)
	if a2, _ := p.results(); a2 != a {
		t.Errorf("result changed after the end: %v", a2)
	}
}

func TestTimeWinnerByHP(t *testing.T) {
	p := newPair(t, RulesConfig{RoundLength: 5 * time.Second}, 3)
	p.untilPhase(0, PhaseFight, 5*time.Second)
	p.run(time.Second)
	p.hp[0] = 55
	p.hp[1] = 80
	p.run(6 * time.Second)
	a, b := p.results()
	if a != b || a.Winner != 2 || a.By != EndTime || a.HP != [2]int{55, 80} {
		t.Errorf("results %v / %v", a, b)
	}
}

// The race the protocol exists for: peer 2's fighter is knocked out a few
// ms before the time runs out while peer 1's clock says the time is up
// already, over a lossy link. Both must agree, whatever the timing.
func TestResultAgreementUnderRaces(t *testing.T) {
	outcomes := map[EndReason]int{}
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := newPair(t, RulesConfig{RoundLength: 4 * time.Second}, seed)
		p.loss, p.dup = 0.3, 0.1
		p.delay = clocksync.GameTime(5_000 + rng.Int64N(80_000))
		p.skew[1] = clocksync.GameTime(rng.Int64N(4_000) - 2_000)
		p.untilPhase(0, PhaseFight, 10*time.Second)
		p.untilPhase(1, PhaseFight, 10*time.Second)
		_, start, _ := p.rules[0].Round()
		end := start.Add(4 * time.Second)
		// Damage near the end, KOs around the end.
		for p.now < end.Add(-300*time.Millisecond) {
			p.step()
		}
		p.hp[0], p.hp[1] = 60+rng.IntN(3), 60+rng.IntN(3)
		koAt := end.Add(time.Duration(rng.Int64N(80_000)-40_000) * time.Microsecond)
		who := rng.IntN(3) // 0: peer 1 KO, 1: peer 2 KO, 2: both
		for p.now < end.Add(200*time.Millisecond) {
			if p.now >= koAt {
				if who != 1 {
					p.hp[0] = 0
				}
				if who != 0 {
					p.hp[1] = 0
				}
			}
			p.step()
		}
		p.run(5 * time.Second)
		a, b := p.results()
		if a != b {
			t.Fatalf("seed %d: peers disagree: %v / %v", seed, a, b)
		}
		outcomes[a.By]++
		// Silence once everything is acknowledged.
		before := p.sent
		p.run(2 * time.Second)
		if p.sent != before {
			t.Errorf("seed %d: %d messages after everything was acknowledged", seed, p.sent-before)
		}
	}
	// The KO times straddle the end: both kinds of ending must occur.
	if outcomes[EndKO] < 10 || outcomes[EndTime] < 10 {
		t.Errorf("outcomes %v: the races were not exercised", outcomes)
	}
}

func TestRematchAgreement(t *testing.T) {
	p := newPair(t, RulesConfig{RoundLength: 2 * time.Second}, 4)
	p.loss = 0.4
	p.untilPhase(0, PhaseFight, 10*time.Second)
	p.hp[0] = 0
	p.run(3 * time.Second)
	if _, b := p.results(); b.Winner != 2 || b.By != EndKO {
		t.Fatalf("result %v", b)
	}
	if err := p.rules[1].Rematch(); err != nil {
		t.Fatal(err)
	}
	p.run(3 * time.Second)
	if n, _, _ := p.rules[0].Round(); n != 1 || !p.rules[0].RivalWantsRematch() {
		t.Fatalf("one player asked: round %d, rival wants rematch %v", n, p.rules[0].RivalWantsRematch())
	}
	if p.rules[1].RivalWantsRematch() {
		t.Fatal("peer 2 thinks peer 1 wants a rematch")
	}
	if err := p.rules[0].Rematch(); err != nil {
		t.Fatal(err)
	}
	p.untilPhase(1, PhaseCountdown, 5*time.Second)
	n1, s1, _ := p.rules[0].Round()
	n2, s2, _ := p.rules[1].Round()
	if n1 != 2 || n2 != 2 || s1 != s2 {
		t.Fatalf("rounds %d@%v / %d@%v", n1, s1, n2, s2)
	}
	if p.hp[0] != 100 || p.hp[1] != 100 {
		t.Errorf("fighters not reset on the new round: %v", p.hp)
	}
	for i, r := range p.rules {
		if _, ok := r.Result(); ok || r.WantsRematch() || r.RivalWantsRematch() {
			t.Errorf("peer %d carries round 1's state into round 2", i+1)
		}
	}
	p.run(6 * time.Second)
	a, b := p.results()
	if a != b || a.Round != 2 || a.Winner != 0 {
		t.Errorf("round 2: %v / %v", a, b)
	}
}

func TestRematchNeedsResult(t *testing.T) {
	r, err := NewRules(RulesConfig{Me: 1, Rival: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Rematch(); !errors.Is(err, ErrNoResult) {
		t.Errorf("rematch before a result: %v", err)
	}
}

func TestRulesRejectBadMessages(t *testing.T) {
	p := newPair(t, RulesConfig{}, 5)
	p.untilPhase(1, PhaseCountdown, time.Second)
	n, start, length := p.rules[1].Round()
	leader, follower := p.rules[0], p.rules[1]
	bad := map[string][]byte{
		"empty":        {},
		"garbage":      []byte("hello"),
		"version":      {MsgKind, 9, 1, 0, 0, 0},
		"unknown flag": AppendMessage(nil, &Message{Round: 1, Start: start, Length: length})[:0],
	}
	m := AppendMessage(nil, &Message{Round: 1, Start: start, Length: length})
	m[len(m)-1] = 0x80
	bad["unknown flag"] = m
	bad["trailing"] = append(AppendMessage(nil, &Message{Round: 1, Start: start, Length: length}), 0)
	bad["truncated"] = AppendMessage(nil, &Message{Round: 1, Start: start, Length: length, Report: &Report{Cut: 5, HP0: 100}})[:12]
	bad["ko with hp"] = AppendMessage(nil, &Message{Round: 1, Start: start, Length: length, Report: &Report{KO: true, Cut: 5, HP0: 100}})
	bad["hp too large"] = AppendMessage(nil, &Message{Round: 1, Start: start, Length: length, Report: &Report{Cut: 5, HP0: 5000}})
	bad["change after cut"] = AppendMessage(nil, &Message{Round: 1, Start: start, Length: length,
		Report: &Report{Cut: 5, HP0: 100, Changes: []HPChange{{At: 9, HP: 50}}}})
	for name, msg := range bad {
		before := follower.Stats().Rejected
		if err := follower.Handle(msg, p.now); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: %v", name, err)
		}
		if follower.Stats().Rejected != before+1 {
			t.Errorf("%s: not counted", name)
		}
	}
	// The follower cannot move the round, nor change its start.
	if err := leader.Handle(AppendMessage(nil, &Message{Round: 7, Start: start, Length: length}), p.now); !errors.Is(err, ErrBadMessage) {
		t.Errorf("peer 2 announcing a round: %v", err)
	}
	if err := follower.Handle(AppendMessage(nil, &Message{Round: 1, Start: start + 5, Length: length}), p.now); !errors.Is(err, ErrBadMessage) {
		t.Errorf("moved start: %v", err)
	}
	if n2, s2, l2 := follower.Round(); n2 != n || s2 != start || l2 != length {
		t.Errorf("bad messages changed the round: %d %v %v", n2, s2, l2)
	}
	if n1, _, _ := leader.Round(); n1 != 1 {
		t.Errorf("leader's round %d", n1)
	}
}

func TestMessageRoundTrip(t *testing.T) {
	for _, m := range []Message{
		{},
		{Round: 1, Start: -5, Length: time.Minute, AckRound: true},
		{Round: 1<<32 - 1, Start: 1 << 50, Length: MaxRoundLength, Rematch: true, AckReport: true, AckRematch: true,
			Report: &Report{KO: true, Cut: 61_000, HP0: 100, Changes: []HPChange{{-20, 99}, {0, 90}, {5000, 50}, {61_000, 0}}}},
		{Round: 3, Report: &Report{Cut: 100, HP0: 1000}},
	} {
		p := AppendMessage(nil, &m)
		var got Message
		if err := DecodeMessage(p, &got); err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		if again := AppendMessage(nil, &got); !bytes.Equal(again, p) {
			t.Errorf("%+v: re-encoded differently", m)
		}
		if got.Round != m.Round || got.Start != m.Start || got.Length != m.Length || (got.Report == nil) != (m.Report == nil) {
			t.Errorf("got %+v, want %+v", got, m)
		}
	}
}

func TestMessageAllocations(t *testing.T) {
	m := Message{Round: 2, Start: 123456789, Length: time.Minute,
		Report: &Report{Cut: 100, HP0: 100, Changes: []HPChange{{1, 90}, {50, 80}}}}
	buf := make([]byte, 0, 256)
	var out Message
	out.Report = &Report{Changes: make([]HPChange, 0, 8)}
	p := AppendMessage(nil, &m)
	allocs := testing.AllocsPerRun(100, func() {
		buf = AppendMessage(buf[:0], &m)
		if err := DecodeMessage(p, &out); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("encode+decode allocates %v times", allocs)
	}
	if len(p) > 40 {
		t.Errorf("a message with a 2-change report takes %d bytes", len(p))
	}
}

func FuzzDecodeMessage(f *testing.F) {
	f.Add(AppendMessage(nil, &Message{Round: 1, Start: 99, Length: time.Minute, AckRound: true}))
	f.Add(AppendMessage(nil, &Message{Round: 2, Report: &Report{KO: true, Cut: 9, HP0: 10, Changes: []HPChange{{3, 5}, {9, 0}}}}))
	f.Add([]byte{MsgKind, MsgVersion})
	f.Fuzz(func(t *testing.T, p []byte) {
		var m Message
		if err := DecodeMessage(p, &m); err != nil {
			if !errors.Is(err, ErrBadMessage) {
				t.Fatalf("error not wrapping ErrBadMessage: %v", err)
			}
			return
		}
		if m.Report != nil {
			if err := m.Report.Validate(); err != nil {
				t.Fatalf("decoded an invalid report: %v", err)
			}
		}
		// Canonical encodings round-trip exactly; others decode to a
		// message that does.
		q := AppendMessage(nil, &m)
		var m2 Message
		if err := DecodeMessage(q, &m2); err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if r := AppendMessage(nil, &m2); !bytes.Equal(q, r) {
			t.Fatalf("not stable: %x / %x", q, r)
		}
	})
}

func TestDecideTable(t *testing.T) {
	full := func() *Report { return &Report{Cut: 60_000, HP0: 100} }
	ko := func(at int64, hpBefore int) *Report {
		return &Report{KO: true, Cut: at, HP0: 100, Changes: []HPChange{{at / 2, hpBefore}, {at, 0}}}
	}
	for _, c := range []struct {
		name   string
		r1, r2 *Report
		want   Result
	}{
		{"draw on time", full(), full(), Result{Round: 1, By: EndTime, End: 60_000, HP: [2]int{100, 100}}},
		{"1 KO", ko(10_000, 30), full(), Result{Round: 1, Winner: 2, By: EndKO, End: 10_000, HP: [2]int{0, 100}}},
		{"first KO wins the race", ko(10_000, 30), ko(9_999, 20), Result{Round: 1, Winner: 1, By: EndKO, End: 9_999, HP: [2]int{30, 0}}},
		{"double KO", ko(10_000, 30), ko(10_000, 20), Result{Round: 1, By: EndKO, End: 10_000, HP: [2]int{0, 0}}},
		{"KO after time does not count", ko(60_016, 30), &Report{Cut: 60_020, HP0: 100, Changes: []HPChange{{100, 31}}},
			Result{Round: 1, Winner: 1, By: EndTime, End: 60_000, HP: [2]int{30, 31}}},
	} {
		if c.name == "KO after time does not count" {
			c.want.Winner = 2
		}
		if got := Decide(1, time.Minute, c.r1, c.r2); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The follower adopts the leader's rounds, but not one whose start is
// absurd for its own game clock (further ahead than any countdown, or so
// long ago that the round ended minutes before): such a message is
// refused and the round stays as it was.
func TestFollowerRefusesAbsurdRoundStart(t *testing.T) {
	const now = clocksync.GameTime(1_000_000_000)
	for name, start := range map[string]clocksync.GameTime{
		"an hour ahead":  now.Add(time.Hour),
		"far future":     math.MaxInt64,
		"hours ago":      now.Add(-3 * time.Hour),
		"far past":       math.MinInt64,
		"before the end": now.Add(-DefaultRoundLength - 2*time.Minute),
	} {
		f, err := NewRules(RulesConfig{Me: 2, Rival: 1})
		if err != nil {
			t.Fatal(err)
		}
		msg := AppendMessage(nil, &Message{Round: 1, Start: start, Length: DefaultRoundLength})
		if err := f.Handle(msg, now); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: round 1 starting at %v adopted at %v: %v, want ErrBadMessage", name, start, now, err)
		}
		if n, _, _ := f.Round(); n != 0 || f.Stats().Rejected != 1 {
			t.Errorf("%s: round %d after the refused message, rejected %d", name, n, f.Stats().Rejected)
		}
		if ev := f.Tick(now, 100); ev.NewRound {
			t.Errorf("%s: the refused round was set", name)
		}
	}
	// Plausible starts are adopted: a countdown ahead, or a round in
	// progress (a follower that missed the first messages).
	for _, start := range []clocksync.GameTime{now.Add(DefaultCountdown), now.Add(time.Minute), now.Add(-30 * time.Second)} {
		f, _ := NewRules(RulesConfig{Me: 2, Rival: 1})
		if err := f.Handle(AppendMessage(nil, &Message{Round: 1, Start: start, Length: DefaultRoundLength}), now); err != nil {
			t.Errorf("round starting at %v refused at %v: %v", start, now, err)
		}
		if n, s, _ := f.Round(); n != 1 || s != start {
			t.Errorf("round %d at %v, want 1 at %v", n, s, start)
		}
	}
}

// Peer 2 adopts a new round from a message, in Match.Tick, before its
// fighter is healed for it (the game resets the fighters when Tick reports
// NewRound). A knocked-out fighter's 0 HP from the last round must not end
// the new round at once, nor appear in its history.
func TestFollowerKnockedOutLastRoundStartsTheNextAlive(t *testing.T) {
	p := newPair(t, RulesConfig{RoundLength: 2 * time.Second}, 9)
	p.untilPhase(1, PhaseFight, 10*time.Second)
	p.hp[1] = 0 // peer 2 is knocked out
	p.run(3 * time.Second)
	if a, b := p.results(); a != b || a.Winner != 1 || a.By != EndKO {
		t.Fatalf("round 1: %v / %v", a, b)
	}
	for _, r := range p.rules {
		if err := r.Rematch(); err != nil {
			t.Fatal(err)
		}
	}
	p.untilPhase(1, PhaseCountdown, 5*time.Second)
	if p.rules[1].report != nil {
		t.Fatalf("peer 2's round 2 ended before it began: %+v", *p.rules[1].report)
	}
	p.run(6 * time.Second) // nobody is hit in round 2
	a, b := p.results()
	if a != b || a.Round != 2 || a.Winner != 0 || a.By != EndTime || a.HP != [2]int{100, 100} {
		t.Errorf("round 2 without a hit: %v / %v, want a draw on time at full HP", a, b)
	}
	if ch := p.rules[1].report.Changes; len(ch) != 0 {
		t.Errorf("peer 2's round 2 history has HP changes without a hit: %v", ch)
	}
}

// A report must be a history the rules can produce: the fighter starts the
// round at full health and HP only goes down in a round. A report that
// starts above full health, or heals, is garbage (it would decide the
// round) and is refused without changing anything.
func TestRulesRefuseImpossibleReports(t *testing.T) {
	p := newPair(t, RulesConfig{RoundLength: 5 * time.Second}, 11)
	p.untilPhase(1, PhaseFight, 10*time.Second)
	n, start, length := p.rules[1].Round()
	for name, rep := range map[string]*Report{
		"above full health": {Cut: 5000, HP0: 1000},
		"below full health": {Cut: 5000, HP0: 50},
		"heals":             {Cut: 5000, HP0: 100, Changes: []HPChange{{At: 100, HP: 40}, {At: 200, HP: 90}}},
		"rises above full":  {Cut: 5000, HP0: 100, Changes: []HPChange{{At: 100, HP: 150}}},
	} {
		for i, r := range p.rules {
			before := r.Stats().Rejected
			msg := AppendMessage(nil, &Message{Round: n, Start: start, Length: length, Report: rep, AckRound: i == 0})
			if err := r.Handle(msg, p.now); !errors.Is(err, ErrBadMessage) {
				t.Errorf("peer %d, report %s: %v, want ErrBadMessage", i+1, name, err)
			}
			if r.rival != nil || r.Stats().Rejected != before+1 {
				t.Errorf("peer %d, report %s: taken (rival report %v), rejected %d→%d", i+1, name, r.rival, before, r.Stats().Rejected)
			}
		}
	}
	// A real one is taken.
	ok := AppendMessage(nil, &Message{Round: n, Start: start, Length: length,
		Report: &Report{Cut: 5000, HP0: 100, Changes: []HPChange{{At: 100, HP: 90}, {At: 200, HP: 90 - 5}}}})
	if err := p.rules[1].Handle(ok, p.now); err != nil || p.rules[1].rival == nil {
		t.Errorf("a possible report: %v", err)
	}
}

// FuzzRulesHandle feeds arbitrary round messages to both peers' rules in the
// middle of a round: Handle never panics, a refused message changes
// nothing, and whatever it accepts leaves a consistent state (a round
// with a plausible start, a possible rival report).
func FuzzRulesHandle(f *testing.F) {
	const now = clocksync.GameTime(1_000_000_000)
	start := now.Add(-2 * time.Second)
	f.Add(AppendMessage(nil, &Message{Round: 1, Start: start, Length: time.Minute, AckRound: true}))
	f.Add(AppendMessage(nil, &Message{Round: 2, Start: now.Add(3 * time.Second), Length: time.Minute}))
	f.Add(AppendMessage(nil, &Message{Round: 1, Start: start, Length: time.Minute, AckReport: true, Rematch: true,
		Report: &Report{KO: true, Cut: 9000, HP0: 100, Changes: []HPChange{{3000, 50}, {9000, 0}}}}))
	f.Add(AppendMessage(nil, &Message{Round: 1, Start: start, Length: time.Minute, Report: &Report{Cut: 60000, HP0: 100}}))
	f.Fuzz(func(t *testing.T, p []byte) {
		for _, me := range []int{1, 2} {
			r, err := NewRules(RulesConfig{Me: ownershipID(me), Rival: ownershipID(3 - me)})
			if err != nil {
				t.Fatal(err)
			}
			r.newRound(1, start, time.Minute)
			r.pending = Events{}
			r.Tick(now, 80)
			n0, s0, l0 := r.Round()
			rival0 := r.rival
			err = r.Handle(p, now)
			n1, s1, l1 := r.Round()
			if err != nil {
				if !errors.Is(err, ErrBadMessage) {
					t.Fatalf("peer %d: error not wrapping ErrBadMessage: %v", me, err)
				}
				if n1 != n0 || s1 != s0 || l1 != l0 || r.rival != rival0 || r.pending != (Events{}) {
					t.Fatalf("peer %d: a refused message changed the round: %d %v %v -> %d %v %v", me, n0, s0, l0, n1, s1, l1)
				}
				continue
			}
			if n1 != n0 {
				if me == 1 || s1 > now.Add(MaxCountdown+startSlack) || s1 < now.Add(-l1-startSlack) || l1 < time.Second {
					t.Fatalf("peer %d adopted round %d at %v (length %v) at %v", me, n1, s1, l1, now)
				}
			}
			if r.rival != nil {
				if err := r.possible(r.rival); err != nil || r.rival.Validate() != nil {
					t.Fatalf("peer %d took an impossible report %+v", me, *r.rival)
				}
			}
			r.Tick(now.Add(physicsTick), 80) // and the rules go on
			r.AppendMessage(nil, now.Add(physicsTick))
		}
	})
}

const physicsTick = 16_667 * time.Microsecond

func ownershipID(i int) ownership.PeerID { return ownership.PeerID(i) }
