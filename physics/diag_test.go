package physics

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"testing"
)

func diagOn(t *testing.T) {
	if os.Getenv("PHYS_DIAG") == "" {
		t.Skip("diag")
	}
}

func pr(f *Fighter, step int) {
	o := f.Object()
	ts := o.ReadBody(0)
	hd := o.ReadBody(1)
	ll, lr := o.ReadBody(7), o.ReadBody(9)
	fmt.Printf("%4d %-10s ph=%-8s th=%6.1f° tx=%6.3f ty=%5.3f vx=%6.2f vy=%6.2f head=%5.3f feet=%5.3f/%5.3f g=%v face=%v hp=%d\n",
		step, f.Action(), f.AttackPhase(), ts.Angle*180/math.Pi, ts.Pos.X, ts.Pos.Y, ts.Vel.X, ts.Vel.Y, hd.Pos.Y, ll.Pos.Y, lr.Pos.Y, f.Grounded(), f.Facing(), f.HP())
}

func TestDiagIdle(t *testing.T) {
	diagOn(t)
	w, _ := NewWorld(WorldConfig{})
	f, _ := w.AddFighter(1, FighterConfig{X: -1})
	for i := 0; i < 600; i++ {
		w.Step()
		if i%30 == 0 {
			pr(f, i)
		}
	}
}

func TestDiagWalk(t *testing.T) {
	diagOn(t)
	w, _ := NewWorld(WorldConfig{})
	f, _ := w.AddFighter(1, FighterConfig{X: -1})
	for i := 0; i < 60; i++ {
		w.Step()
	}
	f.SetInput(InputRight)
	for i := 0; i < 180; i++ {
		w.Step()
		if i%15 == 0 {
			pr(f, i)
		}
	}
	f.SetInput(InputLeft)
	for i := 0; i < 180; i++ {
		w.Step()
		if i%15 == 0 {
			pr(f, i)
		}
	}
	f.SetInput(0)
	for i := 0; i < 60; i++ {
		w.Step()
		if i%15 == 0 {
			pr(f, i)
		}
	}
}

func TestDiagJump(t *testing.T) {
	diagOn(t)
	w, _ := NewWorld(WorldConfig{})
	f, _ := w.AddFighter(1, FighterConfig{X: -1})
	for i := 0; i < 60; i++ {
		w.Step()
	}
	f.SetInput(InputJump)
	for i := 0; i < 120; i++ {
		w.Step()
		if i%5 == 0 {
			pr(f, i)
		}
	}
}

func TestDiagFight(t *testing.T) {
	diagOn(t)
	dist := 0.7
	if s := os.Getenv("DIST"); s != "" {
		fmt.Sscan(s, &dist)
	}
	move := InputPunch
	if os.Getenv("KICK") != "" {
		move = InputKick
	}
	w, _ := NewWorld(WorldConfig{})
	a, _ := w.AddFighter(1, FighterConfig{X: -dist / 2})
	b, _ := w.AddFighter(2, FighterConfig{X: dist / 2})
	for i := 0; i < 60; i++ {
		w.Step()
	}
	pr(a, 0)
	pr(b, 0)
	for i := 0; i < 240; i++ {
		if i%60 == 0 {
			a.SetInput(move)
		} else {
			a.SetInput(0)
		}
		w.Step()
		for _, h := range w.Hits() {
			fmt.Printf("HIT %+v dmg=%d\n", h, b.Damage(h))
			if os.Getenv("APPLY") != "" {
				b.ApplyHit(h)
			}
		}
		if i%5 == 0 {
			pr(a, i)
			pr(b, i)
		}
	}
}

