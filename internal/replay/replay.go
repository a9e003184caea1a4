// Package replay is ragsync's replay file: a recorded match, as the
// spectator feed frames of both players (package feed, written by
// ragsync.Match.AppendFeedFrame) stamped with the game time each was
// recorded at. A Writer appends frames to a file; a Reader validates a
// whole file (a replay file is untrusted input) and iterates its frames,
// or seeks to a game time. Playing a replay is feeding its frames to a
// ragsync.Spectator with the stamps as the spectator's clock.
//
// # File format (version 1)
//
// All integers are encoding/binary varints (uvarint: LEB128; varint:
// zigzag, then LEB128).
//
//	4 bytes  magic "RSRP"
//	byte     version (1)
//	uvarint  header length H (≤ 4096), then H bytes of header:
//	  uvarint  side 1's fighter id, uvarint side 2's (1..65535, distinct)
//	  uvarint  number of props (≤ 64), then each prop's id (1..65535,
//	           strictly increasing, neither fighter)
//	  varint   start: the game time of the recording's start, µs
//	           (|start| ≤ 2⁶² µs)
//	  byte     recorder: 0 a spectator, 1 or 2 the player of that side
//	  uvarint  length of the game's own parameters (≤ 2048), then those
//	           bytes (how the game builds its world, its rules: opaque
//	           here)
//	then records, to the end of the file:
//	  uvarint  stamp − the previous record's stamp (the first: − start),
//	           µs (≤ 60 s): stamps never decrease
//	  uvarint  frame length L (3..feed.MaxSize)
//	  L bytes  one feed frame (its first byte is feed.Kind)
//
// At 60 frames a second from each player, a record is about 70 bytes and
// a minute of match about half a megabyte.
//
// The Reader checks the magic, the version, every header field and every
// record's framing (lengths, stamps, the frame's kind and version byte),
// and Verify decodes every frame against a world (package feed's full
// validation). A file that ends inside a record (its writer was killed)
// is read up to its last whole record: Reader.Truncated says how many bytes
// were left over. Every error is an *Error wrapping ErrBadFile (or
// feed.ErrMalformed for a frame Verify refuses).
package replay

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/internal/feed"
	"github.com/ragsync/ragsync/physics"
)

// Format constants (see the package documentation).
const (
	Magic   = "RSRP"
	Version = 1
	// MaxHeader is the largest header, MaxGame the largest game
	// parameters, MaxProps the most props.
	MaxHeader = 4096
	MaxGame   = 2048
	MaxProps  = 64
	// MaxGap is the largest step between two records' stamps.
	MaxGap = time.Minute
	// MaxFile is the largest file a Reader accepts (about 4 hours of
	// match).
	MaxFile = 256 << 20
	maxTime = 1 << 62
)

// ErrBadFile is wrapped by every error about a replay file's container.
var ErrBadFile = errors.New("bad replay file")

var (
	errMagic     = errors.New("not a replay file (bad magic)")
	errVersion   = errors.New("unsupported version")
	errRange     = errors.New("out of range")
	errTruncated = errors.New("truncated")
	errOrder     = errors.New("stamps decrease")
	errTrailing  = errors.New("trailing header bytes")
)

// Error reports a bad replay file or a frame a Writer refuses: the byte
// Offset in the file (of the record, for Verify), the record's index
// (Record, -1 for the header), the Field and its offending Value, and the
// reason (Err).
type Error struct {
	Offset int64
	Record int
	Field  string
	Value  int64
	Err    error
}

