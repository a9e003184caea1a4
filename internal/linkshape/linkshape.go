//go:build linux

package linkshape

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ragsync/ragsync/internal/testwait"
)

// nsEnv names the test a re-run process runs in its own namespace.
const nsEnv = "RAGSYNC_LINKSHAPE_TEST"

// nfqdelayPkg is the NFQUEUE program Apply builds and runs.
const nfqdelayPkg = "github.com/ragsync/ragsync/internal/tools/nfqdelay"

// Shape is what Apply does to the packets crossing lo. The zero
// Shape changes nothing.
type Shape struct {
	// Delay holds every matched packet this long, once per one-way trip.
	// Zero: no delay (and no nfqdelay).
	Delay time.Duration
	// Jitter adds a uniform random hold in [0, Jitter) per packet; a
	// flow's packets keep their order. Zero: none.
	Jitter time.Duration
	// Loss is the probability, in [0, 1], that a matched packet is
	// dropped (before any delay). Zero: none.
	Loss float64
	// Protocols limits the shape to these: "tcp", "udp", "icmp". Empty:
	// every packet (tcp and udp if Ports is set).
	Protocols []string
	// Ports limits the shape to TCP and UDP packets from or to one of
	// these ports (at most 15). Empty: any port.
	Ports []uint16
	// MaxHeld bounds the packets nfqdelay holds; beyond it they pass at
	// once (counted in Stats.Overflow). Zero: 4096.
	MaxHeld int
}

// ShapeError is a Shape field out of range.
type ShapeError struct {
	Field string
	Value any
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("linkshape: bad Shape.%s %v", e.Field, e.Value)
}

// validate checks s and fills its defaults.
func (s Shape) validate() (Shape, error) {
	switch {
	case s.Delay < 0:
		return s, &ShapeError{"Delay", s.Delay}
	case s.Jitter < 0:
		return s, &ShapeError{"Jitter", s.Jitter}
	case !(s.Loss >= 0 && s.Loss <= 1):
		return s, &ShapeError{"Loss", s.Loss}
	case len(s.Ports) > 15:
		return s, &ShapeError{"Ports", s.Ports}
	case s.MaxHeld < 0:
		return s, &ShapeError{"MaxHeld", s.MaxHeld}
	}
	for _, p := range s.Protocols {
		if p != "tcp" && p != "udp" && p != "icmp" {
			return s, &ShapeError{"Protocols", s.Protocols}
		}
		if p == "icmp" && len(s.Ports) > 0 {
			return s, &ShapeError{"Protocols", "icmp with Ports"}
		}
	}
	if len(s.Ports) > 0 && len(s.Protocols) == 0 {
		s.Protocols = []string{"tcp", "udp"}
	}
	if s.MaxHeld == 0 {
		s.MaxHeld = 4096
	}
	return s, nil
}

// Isolate runs the calling test again in a network namespace of its own
// (`unshare -n`, with lo up and nothing else), where Apply may shape the
// link. It returns true in that namespace, where the test goes on, and
// false in the calling process once the re-run has finished and been
// reported (its output logged, its failure failing t): the test then
// returns. It skips t under -short and where a namespace cannot be made.
func Isolate(t *testing.T) bool {
	t.Helper()
	if os.Getenv(nsEnv) == t.Name() {
		if err := loUp(); err != nil {
			t.Fatalf("linkshape: set lo up: %v", err)
		}
		if err := onlyLoopback(); err != nil {
			t.Fatal(err)
		}
		return true
	}
	if testing.Short() {
		t.Skip("linkshape: a real-process test in a namespace of its own; skipped under -short")
	}
	for _, tool := range []string{"unshare", "iptables", "ip6tables"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("linkshape: %s is needed for a shaped namespace of the test's own (Debian: apt-get install util-linux iptables): %v", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("linkshape: cannot create a network namespace here (needs root or user namespaces): %v %s", err, out)
	}
	args := []string{"-n", "--", os.Args[0], "-test.run", runPattern(t.Name()), "-test.v"}
	if d, ok := testwait.Deadline(t); ok {
		args = append(args, "-test.timeout", time.Until(d).Round(time.Second).String())
	}
	cmd := exec.CommandContext(testwait.Context(t), "unshare", args...)
	cmd.Env = append(os.Environ(), nsEnv+"="+t.Name())
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("in its own network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("linkshape: the test in its namespace: %v", err)
	}
	return false
}

// runPattern is a -test.run pattern matching exactly the test named name
// (subtests included: each level anchored).
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// loUp sets lo up (ip link set lo up) with an ioctl.
func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// onlyLoopback fails unless lo is the namespace's only interface, so
// that nothing here shapes (or blocks) the host's network.
func onlyLoopback() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("linkshape: list interfaces: %w", err)
	}
	for _, i := range ifs {
		if i.Name != "lo" {
			return fmt.Errorf("linkshape: refusing to shape a namespace with interface %q: run the test under Isolate", i.Name)
		}
	}
	return nil
}