func TestDiagGetUp(t *testing.T) {
	diagOn(t)
	w, _ := NewWorld(WorldConfig{})
	f, _ := w.AddFighter(1, FighterConfig{X: 0})
	for i := 0; i < 30; i++ {
		w.Step()
	}
	// Lay it down: rotate the standing pose by 90° about a point on the ground.
	st := f.Object().ReadState(nil)
	ang := math.Pi / 2
	if os.Getenv("FACEDOWN") != "" {
		ang = -math.Pi / 2
	}
	for i := range st {
		p := st[i].Pos.Sub(Vec2{0, 0}).Rotate(ang)
		st[i].Pos = Vec2{p.X, p.Y + 0.2}
		if ang < 0 {
			st[i].Pos.Y = p.Y + 0.2
		}
		st[i].Angle += ang
		st[i].Vel, st[i].AngVel = Vec2{}, 0
	}
	// Shift so the body lies above ground.
	minY := 10.0
	for _, s := range st {
		minY = min(minY, s.Pos.Y)
	}
	for i := range st {
		st[i].Pos.Y += 0.2 - minY
	}
	if err := f.Object().WriteState(st); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 240; i++ {
		w.Step()
		if i%10 == 0 {
			pr(f, i)
		}
	}
}

func TestDiagCodec(t *testing.T) {
	diagOn(t)
	w, _ := NewWorld(WorldConfig{})
	a, _ := w.AddFighter(1, FighterConfig{X: -0.4})
	b, _ := w.AddFighter(2, FighterConfig{X: 0.4})
	c := w.Codec()
	var snap, out Snapshot
	var buf []byte
	hist := map[int]int{}
	shifts := map[uint8]int{}
	maxSize, sum, cnt := 0, 0, 0
	var maxPos, maxAng, maxVel, maxW float64
	for i := 0; i < 1200; i++ {
		in := Input(0)
		switch {
		case i%90 == 10:
			in = InputPunch
		case i%90 == 40:
			in = InputKick
		case i%300 > 200 && i%300 < 260:
			in = InputLeft
		case i%300 == 280:
			in = InputJump
		}
		a.SetInput(in)
		w.Step()
		for _, h := range w.Hits() {
			w.Fighter(h.Victim).ApplyHit(h)
		}
		for _, f := range []*Fighter{a, b} {
			snap.Reset(int64(i)*16667, uint32(i))
			snap.Add(f.Object())
			var err error
			buf, err = c.AppendSnapshot(buf[:0], &snap)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.DecodeSnapshot(buf, &out); err != nil {
				t.Fatal(err)
			}
			for k, s := range snap.Objects[0].Bodies {
				d := out.Objects[0].Bodies[k]
				maxPos = math.Max(maxPos, math.Max(math.Abs(s.Pos.X-d.Pos.X), math.Abs(s.Pos.Y-d.Pos.Y)))
				maxAng = math.Max(maxAng, math.Abs(AngleDiff(s.Angle, d.Angle)))
				maxVel = math.Max(maxVel, math.Max(math.Abs(s.Vel.X-d.Vel.X), math.Abs(s.Vel.Y-d.Vel.Y)))
				maxW = math.Max(maxW, math.Abs(s.AngVel-d.AngVel))
			}
			hist[len(buf)/4*4]++
			shifts[out.Objects[0].VelShift]++
			sum += len(buf)
			cnt++
			maxSize = max(maxSize, len(buf))
		}
	}
	fmt.Println("avg", float64(sum)/float64(cnt), "max", maxSize, hist, "shifts", shifts)
	fmt.Println("errors pos", maxPos, "ang°", maxAng*180/math.Pi, "vel", maxVel, "angvel", maxW)
}

