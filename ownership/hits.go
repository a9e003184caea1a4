package ownership

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/physics"
)

// Hit confirmation: see the package documentation ("Hits both players
// agree on").

const (
	// wireVersion follows KindState in every packet (format version 3).
	// Read as a uvarint, as a version-2 peer reads its claim count, it
	// is above maxClaims, so a version-2 peer rejects a version-3 packet
	// as malformed instead of misreading it, and the other way round.
	wireVersion byte = 0xC3

	// maxReports is the most hit reports one packet may carry.
	maxReports = 8

	// reportRepeat is how long the attacker's peer repeats a hit report
	// in its packets (every packet, so a report survives the loss of up
	// to 14 packets in a row).
	reportRepeat = 250 * time.Millisecond

	// maxReportImpulse is the largest impulse a report may carry, in N·s:
	// far above any strike (a kick's strongest is about 30 N·s); the
	// damage itself is capped by the move table (Tuning.MaxHitDamage).
	maxReportImpulse = 1000

	// maxView is the largest view age a report may carry: older views are
	// sent as this (they are stale anyway).
	maxView = 10 * time.Second

	// maxCopyErr is the largest copy error a report may carry, in m:
	// larger ones are sent as this (they are stale anyway).
	maxCopyErr = 100

	// maxReportCoord is the largest |x| or |y| of a reported limb, in mm.
	maxReportCoord = 1_000_000

	// limbMatch is how far (m) a report's limb may be from the attacker's
	// state of the same game time when this peer has that state: the two
	// are the same numbers, quantized differently (1 mm and the codec's
	// child residuals).
	limbMatch = 0.02
)

var inf = math.Inf(1)

// hitReport is one hit an attacker's world saw, as its peer reports it.
type hitReport struct {
	attacker, victim physics.ObjectID
	seq              uint8
	strike, part     physics.BodyPart
	g                clocksync.GameTime
	view             time.Duration // age of the newest state of the victim the attacker's peer had
	copyErr          float64       // how far its copy of the struck body was from that state's, m
	impulse          float64
	limb             physics.Pose
}

// strikeCodes are the striking limbs a report may name, by code 1..4.
var strikeCodes = [...]physics.BodyPart{physics.PartUnknown, physics.PartLowerArmL, physics.PartLowerArmR, physics.PartLowerLegL, physics.PartLowerLegR}

func strikeCode(p physics.BodyPart) byte {
	for i, s := range strikeCodes {
		if s == p && i > 0 {
			return byte(i)
		}
	}
	return 0
}

// appendReport appends h, reported in a packet of game time now.
func appendReport(dst []byte, h *hitReport, now clocksync.GameTime) []byte {
	dst = binary.AppendUvarint(dst, uint64(h.attacker))
	dst = binary.AppendUvarint(dst, uint64(h.victim))
	dst = append(dst, h.seq&3|strikeCode(h.strike)<<2, byte(h.part))
	dst = binary.AppendUvarint(dst, uint64(max(0, now-h.g)))
	dst = binary.AppendUvarint(dst, uint64(min(max(0, h.view), maxView)/time.Microsecond))
	dst = binary.AppendUvarint(dst, uint64(math.Round(min(max(0, h.copyErr), maxCopyErr)*1000)))
	dst = binary.AppendUvarint(dst, uint64(math.Round(min(h.impulse, maxReportImpulse)*1000)))
	dst = binary.AppendVarint(dst, int64(math.Round(clampCoord(h.limb.Pos.X)*1000)))
	dst = binary.AppendVarint(dst, int64(math.Round(clampCoord(h.limb.Pos.Y)*1000)))
	a := math.Mod(h.limb.Angle, 2*math.Pi)
	if a < 0 {
		a += 2 * math.Pi
	}
	dst = binary.AppendUvarint(dst, uint64(math.Round(a/(2*math.Pi)*65536))%65536)
	return dst
}

func clampCoord(v float64) float64 {
	return max(-maxReportCoord/1000.0, min(v, maxReportCoord/1000.0))
}