func (e *Error) Error() string {
	s := "replay: "
	if e.Record >= 0 {
		s += "record " + strconv.Itoa(e.Record) + " "
	}
	s += "at byte " + strconv.FormatInt(e.Offset, 10)
	if e.Field != "" {
		s += ": " + e.Field + " = " + strconv.FormatInt(e.Value, 10)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the reason and ErrBadFile (a frame's *feed.Error carries
// feed.ErrMalformed instead).
func (e *Error) Unwrap() []error {
	var fe *feed.Error
	if errors.As(e.Err, &fe) {
		return []error{e.Err}
	}
	return []error{e.Err, ErrBadFile}
}

// Header is a replay's match parameters.
type Header struct {
	// Fighters are the fighters by side (ragsync.MatchConfig.Fighters).
	Fighters [2]physics.ObjectID
	// Props are the shared objects (ragsync.MatchConfig.Props).
	Props []physics.ObjectID
	// Start is the game time the recording starts at: no stamp is before.
	Start clocksync.GameTime
	// Recorder is who recorded: 0 a spectator, 1 or 2 that side's player.
	Recorder uint8
	// Game is the game's own parameters (how it builds its world), opaque
	// here; at most MaxGame bytes.
	Game []byte
}

// appendHeader appends h's encoding (the length-prefixed header).
func appendHeader(dst []byte, h *Header) ([]byte, error) {
	fail := func(field string, v int64, err error) ([]byte, error) {
		return dst, &Error{Record: -1, Field: field, Value: v, Err: err}
	}
	f := h.Fighters
	if f[0] == 0 || f[1] == 0 || f[0] == f[1] {
		return fail("fighters", int64(f[1]), errRange)
	}
	if len(h.Props) > MaxProps {
		return fail("props", int64(len(h.Props)), errRange)
	}
	var prev physics.ObjectID
	for _, id := range h.Props {
		if id <= prev || id == f[0] || id == f[1] {
			return fail("prop", int64(id), errRange)
		}
		prev = id
	}
	if h.Start < -maxTime || h.Start > maxTime {
		return fail("start", int64(h.Start), errRange)
	}
	if h.Recorder > 2 {
		return fail("recorder", int64(h.Recorder), errRange)
	}
	if len(h.Game) > MaxGame {
		return fail("game", int64(len(h.Game)), errRange)
	}
	var b []byte
	b = binary.AppendUvarint(b, uint64(f[0]))
	b = binary.AppendUvarint(b, uint64(f[1]))
	b = binary.AppendUvarint(b, uint64(len(h.Props)))
	for _, id := range h.Props {
		b = binary.AppendUvarint(b, uint64(id))
	}
	b = binary.AppendVarint(b, int64(h.Start))
	b = append(b, h.Recorder)
	b = binary.AppendUvarint(b, uint64(len(h.Game)))
	b = append(b, h.Game...)
	dst = append(dst, Magic...)
	dst = append(dst, Version)
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...), nil
}

// Writer appends a match's frames to a replay file.
type Writer struct {
	w     *bufio.Writer
	last  clocksync.GameTime
	n     int
	buf   []byte
	err   error
	start clocksync.GameTime
}

// NewWriter writes h to w and returns a Writer of records after it. It
// returns an *Error for a header it cannot write (see Header's limits).
// Writes are buffered: call Flush.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	b, err := appendHeader(nil, &h)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.Write(b); err != nil {
		return nil, err
	}
	return &Writer{w: bw, last: h.Start, start: h.Start, buf: make([]byte, 0, 32)}, nil
}

// Append writes one frame recorded at game time stamp (not before the
// previous one's, nor more than MaxGap after it). The frame is checked
// for its size and its kind and version bytes only (Reader.Verify checks
// the rest). It returns an *Error for a frame or stamp it refuses (and
// writes nothing), or the underlying writer's error, which it then keeps
// returning. It allocates nothing.
func (w *Writer) Append(stamp clocksync.GameTime, frame []byte) error {
	if w.err != nil {
		return w.err
	}
	fail := func(field string, v int64, err error) error {
		return &Error{Record: w.n, Field: field, Value: v, Err: err}
	}
	if stamp < w.last {
		return fail("stamp", int64(stamp), errOrder)
	}
	if stamp-w.last > clocksync.GameTimeOf(MaxGap) {
		return fail("stamp", int64(stamp), errRange)
	}
	if err := checkFrameBytes(frame); err != nil {
		return fail("frame", int64(len(frame)), err)
	}
	w.buf = binary.AppendUvarint(w.buf[:0], uint64(stamp-w.last))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(frame)))
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = err
		return err
	}
	if _, err := w.w.Write(frame); err != nil {
		w.err = err
		return err
	}
	w.last = stamp
	w.n++
	return nil
}

