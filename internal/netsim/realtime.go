package netsim

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the real-time clock a Pipe runs on. Inject a fake one in tests;
// SystemClock is the real one. It is wall-clock shaped (time.Time and
// timers) because a Pipe delivers on its own; the game's clock is the other
// abstraction, clocksync.Clock, a monotonic Duration since an origin (its
// ManualClock is virtual time); Link itself takes explicit times and needs
// neither.
type Clock interface {
	// Now returns the current time. Pipes only subtract two readings, so
	// with time.Now the monotonic clock is used.
	Now() time.Time
	// NewTimer returns a started timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a Pipe uses, with Go 1.23 semantics:
// after Stop or Reset returns, no stale value is received from C.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// SystemClock is the real clock: time.Now and time.NewTimer.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a *time.Timer as a Timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time        { return t.t.C }
func (t sysTimer) Stop() bool                 { return t.t.Stop() }
func (t sysTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// Pipe runs a Link on a real clock: packets given to Send come out of the
// out function after the link's delay, or not at all, from a goroutine of
// the Pipe's own. Use it to put a -lag/-jitter/-loss impairment in front of
// any send function. Send is safe for concurrent use; out is called from one
// goroutine at a time, outside the Pipe's lock, with a buffer valid only
// during the call. out must not call Close.
type Pipe struct {
	mu     sync.Mutex
	link   *Link
	clock  Clock
	start  time.Time
	armed  time.Duration // arrival time the goroutine's timer is set for; -1: none
	closed bool

	out    func(p []byte, addr net.Addr)
	wake   chan struct{}
	done   chan struct{}
	exited chan struct{}

	// Used by the goroutine only: packets due, copied out of the link so
	// that out runs without the lock.
	batch []byte
	ends  []int
	addrs []net.Addr
}

// NewPipe starts a Pipe with the impairments of cfg, seeded with seed, on
// clock (nil: SystemClock), that passes every packet that survives the link
// to out. Call Close to stop it.
func NewPipe(cfg Config, seed uint64, clock Clock, out func(p []byte)) (*Pipe, error) {
	return newPipe(cfg, seed, clock, func(p []byte, _ net.Addr) { out(p) })
}

func newPipe(cfg Config, seed uint64, clock Clock, out func([]byte, net.Addr)) (*Pipe, error) {
	l, err := NewLink(cfg, seed)
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = SystemClock{}
	}
	p := &Pipe{
		link:   l,
		clock:  clock,
		start:  clock.Now(),
		armed:  -1,
		out:    out,
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	go p.run()
	return p, nil
}

// Send puts a copy of b on the link now. It returns net.ErrClosed after
// Close and a *SizeError for an oversized packet; loss is not an error.
func (p *Pipe) Send(b []byte) error { return p.send(b, nil) }

func (p *Pipe) send(b []byte, addr net.Addr) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return net.ErrClosed
	}
	if err := p.link.send(p.clock.Now().Sub(p.start), b, addr); err != nil {
		return err
	}
	if next, ok := p.link.NextArrival(); ok && (p.armed < 0 || next < p.armed) {
		p.armed = next
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// SetConfig changes the impairments from now on (see Link.SetConfig).
func (p *Pipe) SetConfig(cfg Config) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.link.SetConfig(cfg)
}

// Stats returns the link's counters.
func (p *Pipe) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.link.Stats()
}

// Close stops the Pipe's goroutine and waits for it to exit. Packets still
// in flight are discarded (Stats.Discarded). Close is idempotent.
func (p *Pipe) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.exited
		return nil
	}
	p.closed = true
	p.link.Clear()
	p.mu.Unlock()
	close(p.done)
	<-p.exited
	return nil
}