func TestDiagBig(t *testing.T) {
	diagOn(t)
	var buf []byte
	fightStates(t, 1800, func(w *World, s *Snapshot) {
		c := w.Codec()
		buf, _ = c.AppendSnapshot(buf[:0], s)
		if len(buf) < 64 {
			return
		}
		o := &s.Objects[0]
		l := w.Layout(o.ID)
		var rec [MaxBodiesPerObject]BodyState
		var q [MaxBodiesPerObject]quantBody
		for i := range l.Bodies {
			c.quantizeBody(l, i, &o.Bodies[i], rec[:], &q[i], uint(o.VelShift))
		}
		ks := chooseOrders(l, q[:len(l.Bodies)])
		fmt.Printf("len %d shift %d action %v ks %+v\n", len(buf), o.VelShift, o.Fighter.Action, ks)
		for i := range l.Bodies {
			b := q[i]
			if i == 0 {
				fmt.Printf("  root v=(%d,%d) w=%d bits %d\n", b.vx, b.vy, b.w, egLen(b.vx, int(ks.root))+egLen(b.vy, int(ks.root))+egLen(b.w, int(ks.root)))
				continue
			}
			fmt.Printf("  %d w=%d (%d) r=(%d,%d) (%d) v=(%d,%d) (%d)\n", i, b.w, egLen(b.w, int(ks.ang)), b.rx, b.ry, egLen(b.rx, 0)+egLen(b.ry, 0), b.vx, b.vy, egLen(b.vx, int(ks.vel))+egLen(b.vy, int(ks.vel)))
		}
	})
}

func TestDiagRandomFight(t *testing.T) {
	diagOn(t)
	w, _ := NewWorld(WorldConfig{VelocityIterations: 8, PositionIterations: 6})
	a := addFighter(t, w, 1, -0.5)
	b := addFighter(t, w, 2, 0.5)
	w.AddBall(3, PropConfig{Pos: V(0, 4)})
	w.AddCrate(4, PropConfig{Pos: V(2, 1)})
	c := w.Codec()
	rng := rand.New(rand.NewSource(5))
	var s, d Snapshot
	var buf []byte
	hist := map[int]int{}
	shifts := map[uint8]int{}
	maxLen := 0
	ins := [2]Input{}
	for i := 0; i < 20000; i++ {
		for k, f := range []*Fighter{a, b} {
			if rng.Intn(20) == 0 {
				ins[k] = Input(rng.Intn(64))
			}
			f.SetInput(ins[k])
		}
		w.Step()
		for _, h := range w.Hits() {
			w.Fighter(h.Victim).ApplyHit(h)
		}
		for _, f := range []*Fighter{a, b} {
			if f.HP() < 20 {
				f.Revive(100)
			}
			s.Reset(int64(i)*16667+3_600_000_000, uint32(i)+100000)
			s.Add(f.Object())
			var err error
			buf, err = c.AppendSnapshot(buf[:0], &s)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.DecodeSnapshot(buf, &d); err != nil {
				t.Fatal(err)
			}
			hist[len(buf)/4*4]++
			shifts[d.Objects[0].VelShift]++
			maxLen = max(maxLen, len(buf))
			if len(buf) > 64 {
				o := &s.Objects[0]
				l := w.Layout(o.ID)
				var rec [MaxBodiesPerObject]BodyState
				var q [MaxBodiesPerObject]quantBody
				for i := range l.Bodies {
					c.quantizeBody(l, i, &o.Bodies[i], rec[:], &q[i], uint(o.VelShift))
				}
				ks := chooseOrders(l, q[:len(l.Bodies)])
				fmt.Printf("len %d shift %d action %v ks %+v\n", len(buf), o.VelShift, o.Fighter.Action, ks)
				for i := range l.Bodies {
					b := q[i]
					if i == 0 {
						fmt.Printf("  root v=(%d,%d) w=%d bits %d\n", b.vx, b.vy, b.w, egLen(b.vx, int(ks.root))+egLen(b.vy, int(ks.root))+egLen(b.w, int(ks.root)))
						continue
					}
					fmt.Printf("  %d w=%d (%d) r=(%d,%d) (%d) v=(%d,%d) (%d)\n", i, b.w, egLen(b.w, int(ks.ang)), b.rx, b.ry, egLen(b.rx, int(ks.pos))+egLen(b.ry, int(ks.pos)), b.vx, b.vy, egLen(b.vx, int(ks.vel))+egLen(b.vy, int(ks.vel)))
				}
			}
		}
	}
	fmt.Println("max", maxLen, hist, shifts)
	fmt.Println("hp", a.HP(), b.HP(), a.Action(), b.Action())
}
