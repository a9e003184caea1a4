package physics

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/angle"
)

const floatSlack = 1e-9

// checkClose asserts that got is want after a round trip, within the stated
// precision.
func checkClose(t testing.TB, want, got *ObjectState, l *Layout) {
	t.Helper()
	if got.ID != want.ID || len(got.Bodies) != len(want.Bodies) {
		t.Fatalf("object %v with %d bodies decoded as %v with %d", want.ID, len(want.Bodies), got.ID, len(got.Bodies))
	}
	if l.Fighter && got.Fighter != want.Fighter {
		t.Errorf("%v: fighter state %+v decoded as %+v", want.ID, want.Fighter, got.Fighter)
	}
	k := float64(int(1) << got.VelShift)
	for i := range want.Bodies {
		w, g := want.Bodies[i], got.Bodies[i]
		angErr, velErr, angVelErr, posErr := maxRootAngleError, maxVelError, maxAngVelError, maxPosError
		if l.Bodies[i].Parent >= 0 {
			angErr, velErr, angVelErr = maxChildAngleError, maxVelError*k, maxAngVelError*k
			if got.VelShift == maxVelShift {
				posErr = 2 * maxPosError
			}
		}
		if posErr > 0.001 {
			t.Fatalf("position error bound %v above 1 mm", posErr)
		}
		if dx, dy := math.Abs(w.Pos.X-g.Pos.X), math.Abs(w.Pos.Y-g.Pos.Y); dx > posErr+floatSlack || dy > posErr+floatSlack {
			t.Errorf("%v body %d: position error (%.6f, %.6f) m", want.ID, i, dx, dy)
		}
		if d := math.Abs(angle.Diff(w.Angle, g.Angle)); d > angErr+floatSlack {
			t.Errorf("%v body %d: angle error %.5f°", want.ID, i, deg(d))
		}
		if dx, dy := math.Abs(w.Vel.X-g.Vel.X), math.Abs(w.Vel.Y-g.Vel.Y); dx > velErr+floatSlack || dy > velErr+floatSlack {
			t.Errorf("%v body %d: velocity error (%.5f, %.5f) m/s (VelShift %d)", want.ID, i, dx, dy, got.VelShift)
		}
		if d := math.Abs(w.AngVel - g.AngVel); d > angVelErr+floatSlack {
			t.Errorf("%v body %d: angular velocity error %.5f rad/s (VelShift %d)", want.ID, i, d, got.VelShift)
		}
	}
}

func TestPrecisionConstants(t *testing.T) {
	if maxPosError > 0.001 || maxAngleError > 0.1*math.Pi/180 || maxRootAngleError > maxAngleError {
		t.Errorf("precision above the target: pos %v m, angle %v°", maxPosError, deg(maxAngleError))
	}
}

// randomFighterState builds a plausible fighter state: a random torso pose
// and velocity, joint angles within the limits, bodies where the joints put
// them (plus a little joint drift), and joint-consistent velocities (plus
// solver-like noise).
func randomFighterState(rng *rand.Rand, l *Layout, bounds Rect, speed, noise float64) []BodyState {
	st := make([]BodyState, len(l.Bodies))
	st[0] = BodyState{
		Pos:    V(bounds.Min.X+2+rng.Float64()*(bounds.Size().X-4), bounds.Min.Y+2+rng.Float64()*(bounds.Size().Y-4)),
		Angle:  (rng.Float64()*2 - 1) * math.Pi * 3, // unwrapped on purpose
		Vel:    V(rng.NormFloat64()*speed, rng.NormFloat64()*speed),
		AngVel: rng.NormFloat64() * speed,
	}
	for i := 1; i < len(st); i++ {
		lb := &l.Bodies[i]
		p := &st[lb.Parent]
		lim := jointLimits[i-1]
		angle := p.Angle + lim[0] + rng.Float64()*(lim[1]-lim[0])
		w := p.AngVel + rng.NormFloat64()*speed
		pos, vel := predictChild(lb, &l.Bodies[lb.Parent], p, angle, w)
		st[i] = BodyState{
			Pos:    pos.Add(V(rng.NormFloat64()*noise*0.01, rng.NormFloat64()*noise*0.01)),
			Angle:  angle,
			Vel:    vel.Add(V(rng.NormFloat64()*noise, rng.NormFloat64()*noise)),
			AngVel: w,
		}
	}
	return st
}

