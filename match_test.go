package ragsync

import (
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
	"github.com/ragsync/ragsync/signaling"
)

// memLink is one end of a perfect in-memory link: what one end sends, the
// other polls at its next tick. Both ends share a game clock.
type memLink struct {
	peer    *memLink
	role    signaling.Role
	queue   [][]byte // received, not yet polled (buffers reused)
	n       int
	now     *clocksync.GameTime
	synced  bool
	sent    int
	started int                 // StartMatch calls
	tamper  func([]byte) []byte // if set, rewrites what this end sends (a modified client)
}

func newMemPair(now *clocksync.GameTime) (*memLink, *memLink) {
	a := &memLink{now: now, synced: true, role: signaling.RoleOfferer}
	b := &memLink{now: now, synced: true, role: signaling.RoleAnswerer}
	a.peer, b.peer = b, a
	return a, b
}

func (l *memLink) Send(p []byte) error {
	if l.tamper != nil {
		p = l.tamper(p)
	}
	q := l.peer
	if q.n == len(q.queue) {
		q.queue = append(q.queue, make([]byte, 0, 1500))
	}
	q.queue[q.n] = append(q.queue[q.n][:0], p...)
	q.n++
	l.sent++
	return nil
}

func (l *memLink) Poll(fn func(p []byte)) int {
	n := l.n
	for i := range n {
		fn(l.queue[i])
	}
	l.n = 0
	return n
}

func (l *memLink) GameTime() (clocksync.GameTime, bool) { return *l.now, l.synced }
func (l *memLink) Role() signaling.Role                 { return l.role }
func (l *memLink) StartMatch()                          { l.started++ }

// inject queues p on l as if the peer had sent it.
func (l *memLink) inject(p []byte) {
	l.queue = append(l.queue[:l.n], append([]byte(nil), p...))
	l.n++
}

var _ Link = (*memLink)(nil)

const (
	idA    physics.ObjectID = 1
	idB    physics.ObjectID = 2
	idProp physics.ObjectID = 3
)

// testConfig is the match of newTestWorld: fighters 1 (side 1) and 2 (side
// 2), and the crate, which side 1 starts with.
func testConfig() MatchConfig {
	return MatchConfig{Fighters: [2]physics.ObjectID{idA, idB}, Props: []physics.ObjectID{idProp}}
}

