package relay

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrSenderClosed is returned by Send and SendControl after Close.
var ErrSenderClosed = errors.New("relay: sender closed")

// ErrControlQueueFull is returned by SendControl when the control queue is
// full (the peer is not reading).
var ErrControlQueueFull = errors.New("relay: control queue full")

// NumKeys is the number of latest-only keys: one per value of a message's
// first byte, and one more for messages that have none.
const NumKeys = 257

// SenderConfig configures NewSender. The zero value is ready to use.
type SenderConfig struct {
	// ControlQueue is the capacity of the FIFO control queue. Zero means 16.
	ControlQueue int
}

// SenderStats are a Sender's counters.
type SenderStats struct {
	Frames      uint64 // frames written
	Bytes       uint64 // bytes written, headers included
	Writes      uint64 // calls to the writer's Write
	Superseded  uint64 // latest-only frames replaced before being written
	ControlFull uint64 // SendControl calls refused with ErrControlQueueFull
	Dropped     uint64 // frames pending at Close, never written
}

// Sender writes frames to an io.Writer from its own goroutine. Frames come
// in two kinds:
//
//   - Latest-only frames (Send) have a key; a frame replaces an unsent
//     frame of the same key (counted in Superseded), so while the writer is
//     blocked only the newest frame of each key waits. The p2p layer keys
//     game messages by their first byte (their kind): a game state replaces
//     the unsent state before it, never a message of another kind.
//   - Control frames (SendControl): a small FIFO that is never superseded,
//     written before any latest-only frame, for pings, pongs and session
//     control, so they are neither starved nor lost.
//
// Each time the writer gets to run it writes everything pending, in one
// Write: control frames in order, then latest-only frames in the order
// their keys became pending (a replacement keeps its predecessor's place).
// Send and SendControl copy the payload and never block. After a write
// error every call returns it. Sender is safe for concurrent use; once
// each key in use has had its buffer allocated, it does not allocate.
type Sender struct {
	w io.Writer

	mu      sync.Mutex
	slots   [NumKeys][]byte // payload per key, allocated on first use
	pending [NumKeys]bool
	order   [NumKeys]uint16 // pending keys, oldest first
	npend   int
	ctrl    [][]byte // ring of control payload buffers
	cHead   int
	cLen    int
	closed  bool
	err     error
	stats   SenderStats

	wake chan struct{}
	done chan struct{}
	wbuf []byte // writer goroutine only
}

// NewSender starts a Sender writing to w. Call Close to stop it.
func NewSender(w io.Writer, cfg SenderConfig) *Sender {
	if cfg.ControlQueue <= 0 {
		cfg.ControlQueue = 16
	}
	s := &Sender{
		w:    w,
		ctrl: make([][]byte, cfg.ControlQueue),
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	go s.run()
	return s
}

// Send queues payload as the newest frame of key (0 ≤ key < NumKeys),
// replacing an unsent frame of the same key. It returns an error for a key
// out of range, a payload over MaxFrameLen (*FrameSizeError), after Close,
// or after a write error.
func (s *Sender) Send(key int, payload []byte) error {
	if len(payload) > MaxFrameLen {
		return &FrameSizeError{Size: len(payload), Limit: MaxFrameLen}
	}
	if key < 0 || key >= NumKeys {
		return fmt.Errorf("relay: key %d out of range [0,%d)", key, NumKeys)
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	if s.pending[key] {
		s.stats.Superseded++
	} else {
		s.pending[key] = true
		s.order[s.npend] = uint16(key)
		s.npend++
	}
	s.slots[key] = append(s.slots[key][:0], payload...)
	s.mu.Unlock()
	s.signal()
	return nil
}

// SendControl queues payload as a control frame, written in order before
// latest-only frames. It returns ErrControlQueueFull when ControlQueue
// frames are already waiting.
func (s *Sender) SendControl(payload []byte) error {
	if len(payload) > MaxFrameLen {
		return &FrameSizeError{Size: len(payload), Limit: MaxFrameLen}
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	if s.cLen == len(s.ctrl) {
		s.stats.ControlFull++
		s.mu.Unlock()
		return ErrControlQueueFull
	}
	i := (s.cHead + s.cLen) % len(s.ctrl)
	s.ctrl[i] = append(s.ctrl[i][:0], payload...)
	s.cLen++
	s.mu.Unlock()
	s.signal()
	return nil
}

func (s *Sender) usable() error {
	if s.err != nil {
		return s.err
	}
	if s.closed {
		return ErrSenderClosed
	}
	return nil
}

func (s *Sender) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Stats returns the counters.
func (s *Sender) Stats() SenderStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Err returns the write error that stopped the sender, if any.
func (s *Sender) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the sender and waits for its goroutine. Frames not yet
// written are dropped (Stats.Dropped). If the writer is blocked in Write,
// Close waits for that Write to return: close the underlying connection
// first, or give it a write deadline. Close returns the write error, if any.
func (s *Sender) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Dropped += uint64(s.npend + s.cLen)
	for _, k := range s.order[:s.npend] {
		s.pending[k] = false
	}
	s.npend, s.cLen = 0, 0
	return s.err
}

func (s *Sender) run() {
	defer close(s.done)
	for range s.wake {
		s.mu.Lock()
		if s.closed || s.err != nil {
			s.mu.Unlock()
			return
		}
		frames := s.cLen + s.npend
		if frames == 0 {
			s.mu.Unlock()
			continue
		}
		buf := s.wbuf[:0]
		for ; s.cLen > 0; s.cLen-- {
			buf, _ = AppendFrame(buf, s.ctrl[s.cHead])
			s.cHead = (s.cHead + 1) % len(s.ctrl)
		}
		for _, k := range s.order[:s.npend] {
			buf, _ = AppendFrame(buf, s.slots[k])
			s.pending[k] = false
		}
		s.npend = 0
		s.mu.Unlock()

		_, err := s.w.Write(buf)
		s.wbuf = buf

		s.mu.Lock()
		s.stats.Writes++
		if err != nil {
			s.err = fmt.Errorf("relay: write: %w", err)
			s.stats.Dropped += uint64(frames)
			s.mu.Unlock()
			return
		}
		s.stats.Frames += uint64(frames)
		s.stats.Bytes += uint64(len(buf))
		s.mu.Unlock()
	}
}
