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

// hitTolerance is how far (m), beyond the attacker's reported copy error,
// the attacker's striking limb, as its attacker's states placed it, may be
// from the victim's body, as the victim's owner recorded it over the span
// the attacker saw, for the victim's owner to confirm the hit. See the
// package documentation for why 0.25 m.
const hitTolerance = 0.25

// maxCopyError is the largest copy error (m) a hit report is judged with:
// a report of a hit on a copy farther than this from the newest state the
// attacker had of it is stale (Stats.Hits.Stale): neither confirmed nor
// refused. With hitTolerance it bounds a report's slack at 0.75 m.
const maxCopyError = 0.5

// attackTolerance is the slack of the rule that an attack may not start
// before the previous one could have ended: two ticks (the rule counts the
// rival's ticks, see tickLead). Lost packets and ticks run in bursts need
// none: each state bounds its attack's start by the phase it shows, in
// ticks, and a lost one only widens the bounds.
const attackTolerance = 2 * physics.TickDuration

// propReach is how close (m) the claimer's fighter must have come to a prop,
// body to body, in this peer's world (now or within propReachWindow), for a
// claim on the prop to be accepted. See the package documentation.
const propReach = 1.0

// claimGap is the longest silence of the rival's stream after which its
// claims are not judged by reach for as long again: a claim made during a
// blackout, on the claimer's copy of a prop this peer's world moved on, may
// show neither this peer's history nor the claim's own packet (its fighter
// may have left the prop since) in reach.
const claimGap = 250 * time.Millisecond

// propReachWindow is how far back in this peer's history a prop claim is
// judged.
const propReachWindow = time.Second

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
