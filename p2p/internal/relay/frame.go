// Package relay frames p2p session messages over a reliable byte stream:
// the signaling server's TCP relay (signaling.DialRelay), the session's
// fallback transport.
//
// Wire format: each frame is a 2-byte big-endian payload length followed by
// the payload (0 to MaxFrameLen bytes). There is nothing else on the
// stream: no version byte, no type byte (the p2p layer puts its own message
// type in the payload).
//
//	+--------+--------+----------------------+
//	| len hi | len lo | payload (len bytes)  |
//	+--------+--------+----------------------+
//
// AppendFrame encodes; Reader decodes into caller buffers without
// allocating; Sender writes frames from a goroutine and, while the socket
// is busy, keeps only the newest unsent frame of each key (the p2p layer
// keys game messages by their first byte), so stale game states never
// queue up behind each other: the head-of-line pile-up that makes plain
// TCP poor for real-time state.
package relay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// HeaderLen is the size of a frame header; MaxFrameLen the largest payload.
const (
	HeaderLen   = 2
	MaxFrameLen = 1<<16 - 1
)

// ErrFrameTooLarge matches every *FrameSizeError with errors.Is.
var ErrFrameTooLarge = errors.New("relay: frame too large")

// FrameSizeError reports a frame larger than a limit. When encoding, Limit
// is MaxFrameLen. When reading, Skipped says whether the frame was
// discarded and the stream is still usable (the frame fit the reader's
// maximum but not the caller's buffer) or not (the frame exceeded the
// reader's maximum: the peer is misbehaving, close the connection).
type FrameSizeError struct {
	Size    int
	Limit   int
	Skipped bool
}

func (e *FrameSizeError) Error() string {
	if e.Skipped {
		return fmt.Sprintf("relay: frame of %d bytes does not fit the %d-byte buffer; skipped", e.Size, e.Limit)
	}
	return fmt.Sprintf("relay: frame of %d bytes exceeds the limit of %d", e.Size, e.Limit)
}

// Unwrap returns ErrFrameTooLarge.
func (e *FrameSizeError) Unwrap() error { return ErrFrameTooLarge }

// AppendFrame appends a frame carrying payload to dst. It does not allocate
// when dst has room for HeaderLen+len(payload) more bytes.
func AppendFrame(dst, payload []byte) ([]byte, error) {
	if len(payload) > MaxFrameLen {
		return dst, &FrameSizeError{Size: len(payload), Limit: MaxFrameLen}
	}
	n := len(payload)
	dst = append(dst, byte(n>>8), byte(n))
	return append(dst, payload...), nil
}

// Reader reads frames from a stream into caller buffers. It is not safe for
// concurrent use.
type Reader struct {
	br  *bufio.Reader
	max int
	hdr [HeaderLen]byte
}

// NewReader returns a Reader of frames from r that refuses frames larger
// than maxFrame bytes (0 or more than MaxFrameLen means MaxFrameLen). It
// buffers reads in 4 KiB.
func NewReader(r io.Reader, maxFrame int) *Reader {
	if maxFrame <= 0 || maxFrame > MaxFrameLen {
		maxFrame = MaxFrameLen
	}
	return &Reader{br: bufio.NewReaderSize(r, 4096), max: maxFrame}
}

// Reset makes the Reader read from r, dropping buffered data.
func (fr *Reader) Reset(r io.Reader) { fr.br.Reset(r) }

// Max returns the largest frame the Reader accepts.
func (fr *Reader) Max() int { return fr.max }

// ReadFrame reads the next frame's payload into buf and returns buf[:n].
// Errors: io.EOF at a frame boundary (clean end of stream);
// io.ErrUnexpectedEOF inside a frame; *FrameSizeError with Skipped=true if
// the frame is within Max but longer than len(buf) (the frame is discarded,
// reading may go on); *FrameSizeError with Skipped=false if the frame
// exceeds Max (the stream cannot be trusted: close it); or the stream's
// read error. It does not allocate.
func (fr *Reader) ReadFrame(buf []byte) ([]byte, error) {
	if _, err := io.ReadFull(fr.br, fr.hdr[:]); err != nil {
		return nil, err
	}
	n := int(fr.hdr[0])<<8 | int(fr.hdr[1])
	if n > fr.max {
		return nil, &FrameSizeError{Size: n, Limit: fr.max}
	}
	if n > len(buf) {
		if _, err := fr.br.Discard(n); err != nil {
			return nil, unexpected(err)
		}
		return nil, &FrameSizeError{Size: n, Limit: len(buf), Skipped: true}
	}
	if _, err := io.ReadFull(fr.br, buf[:n]); err != nil {
		return nil, unexpected(err)
	}
	return buf[:n], nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