func TestCodecRoundTripRandom(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 3, 0)
	crate, _ := w.AddCrate(10, PropConfig{Pos: V(2, 1)})
	c := w.codec
	lim := (&w.limits)
	rng := rand.New(rand.NewSource(1))
	var s, d Snapshot
	var buf []byte
	var err error
	for iter := 0; iter < 3000; iter++ {
		speed := []float64{0, 0.5, 3, 15}[iter%4]
		noise := []float64{0, 0.02, 0.3, 2}[iter/4%4]
		s.Reset(clocksync.GameTime(rng.Int63()-rng.Int63()), rng.Uint32())
		os := s.next()
		os.ID = 3
		os.Fighter = FighterState{HP: rng.Intn(maxWireHP + 1), Action: Action(1 + rng.Intn(int(numActions)-1)),
			Facing: []Facing{FacingLeft, FacingRight}[rng.Intn(2)], AttackSeq: uint8(rng.Intn(4))}
		if os.Fighter.Action == ActionPunch || os.Fighter.Action == ActionKick {
			os.Fighter.Phase = AttackPhase(rng.Intn(4))
			if os.Fighter.Phase != PhaseNone {
				os.Fighter.Strike = []BodyPart{PartLowerArmL, PartLowerArmR, PartLowerLegL, PartLowerLegR}[rng.Intn(2)+2*b2i(os.Fighter.Action == ActionKick)]
			}
		}
		os.Bodies = append(os.Bodies, randomFighterState(rng, f.Object().Layout(), lim.Bounds, speed, noise)...)
		if lim.validateState(3, os.Bodies, FighterBodies) != nil {
			s.Objects = s.Objects[:0] // rare: a limb outside the bounds
		}
		cs := s.next()
		cs.ID = 10
		cs.Bodies = append(cs.Bodies, BodyState{
			Pos:    V(lim.Bounds.Min.X+rng.Float64()*lim.Bounds.Size().X, lim.Bounds.Min.Y+rng.Float64()*lim.Bounds.Size().Y),
			Angle:  rng.NormFloat64() * 100,
			Vel:    V((rng.Float64()*2-1)*lim.MaxSpeed*0.7, (rng.Float64()*2-1)*lim.MaxSpeed*0.7),
			AngVel: (rng.Float64()*2 - 1) * lim.MaxAngularSpeed,
		})
		buf, err = c.appendSnapshot(buf[:0], &s)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		if err := c.decodeSnapshot(buf, &d); err != nil {
			t.Fatalf("iter %d: decode: %v", iter, err)
		}
		if d.Time != s.Time || d.Seq != s.Seq || len(d.Objects) != len(s.Objects) {
			t.Fatalf("iter %d: header %d/%d/%d decoded as %d/%d/%d", iter, s.Time, s.Seq, len(s.Objects), d.Time, d.Seq, len(d.Objects))
		}
		for k := range s.Objects {
			checkClose(t, &s.Objects[k], &d.Objects[k], w.layout(s.Objects[k].ID))
			if d.Objects[k].VelShift != s.Objects[k].VelShift {
				t.Fatalf("VelShift %d decoded as %d", s.Objects[k].VelShift, d.Objects[k].VelShift)
			}
		}
		// Every decoded state can be written into the world.
		for k := range d.Objects {
			if err := w.Object(d.Objects[k].ID).validateBodies(d.Objects[k].Bodies); err != nil {
				t.Fatalf("iter %d: decoded state does not validate: %v", iter, err)
			}
		}
		if t.Failed() {
			t.Fatalf("iter %d (speed %v, noise %v)", iter, speed, noise)
		}
	}
	_ = crate
}

func TestCodecEdgeOfLimits(t *testing.T) {
	w := newWorld(t)
	crate, _ := w.AddCrate(1, PropConfig{Pos: V(0, 1)})
	_ = crate
	c := w.codec
	lim := (&w.limits)
	b := lim.Bounds
	s := lim.MaxSpeed
	for _, st := range []BodyState{
		{Pos: b.Min, Vel: V(s, 0), AngVel: lim.MaxAngularSpeed},
		{Pos: b.Max, Vel: V(-s/math.Sqrt2, -s/math.Sqrt2), AngVel: -lim.MaxAngularSpeed},
		{Pos: V(b.Max.X-1e-7, b.Min.Y+1e-7), Vel: V(0, -s), Angle: math.Pi},
		{Pos: V(0, 0), Angle: -math.Pi, Vel: V(s*0.6, s*0.8)},
	} {
		t.Run(fmt.Sprintf("%+v", st), func(t *testing.T) {
			var snap, out Snapshot
			snap.Reset(0, 0)
			os := snap.next()
			os.ID = 1
			os.Bodies = append(os.Bodies, st)
			buf, err := c.appendSnapshot(nil, &snap)
			if err != nil {
				t.Fatalf("%+v: %v", st, err)
			}
			if err := c.decodeSnapshot(buf, &out); err != nil {
				t.Fatalf("%+v: %v", st, err)
			}
			g := out.Objects[0].Bodies[0]
			if err := lim.validateBody(1, 0, &g); err != nil {
				t.Errorf("decoded edge state does not validate: %v", err)
			}
			if g.Pos.Sub(st.Pos).Len() > 2*posQuantum || g.Vel.Sub(st.Vel).Len() > 4*velQuantum || math.Abs(angle.Diff(g.Angle, st.Angle)) > 2*rootAngleStep {
				t.Errorf("edge state %+v decoded as %+v", st, g)
			}
		})
	}
}