func (p *Pipe) run() {
	defer close(p.exited)
	t := p.clock.NewTimer(time.Hour)
	defer t.Stop()
	for {
		p.mu.Lock()
		now := p.clock.Now().Sub(p.start)
		p.batch, p.ends = p.batch[:0], p.ends[:0]
		p.link.deliver(now, p.collect)
		next, ok := p.link.NextArrival()
		p.armed = -1
		if ok {
			p.armed = next
		}
		p.mu.Unlock()

		from := 0
		for k, end := range p.ends {
			p.out(p.batch[from:end], p.addrs[k])
			p.addrs[k] = nil
			from = end
		}
		p.addrs = p.addrs[:0]

		if ok {
			// Arm the timer from the clock as it is now, not as it was
			// before delivering: time may have passed meanwhile (an
			// injected clock may even have been advanced), and a deadline
			// computed from the old reading would fire late.
			// The Timer takes a duration, so if the clock moves between
			// reading it and Reset, the deadline lands late by that much:
			// read it again and re-arm while it moved (a few tries; a real
			// clock always moves a little, and a few µs late is fine).
			cur := p.clock.Now().Sub(p.start)
			for range 3 {
				t.Reset(max(next-cur, 0))
				after := p.clock.Now().Sub(p.start)
				if after == cur {
					break
				}
				cur = after
			}
			if cur >= next {
				continue // due already: deliver without waiting
			}
		} else {
			t.Stop()
		}
		select {
		case <-p.done:
			return
		case <-p.wake:
		case <-t.C():
		}
	}
}

func (p *Pipe) collect(b []byte, addr net.Addr) {
	p.batch = append(p.batch, b...)
	p.ends = append(p.ends, len(p.batch))
	p.addrs = append(p.addrs, addr)
}

// PacketConn wraps a net.PacketConn so that what is written to it goes
// through an impaired link: WriteTo returns at once, as for UDP, and the
// datagram is written to the underlying connection after the link's delay,
// or never. Reads, addresses and deadlines are those of the underlying
// connection (a write deadline applies when the delayed write happens).
// Wrap both ends to impair both directions.
type PacketConn struct {
	net.PacketConn
	pipe      *Pipe
	writeErrs atomic.Uint64
	lastErr   atomic.Pointer[error]
}

// NewPacketConn wraps pc with the impairments of cfg, seeded with seed, on
// clock (nil: SystemClock). Close closes both the wrapper and pc.
func NewPacketConn(pc net.PacketConn, cfg Config, seed uint64, clock Clock) (*PacketConn, error) {
	c := &PacketConn{PacketConn: pc}
	p, err := newPipe(cfg, seed, clock, c.write)
	if err != nil {
		return nil, err
	}
	c.pipe = p
	return c, nil
}

func (c *PacketConn) write(b []byte, addr net.Addr) {
	if _, err := c.PacketConn.WriteTo(b, addr); err != nil {
		c.writeErrs.Add(1)
		c.lastErr.Store(&err)
	}
}

// WriteTo schedules b for addr and returns len(b). Errors: net.ErrClosed
// after Close, *SizeError for an oversized packet. Errors of the delayed
// write are counted by WriteErrors.
func (c *PacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if err := c.pipe.send(b, addr); err != nil {
		return 0, &net.OpError{Op: "write", Net: "netsim", Addr: addr, Err: err}
	}
	return len(b), nil
}

// WriteErrors returns how many delayed writes to the underlying connection
// failed, and the last such error.
func (c *PacketConn) WriteErrors() (uint64, error) {
	var err error
	if p := c.lastErr.Load(); p != nil {
		err = *p
	}
	return c.writeErrs.Load(), err
}

// Stats returns the link's counters.
func (c *PacketConn) Stats() Stats { return c.pipe.Stats() }

// SetConfig changes the impairments from now on.
func (c *PacketConn) SetConfig(cfg Config) error { return c.pipe.SetConfig(cfg) }

// Close stops the delivery goroutine, discarding what is in flight, then
// closes the underlying connection.
func (c *PacketConn) Close() error {
	c.pipe.Close()
	return c.PacketConn.Close()
}
