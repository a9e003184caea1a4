//go:build linux

// Command nfqdelay holds every packet iptables hands to one NFQUEUE queue
// for a fixed delay, then lets it through: the delay of a slow link for
// ragsync's real-process tests, on kernels without netem (the loss of a
// lossy link comes from iptables' statistic match; see internal/linkshape,
// which runs this program). It speaks nfnetlink_queue over a raw netlink
// socket with golang.org/x/sys/unix only; wire.go documents the format.
//
// Usage, as root, best in a network namespace of its own:
//
//	nfqdelay -queue 3 -delay 150ms [-jitter 20ms] [-max 4096] &
//	# wait for its "bound" line, then:
//	iptables -A OUTPUT -o lo -j NFQUEUE --queue-num 3
//
// Each packet is accepted delay (plus a uniform random share of jitter)
// after it arrived, never before an earlier packet of its flow (protocol,
// addresses, ports), so a flow keeps its order. At most -max packets are
// held: beyond that, and when the kernel's queue or our socket overflows
// (the queue is bound FAIL_OPEN), packets pass at once, counted.
//
// Standard output carries JSON lines: {"event":"bound",...} once the queue
// is bound (a queue nobody has bound drops its packets, so install the
// rule only then), and {"event":"stats",...} with the counts on exit.
// SIGTERM or SIGINT accepts every held packet at once, unbinds the queue
// and exits 0. Logs go to standard error.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// copyRange is how much of each packet the kernel copies to us: enough
// for an IPv4 header with options (60 bytes) or an IPv6 header (40) and
// the ports after it.
const copyRange = 64

// Config is the program's flags. Zero values are invalid where noted;
// validate checks them in one place.
type Config struct {
	Queue  uint          // NFQUEUE number, 0..65535
	Delay  time.Duration // fixed hold per packet, >= 0
	Jitter time.Duration // extra uniform random hold in [0, Jitter), >= 0
	Max    int           // packets held at most, >= 1
	Seed   uint64        // jitter's random seed; 0: a random one
}

// ConfigError is a flag value out of range.
type ConfigError struct {
	Flag  string
	Value any
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("nfqdelay: bad -%s %v", e.Flag, e.Value)
}

func (c Config) validate() error {
	switch {
	case c.Queue > 65535:
		return &ConfigError{"queue", c.Queue}
	case c.Delay < 0:
		return &ConfigError{"delay", c.Delay}
	case c.Jitter < 0:
		return &ConfigError{"jitter", c.Jitter}
	case c.Max < 1:
		return &ConfigError{"max", c.Max}
	}
	return nil
}

// Stats are the counts written on exit.
type Stats struct {
	Event         string `json:"event"` // "stats"
	Received      uint64 `json:"received"`
	Delayed       uint64 `json:"delayed"`  // accepted after their hold
	Overflow      uint64 `json:"overflow"` // accepted at once: -max held
	Flushed       uint64 `json:"flushed"`  // accepted at once on exit
	MaxHeld       int    `json:"max_held"`
	ENOBUFS       uint64 `json:"enobufs"`        // our socket overflowed (those passed, FAIL_OPEN)
	VerdictErrors uint64 `json:"verdict_errors"` // the kernel refused a verdict
}

func main() {
	var c Config
	flag.UintVar(&c.Queue, "queue", 0, "NFQUEUE number to bind")
	flag.DurationVar(&c.Delay, "delay", 150*time.Millisecond, "hold each packet this long")
	flag.DurationVar(&c.Jitter, "jitter", 0, "add a uniform random hold in [0, jitter)")
	flag.IntVar(&c.Max, "max", 4096, "hold at most this many packets; accept the rest at once")
	flag.Uint64Var(&c.Seed, "seed", 0, "jitter's random seed (0: random)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := c.validate(); err != nil {
		log.Error(err.Error())
		os.Exit(2)
	}
	st, err := run(c, log)
	if err != nil {
		log.Error(err.Error())
		os.Exit(1)
	}
	st.Event = "stats"
	json.NewEncoder(os.Stdout).Encode(st)
}

