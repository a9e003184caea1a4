package game

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
)

// The round protocol travels as ragsync game messages (Match.SendMessage):
// unreliable, possibly lost, duplicated or reordered. Each message carries
// the sender's whole view of the current round, so any one of them that
// arrives is enough, and the sender repeats it until the peer's own
// messages acknowledge what it carries.
//
// Wire format (version 1), all integers Go varints (encoding/binary):
//
//	byte     MsgKind ('G', 0x47; not ownership.KindState nor clocksync.Magic)
//	byte     MsgVersion (1)
//	uvarint  round: the sender's current round, 1, 2, ... (0: none yet)
//	varint   start: game time (µs) at which the round's fight begins; the
//	         offerer (peer 1) decides it, the answerer echoes it
//	uvarint  length of the round in ms (the offerer's -round)
//	byte     flags: 1 report follows, 2 the sender wants a rematch after
//	         this round, 4 ack-round (the sender adopted this round and
//	         start), 8 ack-report (the sender holds the receiver's report
//	         for this round), 16 ack-rematch (the sender saw the receiver's
//	         rematch wish); other bits must be zero
//	report, if flag 1: the sender's own fighter during the round, as its
//	owner (the victim's owner decides damage) recorded it:
//	  byte     1 if the fighter was knocked out (at cut), else 0
//	  varint   cut: ms since start at which the history ends (the KO, the
//	           end of the round, or the rival's cut)
//	  uvarint  HP at the round's start (≤ MaxReportHP)
//	  uvarint  n, number of HP changes (≤ MaxReportChanges)
//	  n ×      varint ms since the previous change (the first: since
//	           start; never negative after the first), uvarint new HP
//
// Nothing may follow. A malformed message is refused with a *MessageError
// wrapping ErrBadMessage and never changes the round.
const (
	MsgKind    byte = 'G'
	MsgVersion byte = 1

	// MaxReportChanges bounds the HP changes of one report (HP only goes
	// down during a round, so a fighter of MaxHP 100 has at most 100).
	MaxReportChanges = 200
	// MaxReportHP bounds the HP values of a report (the most a physics
	// snapshot carries, physics.FighterConfig.MaxHP).
	MaxReportHP = 1000
	// MaxRoundLength bounds the round length a message may announce.
	MaxRoundLength = time.Hour
	// MinRoundLength is the shortest round -round accepts; the replicator
	// holds a rival's reset on time to it (see Player).
	MinRoundLength = 5 * time.Second
)

const (
	flagReport     = 1
	flagRematch    = 2
	flagAckRound   = 4
	flagAckReport  = 8
	flagAckRematch = 16
	flagsKnown     = flagReport | flagRematch | flagAckRound | flagAckReport | flagAckRematch
)

// ErrBadMessage is wrapped by every decoding error of a round message.
var ErrBadMessage = errors.New("bad round message")

// MessageError is a round message that could not be decoded: which field,
// at which byte offset, with which value.
type MessageError struct {
	Offset int
	Field  string
	Value  int64
	Reason string
}

func (e *MessageError) Error() string {
	return fmt.Sprintf("%v: %s at byte %d (value %d): %s", ErrBadMessage, e.Field, e.Offset, e.Value, e.Reason)
}

func (e *MessageError) Unwrap() error { return ErrBadMessage }

// HPChange is one change of a fighter's HP, At ms after the round's start.
type HPChange struct {
	At int64
	HP int
}

// Report is a fighter's HP history over a round, recorded by its owner.
type Report struct {
	// KO: the fighter was knocked out at Cut.
	KO bool
	// Cut is where the history ends, in ms since the round's start.
	Cut int64
	// HP0 is the HP at the round's start.
	HP0 int
	// Changes are the HP changes in time order, all at or before Cut.
	Changes []HPChange
}

// HPAt returns the HP the history gives at t (ms since the round's start).
func (r *Report) HPAt(t int64) int {
	hp := r.HP0
	for _, c := range r.Changes {
		if c.At > t {
			break
		}
		hp = c.HP
	}
	return hp
}

