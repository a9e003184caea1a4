package ragsync

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/physics"
)

// memLink is one end of a perfect in-memory link: what one end sends, the
// other polls at its next tick. Both ends share a game clock.
type memLink struct {
	peer   *memLink
	queue  [][]byte // received, not yet polled (buffers reused)
	n      int
	now    *clocksync.GameTime
	synced bool
	sent   int
}

func newMemPair(now *clocksync.GameTime) (*memLink, *memLink) {
	a, b := &memLink{now: now, synced: true}, &memLink{now: now, synced: true}
	a.peer, b.peer = b, a
	return a, b
}

func (l *memLink) Send(p []byte) error {
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

const (
	idA    physics.ObjectID = 1
	idB    physics.ObjectID = 2
	idProp physics.ObjectID = 3
)

// newSide builds one peer's world and match: fighters 1 (peer 1) and 2 (peer
// 2), and a crate between them that peer 1 starts with.
func newSide(t testing.TB, link Link, local, remote ownership.PeerID) *Match {
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
	m, err := NewMatch(w, link, MatchConfig{Local: local, Remote: remote})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Replicator()
	for _, err := range []error{r.Track(idA, 1, false), r.Track(idB, 2, false), r.Track(idProp, 1, true)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func TestMatchTicksBothSides(t *testing.T) {
	var now clocksync.GameTime
	la, lb := newMemPair(&now)
	a, b := newSide(t, la, 1, 2), newSide(t, lb, 2, 1)
	for i := range 300 {
		// A and B fight at close range.
		in := physics.InputPunch
		if i%30 >= 15 {
			in = 0
		}
		a.World().Fighter(idA).SetInput(in)
		b.World().Fighter(idB).SetInput(physics.InputKick &^ physics.Input(i%2))
		if err := a.Tick(); err != nil {
			t.Fatal(err)
		}
		if err := b.Tick(); err != nil {
			t.Fatal(err)
		}
		now += clocksync.GameTime(1_000_000 / physics.TickRate)
	}
	sa, sb := a.Stats(), b.Stats()
	if sa.Ticks != 300 || sb.Ticks != 300 || la.sent != 300 {
		t.Fatalf("ticks %d/%d, sent %d", sa.Ticks, sb.Ticks, la.sent)
	}
	if sa.Rejected != 0 || sb.Rejected != 0 || sa.LastError != nil {
		t.Errorf("rejected %d/%d, last error %v", sa.Rejected, sb.Rejected, sa.LastError)
	}
	if sa.Replicator.Applied < 290 || sb.Replicator.Applied < 290 {
		t.Errorf("applied %d/%d states", sa.Replicator.Applied, sb.Replicator.Applied)
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

func TestMatchWaitsForClock(t *testing.T) {
	var now clocksync.GameTime
	la, lb := newMemPair(&now)
	a, b := newSide(t, la, 1, 2), newSide(t, lb, 2, 1)
	lb.synced = false
	if err := a.Tick(); err != nil {
		t.Fatal(err)
	}
	before, _ := b.World().Object(idB).Transform(0)
	if err := b.Tick(); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("unsynced tick: %v", err)
	}
	after, _ := b.World().Object(idB).Transform(0)
	if before != after || b.World().Tick() != 0 || lb.n != 0 {
		t.Error("an unsynced tick stepped the world or kept packets")
	}
	if s := b.Stats(); s.Unsynced != 1 || s.Ticks != 0 {
		t.Errorf("stats %+v", s)
	}
}

// Bad packets are counted, never stop the match, and never move anything.
func TestMatchSurvivesGarbage(t *testing.T) {
	var now clocksync.GameTime
	la, lb := newMemPair(&now)
	a := newSide(t, la, 1, 2)
	_ = lb
	for _, p := range [][]byte{{}, {0xFF}, []byte("garbage"), {ownership.KindState, 200}} {
		la.queue = append(la.queue[:la.n], append([]byte(nil), p...))
		la.n++
	}
	if err := a.Tick(); err != nil {
		t.Fatal(err)
	}
	s := a.Stats()
	if s.Rejected != 4 || s.Replicator.Malformed != 4 || !errors.Is(s.LastError, ownership.ErrMalformed) {
		t.Errorf("rejected %d, malformed %d, last error %v", s.Rejected, s.Replicator.Malformed, s.LastError)
	}
}

// Everything in a tick but box2d's own step allocates nothing: receive,
// decode, filter, authorize, correct, hits, encode, send.
func TestTickAllocatesNothingButBox2D(t *testing.T) {
	var now clocksync.GameTime
	la, lb := newMemPair(&now)
	a, b := newSide(t, la, 1, 2), newSide(t, lb, 2, 1)
	for range 30 { // warm up buffers
		a.Tick()
		b.Tick()
		now += 16_667
	}
	// The tick without world.Step, in the same order as Tick.
	partial := func(m *Match) {
		m.now = now
		m.link.Poll(m.handle)
		m.rep.BeforeStep(now)
		m.rep.AfterStep()
		pkt, _ := m.rep.AppendPacket(m.buf[:0], now)
		m.link.Send(pkt)
		m.buf = pkt[:0]
	}
	appliedA, appliedB := a.Stats().Replicator.Applied, b.Stats().Replicator.Applied
	allocs := testing.AllocsPerRun(200, func() {
		now += 16_667
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
func BenchmarkTick(b *testing.B) {
	var now clocksync.GameTime
	la, lb := newMemPair(&now)
	a, r := newSide(b, la, 1, 2), newSide(b, lb, 2, 1)
	for range 60 {
		a.Tick()
		r.Tick()
		now += 16_667
	}
	ticks := make([]time.Duration, 0, b.N/2+1)
	steps := make([]time.Duration, 0, b.N/2+1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		lb.Poll(discard) // the rival does not read A's packets: drop them
		r.World().Step() // the rival moves on
		in := physics.InputPunch
		if i%30 >= 15 {
			in = physics.InputLeft
		}
		a.World().Fighter(idA).SetInput(in)
		if i%2 == 0 {
			pkt, _ := r.rep.AppendPacket(r.buf[:0], now)
			lb.Send(pkt)
			t0 := time.Now()
			a.Tick()
			ticks = append(ticks, time.Since(t0))
		} else {
			t0 := time.Now()
			a.World().Step()
			steps = append(steps, time.Since(t0))
		}
		now += 16_667
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
	var now clocksync.GameTime
	la, lb := newMemPair(&now)
	var got []string
	w, err := physics.NewWorld(physics.WorldConfig{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewMatch(w, lb, MatchConfig{Local: 2, Remote: 1, OnMessage: func(p []byte) { got = append(got, string(p)) }})
	if err != nil {
		t.Fatal(err)
	}
	a := newSide(t, la, 1, 2)
	if err := a.SendMessage([]byte("Rematch?")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{nil, {ownership.KindState, 1}, {clocksync.Magic}} {
		if err := a.SendMessage(bad); !errors.Is(err, ErrReservedKind) {
			t.Errorf("SendMessage(%q) = %v, want ErrReservedKind", bad, err)
		}
	}
	if err := b.Tick(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "Rematch?" || b.Stats().Rejected != 0 {
		t.Errorf("got %q, rejected %d", got, b.Stats().Rejected)
	}
}

type classLink struct {
	*memLink
	classes []int
}

func (l *classLink) SendClass(class int, p []byte) error {
	l.classes = append(l.classes, class)
	return l.memLink.Send(p)
}

// Game messages and states travel in different latest-only classes.
func TestMatchUsesClasses(t *testing.T) {
	var now clocksync.GameTime
	la, _ := newMemPair(&now)
	cl := &classLink{memLink: la}
	a := newSide(t, cl, 1, 2)
	if err := a.SendMessage([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	if len(cl.classes) != 1 || cl.classes[0] != ClassMessage {
		t.Errorf("classes %v, want [ClassMessage]", cl.classes)
	}
}