// newTestWorld builds one peer's world: two fighters close together and a
// crate beside them.
func newTestWorld(t testing.TB) *physics.World {
	t.Helper()
	w, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddFighter(idA, physics.FighterConfig{X: -0.5}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddFighter(idB, physics.FighterConfig{X: 0.5}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddCrate(idProp, physics.PropConfig{Pos: physics.V(3, 0.25)}); err != nil {
		t.Fatal(err)
	}
	return w
}

func newTestMatch(t testing.TB, w *physics.World, link Link, cfg MatchConfig) *Match {
	t.Helper()
	m, err := NewMatch(w, link, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// matchPair is a two-world match: two peers, each with its own world and
// Match, over a perfect in-memory link and one shared game clock.
type matchPair struct {
	now    clocksync.GameTime
	a, b   *Match   // side 1 (the offerer) and side 2 (the answerer)
	la, lb *memLink // their ends of the link
}

// newMatchPair builds a two-world match with cfg (testConfig if nil) on
// newTestWorld worlds.
func newMatchPair(t testing.TB, cfg *MatchConfig) *matchPair {
	t.Helper()
	if cfg == nil {
		c := testConfig()
		cfg = &c
	}
	p := &matchPair{}
	p.la, p.lb = newMemPair(&p.now)
	p.a = newTestMatch(t, newTestWorld(t), p.la, *cfg)
	p.b = newTestMatch(t, newTestWorld(t), p.lb, *cfg)
	return p
}

// tick runs one tick of both peers, then advances the game clock a tick.
func (p *matchPair) tick(t testing.TB) {
	t.Helper()
	for _, m := range []*Match{p.a, p.b} {
		if err := m.Tick(); err != nil {
			t.Fatal(err)
		}
	}
	p.now += clocksync.GameTime(1_000_000 / physics.TickRate)
}

func TestMatchTicksBothSides(t *testing.T) {
	p := newMatchPair(t, nil)
	a, b := p.a, p.b
	if a.Side() != 1 || b.Side() != 2 || a.Fighter().ID() != idA || a.Rival().ID() != idB ||
		b.Fighter().ID() != idB || b.Rival().ID() != idA {
		t.Fatalf("sides %d/%d, A plays %v against %v, B plays %v against %v",
			a.Side(), b.Side(), a.Fighter().ID(), a.Rival().ID(), b.Fighter().ID(), b.Rival().ID())
	}
	for i := range 300 {
		// A and B fight at close range.
		in := physics.InputPunch
		if i%30 >= 15 {
			in = 0
		}
		a.Fighter().SetInput(in)
		b.Fighter().SetInput(physics.InputKick &^ physics.Input(i%2))
		p.tick(t)
	}
	sa, sb := a.Stats(), b.Stats()
	if sa.Ticks != 300 || sb.Ticks != 300 || p.la.sent != 300 {
		t.Fatalf("ticks %d/%d, sent %d", sa.Ticks, sb.Ticks, p.la.sent)
	}
	if p.la.started != 1 || p.lb.started != 1 {
		t.Errorf("StartMatch called %d/%d times, want once each", p.la.started, p.lb.started)
	}
	if sa.Rejected != 0 || sb.Rejected != 0 || sa.LastError != nil {
		t.Errorf("rejected %d/%d, last error %v", sa.Rejected, sb.Rejected, sa.LastError)
	}
	if sa.Replicator.Applied < 290 || sb.Replicator.Applied < 290 {
		t.Errorf("applied %d/%d states", sa.Replicator.Applied, sb.Replicator.Applied)
	}
	// Each side owns its own fighter; side 1 starts with the crate.
	for _, c := range []struct {
		m    *Match
		id   physics.ObjectID
		want ownership.Mode
	}{{a, idA, ownership.ModeOwned}, {a, idB, ownership.ModeRemote}, {b, idA, ownership.ModeRemote}, {b, idB, ownership.ModeOwned}} {
		if got := c.m.Replicator().Mode(c.id); got != c.want {
			t.Errorf("side %d: %v is %v, want %v", c.m.Side(), c.id, got, c.want)
		}
	}
	// Damage is the victim's owner's: both see the same HP for each fighter.
	for _, id := range []physics.ObjectID{idA, idB} {
		ha, hb := a.World().Fighter(id).HP(), b.World().Fighter(id).HP()
		if ha != hb {
			t.Errorf("fighter %v: HP %d on A, %d on B", id, ha, hb)
		}
	}
	if sa.Replicator.HitsTaken+sb.Replicator.HitsTaken == 0 {
		t.Error("no hit landed in 5 s of fighting at close range")
	}
}

// Every setup error NewMatch reports is a *SetupError naming the field and
// the id, and wrapping the reason.
func TestNewMatchSetupErrors(t *testing.T) {
	var now clocksync.GameTime
	la, _ := newMemPair(&now)
	unpaired := &memLink{now: &now}
	for _, c := range []struct {
		name   string
		world  func(w *physics.World) *physics.World // nil: the test world
		link   Link
		cfg    func(c *MatchConfig)
		field  string
		object physics.ObjectID
		err    error // nil: any error (checked by field)
	}{
		{name: "nil world", world: func(*physics.World) *physics.World { return nil }, field: "world"},
		{name: "nil link", link: Link(nil), field: "link"},
		{name: "unpaired link", link: unpaired, field: "link"},
		{name: "no fighters", cfg: func(c *MatchConfig) { c.Fighters = [2]physics.ObjectID{} }, field: "Fighters[0]", err: physics.ErrInvalidID},
		{name: "second fighter missing", cfg: func(c *MatchConfig) { c.Fighters[1] = 0 }, field: "Fighters[1]", err: physics.ErrInvalidID},
		{name: "unknown fighter", cfg: func(c *MatchConfig) { c.Fighters[1] = 9 }, field: "Fighters[1]", object: 9, err: physics.ErrUnknownObject},
		{name: "same fighter twice", cfg: func(c *MatchConfig) { c.Fighters[1] = idA }, field: "Fighters[1]", object: idA, err: physics.ErrDuplicateObject},
		{name: "a crate as a fighter", cfg: func(c *MatchConfig) { c.Fighters[1], c.Props = idProp, nil }, field: "Fighters[1]", object: idProp, err: ErrNotAFighter},
		{name: "unknown prop", cfg: func(c *MatchConfig) { c.Props = []physics.ObjectID{idProp, 7} }, field: "Props[1]", object: 7, err: physics.ErrUnknownObject},
		{name: "zero prop", cfg: func(c *MatchConfig) { c.Props = []physics.ObjectID{0} }, field: "Props[0]", err: physics.ErrInvalidID},
		{name: "prop twice", cfg: func(c *MatchConfig) { c.Props = []physics.ObjectID{idProp, idProp} }, field: "Props[1]", object: idProp, err: physics.ErrDuplicateObject},
		{name: "a fighter as a prop", cfg: func(c *MatchConfig) { c.Props = []physics.ObjectID{idProp, idB} }, field: "Props[1]", object: idB, err: physics.ErrDuplicateObject},
		{name: "a third fighter as a prop", world: func(w *physics.World) *physics.World {
			if _, err := w.AddFighter(4, physics.FighterConfig{X: 5}); err != nil {
				t.Fatal(err)
			}
			return w
		}, cfg: func(c *MatchConfig) { c.Props = []physics.ObjectID{idProp, 4} }, field: "Props[1]", object: 4},
		{name: "tiny send buffer", cfg: func(c *MatchConfig) { c.MaxPacket = 10 }, field: "MaxPacket"},
		{name: "bad replicator config", cfg: func(c *MatchConfig) { c.Replicator.ClaimCooldown = -1 }, field: "Replicator"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newTestWorld(t)
			if c.world != nil {
				w = c.world(w)
			}
			var link Link = la
			if c.name == "nil link" || c.link != nil {
				link = c.link
			}
			cfg := testConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			m, err := NewMatch(w, link, cfg)
			var se *SetupError
			if m != nil || !errors.As(err, &se) {
				t.Fatalf("NewMatch = %v, %v; want a *SetupError", m, err)
			}
			if se.Field != c.field || se.Object != c.object || (c.err != nil && !errors.Is(err, c.err)) {
				t.Errorf("NewMatch = %q (field %q, object %v), want field %q, object %v, wrapping %v",
					err, se.Field, se.Object, c.field, c.object, c.err)
			}
		})
	}
}

// An object of the world nobody registered stops the first synced tick with
// a *SetupError naming it; the match does not start until the game
// registers it, and then plays.
func TestMatchRefusesUnregisteredObjects(t *testing.T) {
	var now clocksync.GameTime
	la, lb := newMemPair(&now)
	w := newTestWorld(t)
	if _, err := w.AddBall(8, physics.PropConfig{Pos: physics.V(-4, 0.2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddBall(9, physics.PropConfig{Pos: physics.V(-5, 0.2)}); err != nil {
		t.Fatal(err)
	}
	m := newTestMatch(t, w, la, testConfig())
	la.inject([]byte("a packet that arrived meanwhile"))
	lb.synced = false
	for range 2 {
		err := m.Tick()
		var se *SetupError
		if !errors.Is(err, ErrMissingObject) || !errors.As(err, &se) || se.Object != 8 || se.Field != "" {
			t.Fatalf("first tick with ball 8 unregistered: %v, want a *SetupError naming obj#8", err)
		}
		if la.started != 0 || w.Tick() != 0 || la.n != 0 || m.Stats().Ticks != 0 {
			t.Fatalf("the match started, stepped or kept packets: started %d, world tick %d, queued %d",
				la.started, w.Tick(), la.n)
		}
	}
	// The game registers the debris: the ball nobody syncs and a side-1
	// object of its own.
	if err := m.Replicator().LocalOnly(8); err != nil {
		t.Fatal(err)
	}
	if err := m.Tick(); !errors.Is(err, ErrMissingObject) {
		t.Fatalf("with ball 9 unregistered: %v", err)
	}
	if err := m.Replicator().Track(9, 1, false); err != nil {
		t.Fatal(err)
	}
	if err := m.Tick(); err != nil {
		t.Fatalf("with every object registered: %v", err)
	}
	if la.started != 1 || m.Stats().Ticks != 1 || w.Tick() != 1 {
		t.Errorf("started %d times, %d ticks, world tick %d; want 1 each", la.started, m.Stats().Ticks, w.Tick())
	}
	if err := m.Tick(); err != nil || la.started != 1 {
		t.Errorf("second tick: %v, started %d times", err, la.started)
	}
}

func TestMatchWaitsForClock(t *testing.T) {
	p := newMatchPair(t, nil)
	a, b, lb := p.a, p.b, p.lb
	lb.synced = false
	if err := a.Tick(); err != nil {
		t.Fatal(err)
	}
	before, _ := b.World().Object(idB).Transform(0)
	if err := b.Tick(); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("unsynced tick: %v", err)
	}
	after, _ := b.World().Object(idB).Transform(0)
	if before != after || b.World().Tick() != 0 || lb.n != 0 || lb.started != 0 {
		t.Error("an unsynced tick stepped the world, kept packets or started the match")
	}
	if s := b.Stats(); s.Unsynced != 1 || s.Ticks != 0 {
		t.Errorf("stats %+v", s)
	}
	lb.synced = true
	if err := b.Tick(); err != nil || lb.started != 1 {
		t.Errorf("first synced tick: %v, StartMatch called %d times", err, lb.started)
	}
}

// Bad packets are counted, never stop the match, and never move anything.
func TestMatchSurvivesGarbage(t *testing.T) {
	p := newMatchPair(t, nil)
	for _, pkt := range [][]byte{{}, {0xFF}, []byte("garbage"), {ownership.KindState, 200}} {
		p.la.inject(pkt)
	}
	if err := p.a.Tick(); err != nil {
		t.Fatal(err)
	}
	s := p.a.Stats()
	if s.Rejected != 4 || s.Replicator.Malformed != 4 || !errors.Is(s.LastError, ownership.ErrMalformed) {
		t.Errorf("rejected %d, malformed %d, last error %v", s.Rejected, s.Replicator.Malformed, s.LastError)
	}
}

// Everything in a tick but box2d's own step allocates nothing: receive,
// decode, filter, authorize, correct, hits, encode, send.
func TestTickAllocatesNothingButBox2D(t *testing.T) {
	p := newMatchPair(t, nil)
	a, b := p.a, p.b
	for range 30 { // warm up buffers
		p.tick(t)
	}
	// The tick without world.Step, in the same order as Tick.
	partial := func(m *Match) {
		m.now = p.now
		m.link.Poll(m.handle)
		m.rep.BeforeStep(p.now)
		m.rep.AfterStep()
		pkt, _ := m.rep.AppendPacket(m.buf[:0], p.now)
		m.link.Send(pkt)
		m.buf = pkt[:0]
	}
	appliedA, appliedB := a.Stats().Replicator.Applied, b.Stats().Replicator.Applied
	allocs := testing.AllocsPerRun(200, func() {
		p.now += 16_667
		partial(a)
		partial(b)
	})
	if allocs != 0 {
		t.Errorf("a tick allocates %v times outside box2d", allocs)
	}
	// The measured ticks took the full path: every state packet applied
	// (A gets B's fighter; B gets A's fighter and the crate), nothing
	// rejected.
	sa, sb := a.Stats(), b.Stats()
	if da, db := sa.Replicator.Applied-appliedA, sb.Replicator.Applied-appliedB; da < 200 || db < 2*200 || sa.Rejected+sb.Rejected != 0 {
		t.Errorf("applied %d/%d object states over 201 ticks, rejected %d/%d: not the path under test", da, db, sa.Rejected, sb.Rejected)
	}
}

// BenchmarkTick measures one full peer tick: decode and apply the rival's
// packet, correct the rival's ragdoll, step the world (two fighters in
// contact, and a crate), apply hits, encode and send. In the same run it
// measures a bare world.Step of the same world: even iterations time a full
// Tick, odd ones a bare Step (the rival's packet of an odd iteration is not
// sent, so every timed tick decodes exactly one). It reports both (ns/tick,
// ns/step) and their ratio (step-ratio: what the netcode adds to the
// physics). The rival's work is not timed. Each phase is timed with its own
// clock readings rather than Stop/StartTimer, which stop the world to read
// memory statistics and would cost more than a tick. ns/op and allocs/op
// cover everything, the rival's step included; ragsync's own share of the
// allocations is 0 (TestTickAllocatesNothingButBox2D).
//
// netcode-us/tick is the netcode's own cost in CPU time: the thread CPU
// time (CLOCK_THREAD_CPUTIME_ID, the goroutine locked to its thread) of a
// Tick minus that of the bare Step after it, the median over the run.
// Unlike the wall-clock ratio it does not count the time other processes
// take the core on a busy machine, and it does not shrink with a faster
// physics engine. (Linux only; elsewhere it is not reported.)
func BenchmarkTick(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := newMatchPair(b, nil)
	a, r := p.a, p.b
	for range 60 {
		p.tick(b)
	}
	ticks := make([]time.Duration, 0, b.N/2+1)
	steps := make([]time.Duration, 0, b.N/2+1)
	cpuTicks := make([]time.Duration, 0, b.N/2+1)
	cpuSteps := make([]time.Duration, 0, b.N/2+1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p.lb.Poll(discard) // the rival does not read A's packets: drop them
		r.World().Step()   // the rival moves on
		in := physics.InputPunch
		if i%30 >= 15 {
			in = physics.InputLeft
		}
		a.Fighter().SetInput(in)
		if i%2 == 0 {
			pkt, _ := r.rep.AppendPacket(r.buf[:0], p.now)
			p.lb.Send(pkt)
			c0, _ := threadCPU()
			t0 := time.Now()
			a.Tick()
			ticks = append(ticks, time.Since(t0))
			c1, ok := threadCPU()
			if ok {
				cpuTicks = append(cpuTicks, time.Duration(c1-c0))
			}
		} else {
			c0, _ := threadCPU()
			t0 := time.Now()
			a.World().Step()
			steps = append(steps, time.Since(t0))
			c1, ok := threadCPU()
			if ok {
				cpuSteps = append(cpuSteps, time.Duration(c1-c0))
			}
		}
		p.now += 16_667
	}
	b.StopTimer()
	if len(ticks) > 0 && len(steps) > 0 {
		tn, sn := meanNs(ticks), meanNs(steps)
		b.ReportMetric(tn, "ns/tick")
		b.ReportMetric(sn, "ns/step")
		b.ReportMetric(tn/sn, "step-ratio")
		// The medians shrug off what the mean cannot on a shared machine:
		// a tick or step stretched by another process or a GC pause.
		b.ReportMetric(medianNs(ticks)/medianNs(steps), "step-ratio-p50")
	}
	if n := min(len(cpuTicks), len(cpuSteps)); n > 0 {
		// Each tick against the step right after it: the two ran on
		// nearly the same world, at nearly the same load of the machine.
		for k := range n {
			cpuTicks[k] -= cpuSteps[k]
		}
		b.ReportMetric(medianNs(cpuTicks[:n])/1000, "netcode-us/tick")
	}
	s := a.Stats().Replicator
	b.ReportMetric(float64(s.BytesOut)/float64(s.PacketsOut), "bytes/packet")
}

func meanNs(d []time.Duration) float64 {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return float64(sum) / float64(len(d))
}

func medianNs(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2])
}

func TestMatchGameMessages(t *testing.T) {
	var got []string
	cfg := testConfig()
	cfg.OnMessage = func(p []byte) { got = append(got, string(p)) }
	p := newMatchPair(t, &cfg)
	if err := p.a.SendMessage([]byte("Rematch?")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{nil, {ownership.KindState, 1}, {clocksync.Magic}} {
		if err := p.a.SendMessage(bad); !errors.Is(err, ErrReservedKind) {
			t.Errorf("SendMessage(%q) = %v, want ErrReservedKind", bad, err)
		}
	}
	if p.la.sent != 1 {
		t.Errorf("%d packets sent, want 1 (refused messages are not sent)", p.la.sent)
	}
	if err := p.b.Tick(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "Rematch?" || p.b.Stats().Rejected != 0 {
		t.Errorf("got %q, rejected %d", got, p.b.Stats().Rejected)
	}
}