// Validate checks that r is a consistent history.
func (r *Report) Validate() error {
	bad := func(field string, v int64, why string) error {
		return &MessageError{Field: field, Value: v, Reason: why}
	}
	if r.HP0 < 0 || r.HP0 > MaxReportHP {
		return bad("hp0", int64(r.HP0), "out of range")
	}
	if len(r.Changes) > MaxReportChanges {
		return bad("changes", int64(len(r.Changes)), "too many")
	}
	if r.Cut < -MaxRoundLength.Milliseconds() || r.Cut > 2*MaxRoundLength.Milliseconds() {
		return bad("cut", r.Cut, "out of range")
	}
	prev := int64(-1 << 62)
	for _, c := range r.Changes {
		if c.HP < 0 || c.HP > MaxReportHP {
			return bad("hp", int64(c.HP), "out of range")
		}
		if c.At < prev || c.At > r.Cut {
			return bad("at", c.At, "not in time order or after the cut")
		}
		prev = c.At
	}
	if r.KO && r.HPAt(r.Cut) != 0 {
		return bad("ko", int64(r.HPAt(r.Cut)), "knocked out with HP left")
	}
	return nil
}

// Message is one round message (see the wire format above).
type Message struct {
	Round  uint32
	Start  clocksync.GameTime
	Length time.Duration // whole ms

	Report     *Report // nil: none
	Rematch    bool
	AckRound   bool
	AckReport  bool
	AckRematch bool
}

// AppendMessage appends the encoding of m to dst. It allocates only if dst
// lacks room.
func AppendMessage(dst []byte, m *Message) []byte {
	dst = append(dst, MsgKind, MsgVersion)
	dst = binary.AppendUvarint(dst, uint64(m.Round))
	dst = binary.AppendVarint(dst, int64(m.Start))
	dst = binary.AppendUvarint(dst, uint64(m.Length.Milliseconds()))
	var f byte
	for _, b := range [...]struct {
		on  bool
		bit byte
	}{{m.Report != nil, flagReport}, {m.Rematch, flagRematch}, {m.AckRound, flagAckRound},
		{m.AckReport, flagAckReport}, {m.AckRematch, flagAckRematch}} {
		if b.on {
			f |= b.bit
		}
	}
	dst = append(dst, f)
	if r := m.Report; r != nil {
		ko := byte(0)
		if r.KO {
			ko = 1
		}
		dst = append(dst, ko)
		dst = binary.AppendVarint(dst, r.Cut)
		dst = binary.AppendUvarint(dst, uint64(r.HP0))
		dst = binary.AppendUvarint(dst, uint64(len(r.Changes)))
		prev := int64(0)
		for _, c := range r.Changes {
			dst = binary.AppendVarint(dst, c.At-prev)
			dst = binary.AppendUvarint(dst, uint64(c.HP))
			prev = c.At
		}
	}
	return dst
}