// Flush writes the buffered records to the underlying writer.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.w.Flush(); err != nil {
		w.err = err
	}
	return w.err
}

// checkFrameBytes is the Writer's and Reader's check of a frame's framing.
func checkFrameBytes(frame []byte) error {
	switch {
	case len(frame) < 3 || len(frame) > feed.MaxSize:
		return errRange
	case frame[0] != feed.Kind:
		return errors.New("not a feed frame (kind byte)")
	case frame[1] != feed.Version:
		return errVersion
	}
	return nil
}

// record is one record's place in the file.
type record struct {
	stamp clocksync.GameTime
	off   uint32 // of the frame
	n     uint16 // frame length
}

// Reader reads a replay file held in memory.
type Reader struct {
	h         Header
	data      []byte
	recs      []record
	next      int
	truncated int
}

// Read reads a whole replay file from r (at most MaxFile bytes) and
// validates it (see NewReader).
func Read(r io.Reader) (*Reader, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFile+1))
	if err != nil {
		return nil, err
	}
	return NewReader(data)
}

// NewReader validates data, a whole replay file, and returns a Reader of
// it (which keeps data). It returns an *Error wrapping ErrBadFile for a bad
// magic, version, header or record (see the package documentation); a
// file that ends inside its last record is not an error (Truncated).
func NewReader(data []byte) (*Reader, error) {
	fail := func(off int, rec int, field string, v int64, err error) (*Reader, error) {
		return nil, &Error{Offset: int64(off), Record: rec, Field: field, Value: v, Err: err}
	}
	if len(data) > MaxFile {
		return fail(MaxFile, -1, "size", int64(len(data)), errRange)
	}
	if len(data) < len(Magic)+1 || string(data[:len(Magic)]) != Magic {
		return fail(0, -1, "magic", 0, errMagic)
	}
	off := len(Magic)
	if data[off] != Version {
		return fail(off, -1, "version", int64(data[off]), errVersion)
	}
	off++
	hl, n := binary.Uvarint(data[off:])
	if n == 0 {
		return fail(off, -1, "header length", 0, errTruncated)
	}
	if n < 0 || hl > MaxHeader {
		return fail(off, -1, "header length", int64(min(hl, math.MaxInt64)), errRange)
	}
	off += n
	if uint64(len(data)-off) < hl {
		return fail(off, -1, "header", int64(hl), errTruncated)
	}
	r := &Reader{data: data}
	if err := parseHeader(data[off:off+int(hl)], off, &r.h); err != nil {
		return nil, err
	}
	off += int(hl)
	last := r.h.Start
	for off < len(data) {
		rec := len(r.recs)
		at := off
		d, n := binary.Uvarint(data[off:])
		if n == 0 {
			r.truncated = len(data) - at
			break
		}
		if n < 0 || d > uint64(MaxGap.Microseconds()) {
			return fail(off, rec, "stamp step", int64(min(d, math.MaxInt64)), errRange)
		}
		off += n
		l, n := binary.Uvarint(data[off:])
		if n == 0 {
			r.truncated = len(data) - at
			break
		}
		if n < 0 || l < 3 || l > feed.MaxSize {
			return fail(off, rec, "frame length", int64(min(l, math.MaxInt64)), errRange)
		}
		off += n
		if uint64(len(data)-off) < l {
			r.truncated = len(data) - at
			break
		}
		frame := data[off : off+int(l)]
		if err := checkFrameBytes(frame); err != nil {
			return fail(off, rec, "frame", int64(frame[0]), err)
		}
		if last += clocksync.GameTime(d); last > maxTime {
			return fail(at, rec, "stamp", int64(last), errRange)
		}
		r.recs = append(r.recs, record{stamp: last, off: uint32(off), n: uint16(l)})
		off += int(l)
	}
	return r, nil
}