// Stats are a Link's counts.
type Stats struct {
	Dropped uint64 // packets the loss rules dropped (iptables' counters)
	Queued  uint64 // packets the delay rules queued to nfqdelay

	// nfqdelay's counts (zero without Delay or Jitter).
	Received      uint64 `json:"received"`
	Delayed       uint64 `json:"delayed"`  // accepted after their hold
	Overflow      uint64 `json:"overflow"` // accepted at once: MaxHeld held
	Flushed       uint64 `json:"flushed"`  // accepted at once on Close
	MaxHeld       int    `json:"max_held"`
	ENOBUFS       uint64 `json:"enobufs"` // passed at once: socket overflow
	VerdictErrors uint64 `json:"verdict_errors"`
}

// Link is a shape in force.
type Link struct {
	chain string
	rules bool // the chains are installed
	cmd   *exec.Cmd
	out   *bufio.Reader
	errb  *strings.Builder
	once  sync.Once
	st    Stats
	err   error
}

// queues numbers the NFQUEUE queues (and chains) of this process.
var queues atomic.Int32

// Apply shapes the packets arriving through lo as s says until t ends (or Close),
// in a namespace Isolate made: it fails t anywhere else.
func Apply(t testing.TB, s Shape) *Link {
	t.Helper()
	s, err := s.validate()
	if err != nil {
		t.Fatal(err)
	}
	if err := onlyLoopback(); err != nil {
		t.Fatal(err)
	}
	q := 100 + int(queues.Add(1))
	l := &Link{chain: "LINKSHAPE" + strconv.Itoa(q)}
	t.Cleanup(func() {
		if _, err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	delay := s.Delay > 0 || s.Jitter > 0
	if delay {
		bin := nfqdelayBinary(t)
		l.cmd = exec.Command(bin, "-queue", strconv.Itoa(q), "-delay", s.Delay.String(), "-jitter", s.Jitter.String(), "-max", strconv.Itoa(s.MaxHeld))
		l.errb = new(strings.Builder)
		l.cmd.Stderr = l.errb
		stdout, err := l.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := l.cmd.Start(); err != nil {
			t.Fatalf("linkshape: start nfqdelay: %v", err)
		}
		l.out = bufio.NewReader(stdout)
		// Rules go in only once the queue is bound: an unbound queue
		// drops what it is sent.
		line, err := l.out.ReadString('\n')
		if err != nil || !strings.Contains(line, `"event":"bound"`) {
			l.cmd.Process.Kill()
			l.cmd.Wait()
			l.cmd = nil
			t.Fatalf("linkshape: nfqdelay did not bind queue %d: %v %q\n%s", q, err, line, l.errb)
		}
	}
	for _, ipt := range []string{"iptables", "ip6tables"} {
		if err := iptables(ipt, "-N", l.chain); err != nil {
			t.Fatal(err)
		}
		l.rules = true
		if err := iptables(ipt, "-A", "INPUT", "-i", "lo", "-j", l.chain); err != nil {
			t.Fatal(err)
		}
		protos := s.Protocols
		if len(protos) == 0 {
			protos = []string{""}
		}
		for _, p := range protos {
			match := []string{"-A", l.chain}
			switch {
			case p == "icmp" && ipt == "ip6tables":
				match = append(match, "-p", "ipv6-icmp")
			case p != "":
				match = append(match, "-p", p)
			}
			if len(s.Ports) > 0 {
				ports := make([]string, len(s.Ports))
				for i, port := range s.Ports {
					ports[i] = strconv.Itoa(int(port))
				}
				match = append(match, "-m", "multiport", "--ports", strings.Join(ports, ","))
			}
			if s.Loss > 0 {
				r := slices.Clone(match)
				if s.Loss < 1 {
					r = append(r, "-m", "statistic", "--mode", "random", "--probability", strconv.FormatFloat(s.Loss, 'f', -1, 64))
				}
				if err := iptables(ipt, append(r, "-j", "DROP")...); err != nil {
					t.Fatal(err)
				}
			}
			if delay {
				if err := iptables(ipt, append(slices.Clone(match), "-j", "NFQUEUE", "--queue-num", strconv.Itoa(q))...); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return l
}

// Counts returns, so far, how many packets the loss rules dropped and
// the delay rules queued to nfqdelay, IPv4 and IPv6 together.
func (l *Link) Counts() (dropped, queued uint64, err error) {
	for _, ipt := range []string{"iptables", "ip6tables"} {
		d, q, err := counters(ipt, l.chain)
		if err != nil {
			return 0, 0, err
		}
		dropped += d
		queued += q
	}
	return dropped, queued, nil
}

// Close removes the shape (the rules first, then nfqdelay, which lets
// every held packet through) and returns the counts. Later calls return
// the same.
func (l *Link) Close() (Stats, error) {
	l.once.Do(func() {
		var errs []error
		if l.rules {
			for _, ipt := range []string{"iptables", "ip6tables"} {
				// Unhook the chain first: its counters are then final.
				errs = append(errs, iptables(ipt, "-D", "INPUT", "-i", "lo", "-j", l.chain))
				d, q, err := counters(ipt, l.chain)
				l.st.Dropped += d
				l.st.Queued += q
				errs = append(errs, err,
					iptables(ipt, "-F", l.chain),
					iptables(ipt, "-X", l.chain))
			}
		}
		if l.cmd != nil {
			l.cmd.Process.Signal(syscall.SIGTERM)
			var st Stats
			for {
				line, err := l.out.ReadString('\n')
				if strings.Contains(line, `"event":"stats"`) {
					errs = append(errs, json.Unmarshal([]byte(line), &st))
				}
				if err != nil {
					break
				}
			}
			if err := l.cmd.Wait(); err != nil {
				errs = append(errs, fmt.Errorf("linkshape: nfqdelay: %w\n%s", err, l.errb))
			}
			st.Dropped, st.Queued = l.st.Dropped, l.st.Queued
			l.st = st
		}
		l.err = errors.Join(errs...)
	})
	return l.st, l.err
}

// iptables runs one iptables (or ip6tables) command, waiting for the
// xtables lock, which is shared across namespaces.
func iptables(bin string, args ...string) error {
	out, err := exec.Command(bin, append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("linkshape: %s %s: %v %s", bin, strings.Join(args, " "), err, out)
	}
	return nil
}

// counters reads the packets chain's DROP and NFQUEUE rules matched.
func counters(bin, chain string) (dropped, queued uint64, err error) {
	out, err := exec.Command(bin, "-w", "-L", chain, "-v", "-n", "-x").CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("linkshape: %s -L %s: %v %s", bin, chain, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue // a header line
		}
		switch f[2] {
		case "DROP":
			dropped += n
		case "NFQUEUE":
			queued += n
		}
	}
	return dropped, queued, nil
}

var (
	binMu  sync.Mutex
	binDir string
)

// nfqdelayBinary builds nfqdelay once per test binary (again if the test
// whose temporary directory held it has ended).
func nfqdelayBinary(t testing.TB) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	bin := filepath.Join(binDir, "nfqdelay")
	if binDir != "" {
		if _, err := os.Stat(bin); err == nil {
			return bin
		}
	}
	binDir = t.TempDir()
	bin = filepath.Join(binDir, "nfqdelay")
	cmd := exec.Command("go", "build", "-o", bin, nfqdelayPkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		binDir = ""
		t.Fatalf("linkshape: go build %s: %v\n%s", nfqdelayPkg, err, out)
	}
	return bin
}