// run binds the queue and holds packets until SIGTERM or SIGINT.
func run(c Config, log *slog.Logger) (Stats, error) {
	var st Stats
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return st, fmt.Errorf("nfqdelay: netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return st, fmt.Errorf("nfqdelay: bind netlink socket: %w", err)
	}
	// A deep receive buffer: a burst of packets queues up here while we
	// send verdicts. FORCE needs CAP_NET_ADMIN, which binding needs too.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20); err != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
	}
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return st, fmt.Errorf("nfqdelay: eventfd: %w", err)
	}
	defer unix.Close(stop)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		unix.Write(stop, binary.NativeEndian.AppendUint64(nil, 1))
	}()

	q := uint16(c.Queue)
	buf := make([]byte, 1<<16)
	maxlen := uint32(c.Max) + 1024
	if err := request(fd, buf, appendConfigCmd(nil, 1, q, nfqnlCfgCmdBind)); err != nil {
		return st, fmt.Errorf("nfqdelay: bind queue %d: %w", q, err)
	}
	defer request(fd, buf, appendConfigCmd(nil, 3, q, nfqnlCfgCmdUnbind))
	if err := request(fd, buf, appendConfigParams(nil, 2, q, copyRange, maxlen)); err != nil {
		return st, fmt.Errorf("nfqdelay: configure queue %d: %w", q, err)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"event": "bound", "queue": q, "delay": c.Delay.String(), "jitter": c.Jitter.String(), "max": c.Max})
	log.Info("nfqdelay: bound", "queue", q, "delay", c.Delay, "jitter", c.Jitter, "max", c.Max)

	seed := c.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	h := newHolder(c.Delay, c.Jitter, c.Max, rng.Int64N)
	start := time.Now()
	out := make([]byte, 0, 256*verdictMsgLen)
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		err := unix.Sendto(fd, out, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		out = out[:0]
		if err != nil {
			return fmt.Errorf("nfqdelay: send verdicts: %w", err)
		}
		return nil
	}
	accept := func(id uint32) error {
		out = appendVerdict(out, q, id)
		if cap(out)-len(out) < verdictMsgLen {
			return flush()
		}
		return nil
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(stop), Events: unix.POLLIN}}
	stopping := false
	for {
		now := time.Since(start)
		for {
			id, ok := h.pop(now)
			if !ok {
				break
			}
			st.Delayed++
			if err := accept(id); err != nil {
				return st, err
			}
		}
		if err := flush(); err != nil {
			return st, err
		}
		if stopping {
			// Accept what is held and what is still in the socket; the
			// deferred unbind makes the kernel drop anything later, so
			// remove the iptables rule before stopping this program.
			for h.len() > 0 {
				id, _ := h.pop(1<<63 - 1)
				st.Flushed++
				if err := accept(id); err != nil {
					return st, err
				}
			}
			if err := drain(fd, buf, &st, accept); err != nil {
				return st, err
			}
			return st, flush()
		}
		var ts *unix.Timespec
		if next, ok := h.next(); ok {
			t := unix.NsecToTimespec(int64(max(next-time.Since(start), 0)))
			ts = &t
		}
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Ppoll(fds, ts, nil); err != nil && !errors.Is(err, unix.EINTR) {
			return st, fmt.Errorf("nfqdelay: poll: %w", err)
		}
		if fds[1].Revents != 0 {
			stopping = true
			log.Info("nfqdelay: stopping", "held", h.len())
		}
		if fds[0].Revents == 0 {
			continue
		}
		for {
			n, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.EAGAIN) {
				break
			}
			if errors.Is(err, unix.ENOBUFS) {
				st.ENOBUFS++
				break
			}
			if err != nil {
				return st, fmt.Errorf("nfqdelay: read: %w", err)
			}
			now := time.Since(start)
			if err := handle(buf[:n], &st, func(p packet) error {
				if h.hold(p.id, flowOf(p.payload), now) {
					st.MaxHeld = max(st.MaxHeld, h.len())
					return nil
				}
				st.Overflow++
				return accept(p.id)
			}); err != nil {
				log.Warn(err.Error())
			}
			// Read what else is waiting without blocking, then release.
			fds[0].Revents = 0
			if n, _ := unix.Poll(fds[:1], 0); n == 0 {
				break
			}
		}
	}
}

// handle dispatches the packets of one datagram to onPacket; it counts
// refused verdicts and skips acks.
func handle(d []byte, st *Stats, onPacket func(packet) error) error {
	for len(d) > 0 {
		m, rest, err := nextMessage(d)
		if err != nil {
			return err
		}
		d = rest
		switch m.typ {
		case nlmsgError:
			if code, err := errorCode(m.body); err != nil {
				return err
			} else if code != 0 {
				st.VerdictErrors++
			}
		case nfnlSubsysQueue<<8 | nfqnlMsgPacket:
			st.Received++
			p, err := parsePacket(m.body)
			if err != nil {
				return err
			}
			if err := onPacket(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// drain accepts at once every packet already waiting in the socket.
func drain(fd int, buf []byte, st *Stats, accept func(uint32) error) error {
	for {
		n, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOBUFS) {
			continue
		}
		if err != nil {
			return nil // EAGAIN: empty
		}
		if err := handle(buf[:n], st, func(p packet) error {
			st.Flushed++
			return accept(p.id)
		}); err != nil {
			return err
		}
	}
}

// request sends one config message and waits for its ack.
func request(fd int, buf, msg []byte) error {
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	seq := binary.NativeEndian.Uint32(msg[8:])
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		for d := buf[:n]; len(d) > 0; {
			m, rest, err := nextMessage(d)
			if err != nil {
				return err
			}
			d = rest
			if m.typ != nlmsgError || m.seq != seq {
				// Not our ack: a packet, which only comes if a rule sends
				// packets here before "bound"; left without a verdict, it
				// is dropped when the queue is unbound.
				continue
			}
			code, err := errorCode(m.body)
			if err != nil {
				return err
			}
			if code != 0 {
				return unix.Errno(-code)
			}
			return nil
		}
	}
}