// fightStates runs a scripted fight and calls fn with each fighter's snapshot
// after every step.
func fightStates(t testing.TB, n int, fn func(w *World, s *Snapshot)) {
	w := newWorld(t)
	a := addFighter(t, w, 1, -0.45)
	b := addFighter(t, w, 2, 0.45)
	var s Snapshot
	for i := 0; i < n; i++ {
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
		b.SetInput(InputBlock * Input(i/150%2))
		w.Step()
		for _, h := range w.Hits() {
			w.Fighter(h.Victim).ApplyHit(h)
		}
		for _, f := range []*Fighter{a, b} {
			s.Reset(clocksync.GameTime(i)*16667+3_600_000_000, uint32(i)+100_000) // an hour into a match
			s.Add(f.Object())
			fn(w, &s)
		}
		if a.HP() < 30 {
			a.Revive(a.MaxHP())
		}
		if b.HP() < 30 {
			b.Revive(b.MaxHP())
		}
	}
}

func TestCodecFighterSizeAndPrecision(t *testing.T) {
	// Idle: well under the target.
	w := newWorld(t)
	f := addFighter(t, w, 1, 0)
	steps(w, 60)
	c := w.codec
	var s, d Snapshot
	s.Reset(3_600_000_000, 216_000)
	s.Add(f.Object())
	buf, err := c.appendSnapshot(nil, &s)
	if err != nil {
		t.Fatal(err)
	}
	if len(buf) > 52 {
		t.Errorf("idle fighter snapshot is %d bytes, want ≤ 52", len(buf))
	}
	if err := c.decodeSnapshot(buf, &d); err != nil {
		t.Fatal(err)
	}
	checkClose(t, &s.Objects[0], &d.Objects[0], f.Object().Layout())
	if d.Objects[0].VelShift != 0 {
		t.Errorf("idle fighter needed VelShift %d", d.Objects[0].VelShift)
	}
	t.Logf("idle fighter: %d bytes", len(buf))

	// A fight: always within 64 bytes, and mostly at full precision.
	var total, n, maxLen, coarse int
	fightStates(t, 1800, func(w *World, s *Snapshot) {
		c := w.codec
		buf, err = c.appendSnapshot(buf[:0], s)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.decodeSnapshot(buf, &d); err != nil {
			t.Fatal(err)
		}
		checkClose(t, &s.Objects[0], &d.Objects[0], w.layout(s.Objects[0].ID))
		total += len(buf)
		n++
		maxLen = max(maxLen, len(buf))
		if d.Objects[0].VelShift > 0 {
			coarse++
		}
	})
	if maxLen > snapshotTarget {
		t.Errorf("largest fighter snapshot %d bytes, want ≤ %d", maxLen, snapshotTarget)
	}
	if avg := float64(total) / float64(n); avg > 52 {
		t.Errorf("average fighter snapshot %.1f bytes, want ≤ 52", avg)
	}
	if float64(coarse) > 0.1*float64(n) {
		t.Errorf("%d of %d snapshots needed coarser velocities", coarse, n)
	}
	t.Logf("fight: %d snapshots, average %.1f bytes, max %d, %d with coarser velocities", n, float64(total)/float64(n), maxLen, coarse)
}