// parseReports parses the report list at p[off:] of a packet, into dst.
func parseReports(p []byte, off int, dst *[maxReports]hitReport) (int, []hitReport, error) {
	bad := func(field string, v uint64, why string) error {
		return &PacketError{Offset: off, Field: field, Value: v, Err: fmt.Errorf("%w: %s", ErrMalformed, why)}
	}
	uv := func(field string, max uint64) (uint64, error) {
		v, n := binary.Uvarint(p[off:])
		if n <= 0 {
			return 0, bad(field, 0, "truncated or overlong varint")
		}
		if v > max {
			return 0, bad(field, v, fmt.Sprintf("out of range (max %d)", max))
		}
		off += n
		return v, nil
	}
	sv := func(field string) (int64, error) {
		v, n := binary.Varint(p[off:])
		if n <= 0 {
			return 0, bad(field, 0, "truncated or overlong varint")
		}
		if v < -maxReportCoord || v > maxReportCoord {
			return 0, bad(field, uint64(v), fmt.Sprintf("out of range (±%d mm)", maxReportCoord))
		}
		off += n
		return v, nil
	}
	k, err := uv("hits", maxReports)
	if err != nil {
		return off, nil, err
	}
	for i := range int(k) {
		h := &dst[i]
		var v uint64
		if v, err = uv("hit attacker", math.MaxUint16); err != nil {
			return off, nil, err
		}
		h.attacker = physics.ObjectID(v)
		if v, err = uv("hit victim", math.MaxUint16); err != nil {
			return off, nil, err
		}
		h.victim = physics.ObjectID(v)
		if h.attacker == 0 || h.victim == 0 {
			return off, nil, bad("hit object id", 0, physics.ErrInvalidID.Error())
		}
		if off+2 > len(p) {
			return off, nil, bad("hit limbs", 0, "truncated")
		}
		b, part := p[off], physics.BodyPart(p[off+1])
		code := b >> 2
		if b>>5 != 0 || code == 0 || int(code) >= len(strikeCodes) {
			return off, nil, bad("hit strike", uint64(b), "undefined striking limb")
		}
		if part == physics.PartUnknown || part > physics.FighterBodies {
			return off, nil, bad("hit part", uint64(part), "undefined body part")
		}
		h.seq, h.strike, h.part = b&3, strikeCodes[code], part
		off += 2
		if v, err = uv("hit age", uint64(reportRepeat/time.Microsecond)); err != nil {
			return off, nil, err
		}
		h.g = clocksync.GameTime(-int64(v)) // made absolute by the caller
		if v, err = uv("hit view", uint64(maxView/time.Microsecond)); err != nil {
			return off, nil, err
		}
		h.view = time.Duration(v) * time.Microsecond
		if v, err = uv("hit copy error", maxCopyErr*1000); err != nil {
			return off, nil, err
		}
		h.copyErr = float64(v) / 1000
		if v, err = uv("hit impulse", maxReportImpulse*1000); err != nil {
			return off, nil, err
		}
		h.impulse = float64(v) / 1000
		x, err := sv("hit limb x")
		if err != nil {
			return off, nil, err
		}
		y, err := sv("hit limb y")
		if err != nil {
			return off, nil, err
		}
		if v, err = uv("hit limb angle", 65535); err != nil {
			return off, nil, err
		}
		h.limb = physics.Pose{Pos: physics.V(float64(x)/1000, float64(y)/1000), Angle: float64(v) / 65536 * 2 * math.Pi}
	}
	return off, dst[:k], nil
}

// seenReport identifies a report already judged, so its repeats are
// skipped.
type seenReport struct {
	attacker physics.ObjectID
	seq      uint8
	g        clocksync.GameTime
}

// seenWindow is how many judged reports are remembered: more than a
// report's repeats can span (reportRepeat holds at most 2 attacks of one
// fighter).
const seenWindow = 16

