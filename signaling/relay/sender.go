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

// MaxClasses is the largest number of latest-only classes.
const MaxClasses = 16

// SenderConfig configures NewSender. The zero value is ready to use.
type SenderConfig struct {
	// Classes is the number of latest-only classes, 1..MaxClasses.
	// Zero means 4.
	Classes int
	// ControlQueue is the capacity of the FIFO control queue. Zero means 16.
	ControlQueue int
}

// SenderStats are a Sender's counters.
type SenderStats struct {
	Frames         uint64             // frames written
	Bytes          uint64             // bytes written, headers included
	Writes         uint64             // calls to the writer's Write
	Superseded     uint64             // latest-only frames replaced before being written
	ClassSupersede [MaxClasses]uint64 // Superseded by class
	ControlFull    uint64             // SendControl calls refused with ErrControlQueueFull
	Dropped        uint64             // frames pending at Close, never written
}

// Sender writes frames to an io.Writer from its own goroutine. Frames come
// in two kinds:
//
//   - Latest-only frames (Send): each class has one slot. A frame replaces an
//     unsent frame of its class (counted in Superseded), so while the writer
//     is blocked only the newest state of each class waits. Use a class per
//     independent stream of states (e.g. 0 for own bodies, 1 for HP/props).
//   - Control frames (SendControl): a small FIFO that is never superseded,
//     written before any latest-only frame, for pings, pongs and one-off
//     events, so they are neither starved nor lost.
//
// Each time the writer gets to run it writes everything pending, in one
// Write: control frames in order, then classes in increasing order. Send
// and SendControl copy the payload and never block. After a write error
// every call returns it. Sender is safe for concurrent use; in steady state
// it does not allocate.
type Sender struct {
	w io.Writer

	mu      sync.Mutex
	slots   [][]byte // payload per class
	pending []bool
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
	if cfg.Classes <= 0 {
		cfg.Classes = 4
	}
	if cfg.Classes > MaxClasses {
		cfg.Classes = MaxClasses
	}
	if cfg.ControlQueue <= 0 {
		cfg.ControlQueue = 16
	}
	s := &Sender{
		w:       w,
		slots:   make([][]byte, cfg.Classes),
		pending: make([]bool, cfg.Classes),
		ctrl:    make([][]byte, cfg.ControlQueue),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	go s.run()
	return s
}

// Send queues payload as the newest frame of class, replacing an unsent
// frame of the same class. It returns an error for a class out of range, a
// payload over MaxFrameLen (*FrameSizeError), after Close, or after a write
// error.
func (s *Sender) Send(class int, payload []byte) error {
	if len(payload) > MaxFrameLen {
		return &FrameSizeError{Size: len(payload), Limit: MaxFrameLen}
	}
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	if class < 0 || class >= len(s.slots) {
		s.mu.Unlock()
		return fmt.Errorf("relay: class %d out of range [0,%d)", class, len(s.slots))
	}
	if s.pending[class] {
		s.stats.Superseded++
		s.stats.ClassSupersede[class]++
	} else {
		s.pending[class] = true
		s.npend++
	}
	s.slots[class] = append(s.slots[class][:0], payload...)
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
	s.npend, s.cLen = 0, 0
	for i := range s.pending {
		s.pending[i] = false
	}
	if s.err != nil {
		return s.err
	}
	return nil
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
		for i, p := range s.pending {
			if p {
				buf, _ = AppendFrame(buf, s.slots[i])
				s.pending[i] = false
			}
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