func TestCodecEncodeErrors(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 2, 0)
	w.AddBall(5, PropConfig{Pos: V(2, 2)})
	c := w.codec
	good := func() *Snapshot {
		var s Snapshot
		s.Reset(1, 1)
		s.Add(f.Object())
		s.Add(w.Object(5))
		return &s
	}
	prefix := []byte("keep")
	for _, tc := range []struct {
		name  string
		edit  func(s *Snapshot)
		err   error
		field string
	}{
		{"nan", func(s *Snapshot) { s.Objects[0].Bodies[3].Vel.Y = math.NaN() }, ErrNotFinite, "vel.y"},
		{"inf", func(s *Snapshot) { s.Objects[1].Bodies[0].Pos.X = math.Inf(-1) }, ErrNotFinite, "pos.x"},
		{"out of bounds", func(s *Snapshot) { s.Objects[0].Bodies[0].Pos.Y = 50 }, ErrOutOfRange, "pos.y"},
		{"too fast", func(s *Snapshot) { s.Objects[1].Bodies[0].AngVel = 1e4 }, ErrOutOfRange, "angvel"},
		{"hp", func(s *Snapshot) { s.Objects[0].Fighter.HP = maxWireHP + 1 }, ErrOutOfRange, "hp"},
		{"action", func(s *Snapshot) { s.Objects[0].Fighter.Action = numActions }, ErrOutOfRange, "action"},
		{"facing", func(s *Snapshot) { s.Objects[0].Fighter.Facing = FacingUnknown }, ErrOutOfRange, "facing"},
		{"phase", func(s *Snapshot) { s.Objects[0].Fighter.Phase = PhaseActive }, ErrOutOfRange, "phase"},
		{"strike", func(s *Snapshot) { s.Objects[0].Fighter.Strike = PartHead }, ErrOutOfRange, "strike"},
		{"punch with a leg", func(s *Snapshot) {
			s.Objects[0].Fighter.Action, s.Objects[0].Fighter.Phase, s.Objects[0].Fighter.Strike = ActionPunch, PhaseActive, PartLowerLegR
		}, ErrOutOfRange, "strike"},
		{"attackseq", func(s *Snapshot) { s.Objects[0].Fighter.AttackSeq = 4 }, ErrOutOfRange, "attackseq"},
		{"count", func(s *Snapshot) { s.Objects[0].Bodies = s.Objects[0].Bodies[:9] }, ErrBodyCount, "count"},
		{"unknown", func(s *Snapshot) { s.Objects[1].ID = 6 }, ErrUnknownObject, "id"},
		{"order", func(s *Snapshot) { s.Objects[0], s.Objects[1] = s.Objects[1], s.Objects[0] }, errOrder, "id"},
		{"zero id", func(s *Snapshot) { s.Objects[0].ID = 0 }, ErrInvalidID, "id"},
		{"too many", func(s *Snapshot) {
			for len(s.Objects) <= maxSnapshotObjects {
				s.Objects = append(s.Objects, s.Objects[1])
			}
		}, errTooLarge, "objects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.edit(s)
			out, err := c.appendSnapshot(prefix, s)
			var ce *CodecError
			if !errors.Is(err, tc.err) || !errors.As(err, &ce) || ce.Field != tc.field || ce.Op != "encode" {
				t.Errorf("%s: got %v, want %v on field %q", tc.name, err, tc.err, tc.field)
			}
			if string(out) != "keep" {
				t.Errorf("%s: dst changed to %q", tc.name, out)
			}
		})
	}
	if _, err := c.appendSnapshot(nil, good()); err != nil {
		t.Fatal(err)
	}
}

// packet builds a snapshot by hand for decoder tests.
type packet struct {
	version, tag byte
	time         int64
	seq          uint64
	body         func(w *bitWriter)
}

func (p packet) bytes() []byte {
	buf := []byte{p.version, p.tag}
	buf = binary.AppendVarint(buf, p.time)
	buf = binary.AppendUvarint(buf, p.seq)
	w := bitWriter{buf: buf}
	p.body(&w)
	return w.flush()
}