// HitStats counts the hits on this peer's fighters, by how they were
// judged, and the hits this peer reported.
type HitStats struct {
	// Confirmed counts the rival's hit reports confirmed against this
	// peer's history (lag-compensated), whose damage was applied.
	Confirmed uint64
	// Detected counts hits this peer's world detected itself (the rival's
	// copy struck this peer's fighter), whose damage was applied.
	Detected uint64
	// Duplicate counts reports and detected hits of an attack that had
	// already dealt its damage: each attack deals damage at most once.
	Duplicate uint64
	// Repeats counts repeated copies of reports already judged (each
	// report rides in every packet for 250 ms).
	Repeats uint64
	// Stale counts reports of hits on a copy whose newest state was older
	// than the largest accepted delay (Config.MaxDelay) when the attacker
	// struck it, or farther than maxCopyError from that state: its screen
	// showed a guess, not this peer's fighter. They are neither confirmed
	// nor refused (hits this world detects still count).
	Stale uint64
	// Reported counts the hits this peer's fighters landed in its world
	// and reported to the rival.
	Reported uint64
	// MaxMiss is the largest distance (m) between a confirmed report's
	// striking limb and the victim's body in this peer's history, less the
	// report's copy error: how close honest play comes to hitTolerance.
	MaxMiss float64
}

// report queues a hit this peer's fighter landed on the rival's, to be
// repeated in every packet for reportRepeat.
func (r *Replicator) report(h *physics.HitEvent) {
	a := r.lookup(h.Attacker)
	if a == nil || h.Strike == physics.PartUnknown {
		return
	}
	if r.nout == len(r.outHits) {
		copy(r.outHits[:], r.outHits[1:])
		r.nout--
	}
	view, copyErr := time.Duration(maxView), float64(maxCopyErr)
	if v := r.lookup(h.Victim); v != nil && v.corr.HasTarget() && h.Part != physics.PartUnknown && h.Part.Index() < v.obj.NumBodies() {
		// How far its copy of the struck body was from the newest state
		// of it: any point of it, so the turn counts at its reach.
		i := h.Part.Index()
		st, at := v.corr.Target(i)
		p := v.obj.Pose(i)
		turn := math.Abs(math.Remainder(p.Angle-st.Angle, 2*math.Pi))
		view = min(maxView, max(0, r.now.Sub(at)))
		copyErr = min(maxCopyErr, p.Pos.Sub(st.Pos).Len()+turn*v.size)
	}
	r.outHits[r.nout] = hitReport{attacker: h.Attacker, victim: h.Victim, seq: h.AttackSeq, strike: h.Strike,
		part: h.Part, g: r.now, view: view, copyErr: copyErr, impulse: h.Impulse, limb: a.obj.Pose(h.Strike.Index())}
	r.nout++
	r.stats.Hits.Reported++
}

// appendHits appends the hit list of a packet of game time now: every
// report younger than reportRepeat.
func (r *Replicator) appendHits(dst []byte, now clocksync.GameTime) []byte {
	n := 0
	for i := range r.nout {
		if age := now - r.outHits[i].g; age >= 0 && age <= us(reportRepeat) {
			r.outHits[n] = r.outHits[i]
			n++
		}
	}
	r.nout = n
	dst = append(dst, byte(n)) // a uvarint: n ≤ maxReports < 128
	for i := range n {
		dst = appendReport(dst, &r.outHits[i], now)
	}
	return dst
}

// seenBefore reports whether h was judged already (a repeat), and
// remembers it if not.
func (r *Replicator) seenBefore(h *hitReport) bool {
	for i := range min(r.nseen, seenWindow) {
		s := &r.seen[i]
		if s.attacker == h.attacker && s.seq == h.seq && s.g == h.g {
			return true
		}
	}
	r.seen[r.nseen%seenWindow] = seenReport{attacker: h.attacker, seq: h.seq, g: h.g}
	r.nseen++
	return false
}

// newTick forgets the last tick's damage once a new tick begins (the first
// HandlePacket or BeforeStep after an AppendPacket).
func (r *Replicator) newTick() {
	if r.sent {
		r.damaged, r.sent = r.damaged[:0], false
	}
}

// Damaged returns the hits on this peer's fighters whose damage was applied
// during the current tick (or, read after AppendPacket, the last one):
// confirmed reports of the rival's and hits this peer's world detected,
// each attack's at most once. Part, Impulse and Blocked are the hit's;
// AttackSeq and Attacker name the attack. The slice is reused by the next
// tick; it holds at most 8 hits.
func (r *Replicator) Damaged() []physics.HitEvent { return r.damaged }