// DecodeMessage decodes p into m, reusing m.Report's slice if m.Report is
// set. It checks everything and never panics.
func DecodeMessage(p []byte, m *Message) error {
	off := 0
	fail := func(field string, v int64, why string) error {
		return &MessageError{Offset: off, Field: field, Value: v, Reason: why}
	}
	if len(p) < 2 {
		return fail("header", int64(len(p)), "too short")
	}
	if p[0] != MsgKind {
		return fail("kind", int64(p[0]), "not a round message")
	}
	if p[1] != MsgVersion {
		return fail("version", int64(p[1]), "unsupported version")
	}
	off = 2
	uv := func(field string, max uint64) (uint64, error) {
		v, n := binary.Uvarint(p[off:])
		if n <= 0 {
			return 0, fail(field, 0, "truncated or overlong varint")
		}
		if v > max {
			return 0, fail(field, int64(min(v, 1<<62)), "too large")
		}
		off += n
		return v, nil
	}
	sv := func(field string) (int64, error) {
		v, n := binary.Varint(p[off:])
		if n <= 0 {
			return 0, fail(field, 0, "truncated or overlong varint")
		}
		off += n
		return v, nil
	}
	round, err := uv("round", 1<<32-1)
	if err != nil {
		return err
	}
	start, err := sv("start")
	if err != nil {
		return err
	}
	length, err := uv("length", uint64(MaxRoundLength.Milliseconds()))
	if err != nil {
		return err
	}
	if off >= len(p) {
		return fail("flags", 0, "truncated")
	}
	f := p[off]
	if f&^flagsKnown != 0 {
		return fail("flags", int64(f), "unknown bits")
	}
	off++
	rep := m.Report
	*m = Message{Round: uint32(round), Start: clocksync.GameTime(start), Length: time.Duration(length) * time.Millisecond,
		Rematch: f&flagRematch != 0, AckRound: f&flagAckRound != 0, AckReport: f&flagAckReport != 0, AckRematch: f&flagAckRematch != 0}
	if f&flagReport != 0 {
		if rep == nil {
			rep = &Report{}
		}
		if off >= len(p) {
			return fail("ko", 0, "truncated")
		}
		if p[off] > 1 {
			return fail("ko", int64(p[off]), "not 0 or 1")
		}
		rep.KO = p[off] == 1
		off++
		if rep.Cut, err = sv("cut"); err != nil {
			return err
		}
		hp0, err := uv("hp0", MaxReportHP)
		if err != nil {
			return err
		}
		rep.HP0 = int(hp0)
		n, err := uv("changes", MaxReportChanges)
		if err != nil {
			return err
		}
		rep.Changes = rep.Changes[:0]
		at := int64(0)
		for i := range int(n) {
			d, err := sv("at")
			if err != nil {
				return err
			}
			if i > 0 && d < 0 {
				return fail("at", d, "changes not in time order")
			}
			if d > 2*MaxRoundLength.Milliseconds() || d < -2*MaxRoundLength.Milliseconds() {
				return fail("at", d, "out of range")
			}
			at += d
			hp, err := uv("hp", MaxReportHP)
			if err != nil {
				return err
			}
			rep.Changes = append(rep.Changes, HPChange{At: at, HP: int(hp)})
		}
		if err := rep.Validate(); err != nil {
			var me *MessageError
			if errors.As(err, &me) {
				me.Offset = off
			}
			return err
		}
		m.Report = rep
	}
	if off != len(p) {
		return fail("trailing", int64(len(p)-off), "bytes after the message")
	}
	return nil
}

// EndReason says how a round ended.
type EndReason uint8

const (
	EndUnknown EndReason = iota
	EndKO                // a fighter was knocked out
	EndTime              // the round timer ran out
)

func (r EndReason) String() string {
	switch r {
	case EndKO:
		return "KO"
	case EndTime:
		return "time"
	}
	return "unknown"
}

// Result is the outcome of a round, the same on both peers: it is computed
// from the two owners' reports alone.
type Result struct {
	Round uint32
	// Winner is the peer whose fighter won; 0 for a draw.
	Winner ownership.PeerID
	By     EndReason
	// End is when the round ended, in ms since its start: the first KO, or
	// the round's length.
	End int64
	// HP of peer 1's and peer 2's fighters at End.
	HP [2]int
}

// String describes r for logs and the screen.
func (r Result) String() string {
	switch {
	case r.Winner == 0 && r.By == EndKO:
		return fmt.Sprintf("round %d: double KO, draw (HP %d–%d)", r.Round, r.HP[0], r.HP[1])
	case r.Winner == 0:
		return fmt.Sprintf("round %d: draw on time (HP %d–%d)", r.Round, r.HP[0], r.HP[1])
	}
	return fmt.Sprintf("round %d: player %d wins by %v (HP %d–%d)", r.Round, r.Winner, r.By, r.HP[0], r.HP[1])
}

// Decide computes a round's result from both fighters' reports (r1: peer
// 1's fighter, r2: peer 2's) and the round's length. The round ends at the
// first KO or at length, whichever comes first; a fighter knocked out then
// loses (both: a draw); otherwise the higher HP wins, equal HP is a draw.
func Decide(round uint32, length time.Duration, r1, r2 *Report) Result {
	end := length.Milliseconds()
	for _, r := range [...]*Report{r1, r2} {
		if r.KO && r.Cut < end {
			end = r.Cut
		}
	}
	res := Result{Round: round, End: end, By: EndTime, HP: [2]int{r1.HPAt(end), r2.HPAt(end)}}
	ko1 := r1.KO && r1.Cut == end
	ko2 := r2.KO && r2.Cut == end
	switch {
	case ko1 && ko2:
		res.By = EndKO
	case ko1:
		res.By, res.Winner = EndKO, 2
	case ko2:
		res.By, res.Winner = EndKO, 1
	case res.HP[0] > res.HP[1]:
		res.Winner = 1
	case res.HP[1] > res.HP[0]:
		res.Winner = 2
	}
	return res
}