func TestCodecDecodeErrors(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 2, 0)
	w.AddCrate(5, PropConfig{Pos: V(2, 2)})
	c := w.codec
	var s, d Snapshot
	s.Reset(123456789, 42)
	s.Add(f.Object())
	s.Add(w.Object(5))
	valid, err := c.appendSnapshot(nil, &s)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.decodeSnapshot(valid, &d); err != nil {
		t.Fatal(err)
	}

	// A crate (one root body) at a given code, hand-built.
	crate := func(qx, qy uint64, vx int64) func(w *bitWriter) {
		return func(w *bitWriter) {
			w.writeUE(1, egCount)
			w.writeUE(4, egID) // id 5
			w.write(0, velShiftBits+1)
			w.write(0, kRootBits)
			w.write(0, kVelBits)
			w.write(0, kAngBits)
			w.write(0, kPosBits)
			w.write(qx, c.bx)
			w.write(qy, c.by)
			w.write(0, rootAngleBits)
			w.writeSE(vx, 0)
			w.writeSE(0, 0)
			w.writeSE(0, 0)
		}
	}
	ok := packet{snapshotVersion, c.tag, 7, 8, crate(100, 200, 3)}.bytes()
	if err := c.decodeSnapshot(ok, &d); err != nil {
		t.Fatalf("hand-built packet: %v", err)
	}
	fighterState := func(hp, action, phase, strike uint64) func(w *bitWriter) {
		return func(w *bitWriter) {
			w.writeUE(1, egCount)
			w.writeUE(1, egID) // id 2
			w.write(hp, hpBits)
			w.write(action, actionBits)
			w.write(1, 1)
			w.write(phase, phaseBits)
			w.write(strike, strikeBits)
			w.write(0, attackSeqBits)
		}
	}
	fighterHeader := func(hp, action uint64) func(w *bitWriter) { return fighterState(hp, action, 0, 0) }
	big := make([]byte, maxPacketSize+1)
	copy(big, valid)
	for _, tc := range []struct {
		name  string
		pkt   []byte
		err   error
		field string
	}{
		{"empty", nil, errTruncated, "header"},
		{"oversized", big, errTooLarge, "size"},
		{"version", append([]byte{2}, valid[1:]...), ErrVersion, "version"},
		{"config", append([]byte{valid[0], valid[1] + 1}, valid[2:]...), ErrConfigMismatch, "config"},
		{"truncated time", []byte{snapshotVersion, c.tag, 0x80}, errTruncated, "time"},
		{"truncated seq", []byte{snapshotVersion, c.tag, 2}, errTruncated, "seq"},
		{"bad varint", append([]byte{snapshotVersion, c.tag}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), ErrOutOfRange, "time"},
		{"seq > 32 bits", packet{snapshotVersion, c.tag, 0, 1 << 32, crate(1, 1, 0)}.bytes(), ErrOutOfRange, "seq"},
		{"trailing byte", append(append([]byte{}, valid...), 0), errTrailingData, "trailing bytes"},
		{"padding", func() []byte { p := append([]byte{}, ok...); p[len(p)-1] |= 1; return p }(), errTrailingData, "padding"},
		{"unknown object", packet{snapshotVersion, c.tag, 0, 0, func(w *bitWriter) {
			w.writeUE(1, egCount)
			w.writeUE(8, egID)
		}}.bytes(), ErrUnknownObject, "id"},
		{"too many objects", packet{snapshotVersion, c.tag, 0, 0, func(w *bitWriter) { w.writeUE(maxSnapshotObjects+1, egCount) }}.bytes(), errTooLarge, "objects"},
		{"id overflow", packet{snapshotVersion, c.tag, 0, 0, func(w *bitWriter) {
			w.writeUE(2, egCount)
			w.writeUE(65534, egID)
			w.write(0, 30)
		}}.bytes(), ErrUnknownObject, "id"},
		{"x out of range", packet{snapshotVersion, c.tag, 0, 0, crate(c.nx+1, 0, 0)}.bytes(), ErrOutOfRange, "pos.x"},
		{"y out of range", packet{snapshotVersion, c.tag, 0, 0, crate(0, c.ny+1, 0)}.bytes(), ErrOutOfRange, "pos.y"},
		{"too fast", packet{snapshotVersion, c.tag, 0, 0, crate(1, 1, c.nv+1)}.bytes(), ErrOutOfRange, "vel.x"},
		{"hp", packet{snapshotVersion, c.tag, 0, 0, fighterHeader(maxWireHP+1, 1)}.bytes(), ErrOutOfRange, "hp"},
		{"action", packet{snapshotVersion, c.tag, 0, 0, fighterHeader(5, 15)}.bytes(), ErrOutOfRange, "action"},
		{"unknown action 0", packet{snapshotVersion, c.tag, 0, 0, fighterHeader(5, 0)}.bytes(), ErrOutOfRange, "action"},
		{"strike code", packet{snapshotVersion, c.tag, 0, 0, fighterState(5, uint64(ActionKick), 2, 7)}.bytes(), ErrOutOfRange, "strike"},
		{"idle with a phase", packet{snapshotVersion, c.tag, 0, 0, fighterState(5, uint64(ActionIdle), 2, 2)}.bytes(), ErrOutOfRange, "phase"},
		{"absurd residual", packet{snapshotVersion, c.tag, 0, 0, func(w *bitWriter) {
			fighterHeader(5, 1)(w)
			w.write(0, velShiftBits+1+kRootBits+kVelBits+kAngBits+kPosBits)
			w.write(c.nx/2, c.bx)
			w.write(c.ny/2, c.by)
			w.write(0, rootAngleBits)
			w.writeSE(0, 0)
			w.writeSE(0, 0)
			w.writeSE(0, 0)
			w.write(0, childAngleBits)
			w.write(0, 50) // an Exp-Golomb prefix of 50 zeros
			w.write(1, 1)
		}}.bytes(), ErrOutOfRange, "residual"},
		{"child out of bounds", packet{snapshotVersion, c.tag, 0, 0, func(w *bitWriter) {
			fighterHeader(5, 1)(w)
			w.write(0, velShiftBits+1+kRootBits+kVelBits+kAngBits+kPosBits)
			w.write(c.nx/2, c.bx)
			w.write(c.ny/2, c.by)
			w.write(0, rootAngleBits)
			w.writeSE(0, 0)
			w.writeSE(0, 0)
			w.writeSE(0, 0)
			w.write(0, childAngleBits)
			w.writeSE(0, 0)
			w.writeSE(1<<24, 0) // 16 km off
			w.writeSE(0, 0)
			w.writeSE(0, 0)
			w.writeSE(0, 0)
		}}.bytes(), ErrOutOfRange, "pos.x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.decodeSnapshot(tc.pkt, &d)
			var ce *CodecError
			if !errors.Is(err, tc.err) || !errors.As(err, &ce) || ce.Field != tc.field || ce.Op != "decode" {
				t.Errorf("%s: got %v, want %v on field %q", tc.name, err, tc.err, tc.field)
				return
			}
			if ce.Error() == "" || ce.Offset < 0 || ce.Offset > len(tc.pkt) {
				t.Errorf("%s: bad error %+v", tc.name, ce)
			}
		})
	}

	// Every strict prefix of a valid packet is truncated.
	for n := 0; n < len(valid); n++ {
		if err := c.decodeSnapshot(valid[:n], &d); !errors.Is(err, errTruncated) {
			t.Errorf("prefix of %d/%d bytes: %v, want ErrTruncated", n, len(valid), err)
		}
	}
	// A codec over a different arena refuses it.
	other, _ := NewWorld(WorldConfig{Arena: ArenaConfig{Width: 20}})
	addFighter(t, other, 2, 0)
	if err := other.codec.decodeSnapshot(valid, &d); !errors.Is(err, ErrConfigMismatch) {
		t.Errorf("other arena: %v", err)
	}
}