// parseHeader parses the header b, found at byte base of the file.
func parseHeader(b []byte, base int, h *Header) error {
	off := 0
	fail := func(field string, v int64, err error) error {
		return &Error{Offset: int64(base + off), Record: -1, Field: field, Value: v, Err: err}
	}
	uv := func(field string, max uint64) (uint64, error) {
		v, n := binary.Uvarint(b[off:])
		if n == 0 {
			return 0, fail(field, 0, errTruncated)
		}
		if n < 0 || v > max {
			return 0, fail(field, int64(min(v, math.MaxInt64)), errRange)
		}
		off += n
		return v, nil
	}
	for k := range h.Fighters {
		id, err := uv("fighter", math.MaxUint16)
		if err != nil {
			return err
		}
		if id == 0 || (k == 1 && physics.ObjectID(id) == h.Fighters[0]) {
			return fail("fighter", int64(id), errRange)
		}
		h.Fighters[k] = physics.ObjectID(id)
	}
	np, err := uv("props", MaxProps)
	if err != nil {
		return err
	}
	h.Props = make([]physics.ObjectID, 0, np)
	var prev uint64
	for range np {
		id, err := uv("prop", math.MaxUint16)
		if err != nil {
			return err
		}
		if id <= prev || physics.ObjectID(id) == h.Fighters[0] || physics.ObjectID(id) == h.Fighters[1] {
			return fail("prop", int64(id), errRange)
		}
		prev = id
		h.Props = append(h.Props, physics.ObjectID(id))
	}
	start, n := binary.Varint(b[off:])
	if n == 0 {
		return fail("start", 0, errTruncated)
	}
	if n < 0 || start < -maxTime || start > maxTime {
		return fail("start", start, errRange)
	}
	h.Start = clocksync.GameTime(start)
	off += n
	if off >= len(b) {
		return fail("recorder", 0, errTruncated)
	}
	if b[off] > 2 {
		return fail("recorder", int64(b[off]), errRange)
	}
	h.Recorder = b[off]
	off++
	gl, err := uv("game length", MaxGame)
	if err != nil {
		return err
	}
	if uint64(len(b)-off) < gl {
		return fail("game", int64(gl), errTruncated)
	}
	h.Game = b[off : off+int(gl) : off+int(gl)]
	off += int(gl)
	if off != len(b) {
		return fail("header", int64(len(b)-off), errTrailing)
	}
	return nil
}

// Header returns the replay's match parameters (its Game bytes are the
// file's: do not change them).
func (r *Reader) Header() Header { return r.h }

// Len returns the number of frames.
func (r *Reader) Len() int { return len(r.recs) }

// Truncated returns how many bytes after the last whole record were left
// over (0 for a file whose writer finished).
func (r *Reader) Truncated() int { return r.truncated }

// End returns the stamp of the last frame (the header's Start if none).
func (r *Reader) End() clocksync.GameTime {
	if len(r.recs) == 0 {
		return r.h.Start
	}
	return r.recs[len(r.recs)-1].stamp
}

// Next returns the next frame and its stamp, and false after the last.
// The frame is the file's bytes: do not change it.
func (r *Reader) Next() (stamp clocksync.GameTime, frame []byte, ok bool) {
	if r.next >= len(r.recs) {
		return 0, nil, false
	}
	rec := r.recs[r.next]
	r.next++
	return rec.stamp, r.data[rec.off : int(rec.off)+int(rec.n)], true
}

// Seek moves to the first frame stamped at or after t (past the end if
// none); Next continues from there.
func (r *Reader) Seek(t clocksync.GameTime) {
	r.next = sort.Search(len(r.recs), func(i int) bool { return r.recs[i].stamp >= t })
}

// Verify decodes every frame with w, a world built like the recorded
// match's, and returns the first error: an *Error (with the record's index
// and offset) wrapping the frame's *feed.Error. It does not move the
// Reader.
func (r *Reader) Verify(w *physics.World) error {
	var f feed.Frame
	for i, rec := range r.recs {
		if err := feed.Decode(r.data[rec.off:int(rec.off)+int(rec.n)], w, &f); err != nil {
			return &Error{Offset: int64(rec.off), Record: i, Field: "frame", Err: err}
		}
	}
	return nil
}