func TestCodecFlippedBitsNeverPanic(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 2, 0)
	c := w.codec
	var s, d Snapshot
	s.Reset(99, 7)
	s.Add(f.Object())
	valid, _ := c.appendSnapshot(nil, &s)
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 20000; i++ {
		p := append([]byte(nil), valid...)
		for k := 0; k <= i%4; k++ {
			p[rng.Intn(len(p))] ^= 1 << rng.Intn(8)
		}
		if err := c.decodeSnapshot(p, &d); err != nil {
			var ce *CodecError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *CodecError", err)
			}
			continue
		}
		for _, o := range d.Objects {
			if err := w.Object(o.ID).validateBodies(o.Bodies); err != nil {
				t.Fatalf("decoded a state that does not validate: %v", err)
			}
		}
	}
}

func TestLayoutValidation(t *testing.T) {
	var tab layoutTable
	for _, l := range []Layout{
		{},
		{Bodies: []LayoutBody{{Parent: 0}}},
		{Bodies: []LayoutBody{{Parent: -1}, {Parent: 1}}},
		{Bodies: []LayoutBody{{Parent: -1, AnchorSelf: V(1, 0)}}},
		{Bodies: []LayoutBody{{Parent: -1, LocalCenter: V(math.NaN(), 0)}}},
		{Bodies: make([]LayoutBody, MaxBodiesPerObject+1)},
	} {
		t.Run(fmt.Sprintf("%+v", l), func(t *testing.T) {
			if err := tab.set(1, &l); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Set(%+v) = %v", l, err)
			}
		})
	}
	good := Layout{Bodies: []LayoutBody{{Parent: -1}, {Parent: 0, AnchorParent: V(0, 1)}}}
	if err := tab.set(0, &good); !errors.Is(err, ErrInvalidID) {
		t.Errorf("id 0: %v", err)
	}
	for _, id := range []ObjectID{9, 3, 7, 3} {
		if err := tab.set(id, &good); err != nil {
			t.Fatal(err)
		}
	}
	if tab.layout(3) == nil || tab.layout(7) == nil || tab.layout(9) == nil || tab.layout(4) != nil || len(tab.ids) != 3 {
		t.Errorf("table %v", tab.ids)
	}
	tab.remove(7)
	if tab.layout(7) != nil {
		t.Error("deleted layout still there")
	}
	if _, err := newCodec(bodyLimits{}, &tab); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("codec without bounds: %v", err)
	}
	if _, err := newCodec(ArenaConfig{}.limits(), nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("codec without layouts: %v", err)
	}
	// A codec over a table talks to a codec over a world.
	w := newWorld(t)
	fa := addFighter(t, w, 4, 0)
	if err := tab.set(4, fa.Object().Layout()); err != nil {
		t.Fatal(err)
	}
	tc, err := newCodec(w.limits, &tab)
	if err != nil {
		t.Fatal(err)
	}
	var s, d Snapshot
	s.Reset(0, 0)
	s.Add(fa.Object())
	buf, err := w.codec.appendSnapshot(nil, &s)
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.decodeSnapshot(buf, &d); err != nil {
		t.Fatal(err)
	}
	checkClose(t, &s.Objects[0], &d.Objects[0], fa.Object().Layout())
}

func TestBitStream(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var w bitWriter
	type item struct {
		v    uint64
		n    uint
		kind int
		s    int64
	}
	var items []item
	for i := 0; i < 5000; i++ {
		switch rng.Intn(3) {
		case 0:
			n := uint(1 + rng.Intn(56))
			v := rng.Uint64() & (1<<n - 1)
			w.write(v, n)
			items = append(items, item{v: v, n: n})
		case 1:
			k := uint(rng.Intn(8))
			v := rng.Uint64() >> (64 - 1 - rng.Intn(38))
			w.writeUE(v, k)
			items = append(items, item{v: v, n: k, kind: 1})
		case 2:
			k := uint(rng.Intn(8))
			s := rng.Int63n(1<<36) - 1<<35
			w.writeSE(s, k)
			items = append(items, item{s: s, n: k, kind: 2})
			if egLen(s, int(k)) <= 0 {
				t.Fatal("egLen")
			}
		}
	}
	r := bitReader{buf: w.flush()}
	for i, it := range items {
		switch it.kind {
		case 0:
			if v := r.read(it.n); v != it.v {
				t.Fatalf("item %d: read %x want %x", i, v, it.v)
			}
		case 1:
			if v := r.readUE(it.n); v != it.v {
				t.Fatalf("item %d: readUE %d want %d", i, v, it.v)
			}
		case 2:
			if s := r.readSE(it.n); s != it.s {
				t.Fatalf("item %d: readSE %d want %d", i, s, it.s)
			}
		}
	}
	if r.short || r.long {
		t.Fatal("reader flagged a valid stream")
	}
	r.read(9)
	if !r.short {
		t.Error("reading past the end not flagged")
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCodecErrorAtTheLimits encodes fighters whose bodies are scattered
// anywhere inside the limits, often exactly on the bounds or at the speed
// limits, and checks that every valid state encodes, and that the errors
// stay within what the precision constants promise at the edge: twice the
// plain error, three times for linear velocities.
func TestCodecErrorAtTheLimits(t *testing.T) {
	for _, lim := range []bodyLimits{{}, {MaxSpeed: 1000, MaxAngularSpeed: 1000}} {
		w := newWorldLimits(t, lim)
		var err error
		addFighter(t, w, 3, 0)
		c := w.codec
		lim := (&w.limits)
		rng := rand.New(rand.NewSource(2))
		edge := func(lo, hi float64) float64 {
			switch rng.Intn(4) {
			case 0:
				return lo
			case 1:
				return hi
			}
			return lo + rng.Float64()*(hi-lo)
		}
		var s, d Snapshot
		var buf []byte
		worst := [3]float64{} // position, velocity, angular velocity, in units of the plain error
		for iter := 0; iter < 2000; iter++ {
			s.Reset(0, 0)
			os := s.next()
			os.ID = 3
			os.Fighter = FighterState{HP: 5, Action: ActionIdle, Facing: FacingLeft}
			for range FighterBodies {
				dir, speed := rng.Float64()*2*math.Pi, edge(0, lim.MaxSpeed)
				os.Bodies = append(os.Bodies, BodyState{
					Pos:    V(edge(lim.Bounds.Min.X, lim.Bounds.Max.X), edge(lim.Bounds.Min.Y, lim.Bounds.Max.Y)),
					Angle:  edge(-lim.MaxAngle, lim.MaxAngle),
					Vel:    V(speed*math.Cos(dir), speed*math.Sin(dir)),
					AngVel: edge(-lim.MaxAngularSpeed, lim.MaxAngularSpeed),
				})
			}
			if lim.validateState(3, os.Bodies, FighterBodies) != nil {
				continue // cos·speed rounded past the limit
			}
			buf, err = c.appendSnapshot(buf[:0], &s)
			if err != nil {
				t.Fatalf("iter %d: a valid state does not encode: %v", iter, err)
			}
			if err := c.decodeSnapshot(buf, &d); err != nil {
				t.Fatalf("iter %d: decode: %v", iter, err)
			}
			got := &d.Objects[0]
			k := float64(int(1) << got.VelShift)
			for i, a := range os.Bodies {
				g := got.Bodies[i]
				posErr, velErr, angVelErr := maxPosError, maxVelError, maxAngVelError
				if i > 0 { // a child
					velErr, angVelErr = velErr*k, angVelErr*k
					if got.VelShift == maxVelShift {
						posErr *= 2
					}
				}
				for j, r := range [3]float64{
					math.Max(math.Abs(a.Pos.X-g.Pos.X), math.Abs(a.Pos.Y-g.Pos.Y)) / posErr,
					math.Max(math.Abs(a.Vel.X-g.Vel.X), math.Abs(a.Vel.Y-g.Vel.Y)) / velErr,
					math.Abs(a.AngVel-g.AngVel) / angVelErr,
				} {
					worst[j] = math.Max(worst[j], r)
				}
				if e := math.Abs(angle.Diff(a.Angle, g.Angle)); e > maxChildAngleError+floatSlack {
					t.Fatalf("iter %d body %d: angle error %.5f°", iter, i, deg(e))
				}
			}
		}
		if worst[0] > 2+1e-6 || worst[1] > 3+1e-6 || worst[2] > 2+1e-6 {
			t.Errorf("limits %+v: worst errors %.3f× (position), %.3f× (velocity), %.3f× (angular velocity) the plain ones; want ≤ 2, 3, 2",
				*lim, worst[0], worst[1], worst[2])
		}
	}
}

// The configuration tag is what the package doc says it is, so another
// implementation can compute it.
func TestCodecConfigTag(t *testing.T) {
	lim := ArenaConfig{}.limits()
	c, err := newCodec(lim, &layoutTable{})
	if err != nil {
		t.Fatal(err)
	}
	h := uint32(2166136261)
	for _, v := range []float64{lim.Bounds.Min.X, lim.Bounds.Min.Y, lim.Bounds.Max.X, lim.Bounds.Max.Y,
		lim.MaxSpeed, lim.MaxAngularSpeed, lim.MaxAngle} {
		bits := math.Float64bits(v)
		for i := 0; i < 8; i++ {
			h ^= uint32(byte(bits >> (8 * i)))
			h *= 16777619
		}
	}
	want := byte(h) ^ byte(h>>8) ^ byte(h>>16) ^ byte(h>>24)
	buf, err := c.appendSnapshot(nil, &Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	if buf[1] != want {
		t.Errorf("tag %#x, want %#x", buf[1], want)
	}
	// Every limit is part of it.
	for _, change := range []func(*bodyLimits){
		func(l *bodyLimits) { l.Bounds.Min.X-- }, func(l *bodyLimits) { l.Bounds.Max.Y++ },
		func(l *bodyLimits) { l.MaxSpeed++ }, func(l *bodyLimits) { l.MaxAngularSpeed++ }, func(l *bodyLimits) { l.MaxAngle++ },
	} {
		l := lim
		change(&l)
		if c2, _ := newCodec(l, &layoutTable{}); c2.tag == c.tag {
			t.Errorf("limits %+v give the same tag as %+v", l, lim)
		}
	}
}

// objectBits returns the encoded length of an object's bodies and its orders
// header (the parts that depend on quantization), body by body: what
// chooseOrders adds up by class.
func objectBits(l *Layout, q []quantBody, ks orders) int {
	n := velShiftBits + 1 + kRootBits + kVelBits + kAngBits + kPosBits
	for i := range q {
		b := &q[i]
		if l.Bodies[i].Parent < 0 {
			n += rootAngleBits + egLen(b.vx, int(ks.root)) + egLen(b.vy, int(ks.root)) + egLen(b.w, int(ks.root))
			continue
		}
		n += childAngleBits + egLen(b.w, int(ks.ang)) + egLen(b.e[0], int(ks.pos)) + egLen(b.e[1], int(ks.pos)) +
			egLen(b.e[2], int(ks.vel)) + egLen(b.e[3], int(ks.vel))
	}
	return n
}

// chooseOrders returns the length objectBits counts for the orders it picks,
// and no other orders are shorter.
func TestChooseOrdersCountsTheBits(t *testing.T) {
	w := newWorld(t)
	f := addFighter(t, w, 1, 0)
	l := f.Object().Layout()
	rng := rand.New(rand.NewSource(5))
	for range 200 {
		q := make([]quantBody, len(l.Bodies))
		for i := range q {
			b := &q[i]
			r := func() int64 { return rng.Int63n(1<<rng.Intn(12)) - rng.Int63n(1<<rng.Intn(12)) }
			b.vx, b.vy, b.w = r(), r(), r()
			b.rx, b.ry = r(), r()
		}
		setSiblingCoding(l, q, rng.Intn(2) == 1)
		ks, n := chooseOrders(l, q)
		if want := objectBits(l, q, ks); n != want {
			t.Fatalf("chooseOrders counts %d bits, objectBits %d", n, want)
		}
		for k := range uint(1 << kRootBits) {
			alt := ks
			alt.root = k
			if objectBits(l, q, alt) < n {
				t.Fatalf("root order %d is shorter than the chosen %d", k, ks.root)
			}
		}
	}
}
