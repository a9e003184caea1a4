package badlink

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ragsync/ragsync/demo/internal/demotest"
	"github.com/ragsync/ragsync/internal/linkshape"
)

func TestMain(m *testing.M) {
	code := m.Run()
	demotest.Cleanup()
	os.Exit(code)
}

const (
	// demoEnv and signalEnv pass the binaries built outside the shaped
	// namespace to the test's re-run inside it (linkshape.Isolate), so
	// they are built once.
	demoEnv   = "RAGSYNC_EDGE_DEMO"
	signalEnv = "RAGSYNC_EDGE_SIGNAL"
	// pairingsEnv runs fewer pairings (1 to 10) while diagnosing; logsEnv
	// names a directory where each pairing's two demo logs (run with -v,
	// so with the sessions' and pion's debug lines) are written, headed
	// by the second player's start time: the timeline of a pairing
	// (paired, offer, ICE, DTLS, data channel, choice, playing).
	pairingsEnv = "RAGSYNC_BADLINK_PAIRINGS"
	logsEnv     = "RAGSYNC_BADLINK_LOGS"
)

// at once is how many pairings run side by side: the link's delay and
// loss are per packet, so pairings do not slow each other on it, and
// their processes mostly wait.
const atOnce = 2

const secret = "ragsync-bad-link-secret-0123456789abc"

// TestPairingOnBadLink: every packet on lo, UDP, TCP and the signaling
// WebSocket alike, is delayed 150 ms each way and 30 % of them are lost
// (internal/linkshape: iptables statistic drop and an NFQUEUE delay). Ten
// pairings, two at a time, each of two headless demos in a private room
// through one cmd/signal: at least 9 must start a match. The time from
// the second player's start (the first one waiting in its room) to both
// playing is logged (FIGURE; the goal,
// a median ≤ 8 s, is a wall-clock figure and not asserted), and the test
// asserts the mechanism: on such a link something (a probe round, a
// signaling dial, or a connection alongside a slow one) was tried again.
func TestPairingOnBadLink(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-process test on a shaped link; skipped under -short")
	}
	demo, sig := os.Getenv(demoEnv), os.Getenv(signalEnv)
	if demo == "" {
		if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
			t.Skip("needs root and unshare for a shaped namespace")
		}
		demo = demotest.Binary(t, demotest.DemoPkg, false)
		sig = demotest.Binary(t, demotest.SignalPkg, false)
		t.Setenv(demoEnv, demo)
		t.Setenv(signalEnv, sig)
	}
	if !linkshape.Isolate(t) {
		return
	}
	link := linkshape.Apply(t, linkshape.Shape{Delay: 150 * time.Millisecond, Loss: 0.3})
	server := demotest.Start(t, "signal", exec.Command(sig, "-addr", "127.0.0.1:8080", "-secret", secret))
	server.WaitLog(t, 0, "signaling server ready")

	codes := "ABCDEFGHJK" // room codes: 2-9 and A-Z without I and O
	pairings := len(codes)
	if n, err := strconv.Atoi(os.Getenv(pairingsEnv)); err == nil && n > 0 {
		pairings = min(n, len(codes))
	}
	logDir := os.Getenv(logsEnv)

	var (
		mu                    sync.Mutex
		took                  []time.Duration
		retries, probeRetries int
		slots                 = make(chan struct{}, atOnce)
		wg                    sync.WaitGroup
	)
	pair := func(i int) {
		room := "EDGEA" + string(codes[i])
		peer := func(name string) *demotest.Proc {
			args := []string{"-headless", "-json",
				"-signal", "http://127.0.0.1:8080", "-room", room, "-duration", "30s", "-connect-timeout", "60s"}
			if logDir != "" {
				args = append(args, "-v")
			}
			return demotest.Start(t, fmt.Sprintf("%s %d", name, i), exec.Command(demo, args...))
		}
		first := peer("first")
		defer kill(first)
		// The first player waits in its room, as a player does for a
		// friend: the clock starts when the server has made the room
		// (the demo's own "waiting in room" comes before its dial).
		if _, ok := waitLog(server, 60*time.Second, "signaling: room created", "room="+room); !ok {
			t.Logf("pairing %d: the first player never got into its room: %s", i, tail(first.Log()))
			return
		}
		start := time.Now()
		second := peer("second")
		defer kill(second)
		a, oka := waitLog(first, 60*time.Second, "msg=playing")
		b, okb := waitLog(second, 60*time.Second, "msg=playing")
		if logDir != "" {
			head := "start " + start.UTC().Format("15:04:05.000") + "\n"
			for name, p := range map[string]*demotest.Proc{"first": first, "second": second} {
				if err := os.WriteFile(fmt.Sprintf("%s/%d-%s.log", logDir, i, name), []byte(head+p.Log()), 0o644); err != nil {
					t.Log(err)
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, p := range []*demotest.Proc{first, second} {
			log := p.Log()
			retries += strings.Count(log, "trying again") + strings.Count(log, "another connection alongside")
			probeRetries += strings.Count(log, "probing again")
		}
		if !oka || !okb {
			t.Logf("pairing %d failed: first %s; second %s", i, tail(first.Log()), tail(second.Log()))
			return
		}
		if b.Before(a) {
			b = a
		}
		took = append(took, b.Sub(start))
		t.Logf("pairing %d: playing after %v", i, b.Sub(start).Round(time.Millisecond))
	}
	for i := range pairings {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			pair(i)
		}()
	}
	wg.Wait()
	if logDir != "" {
		if err := os.WriteFile(logDir+"/signal.log", []byte(server.Log()), 0o644); err != nil {
			t.Log(err)
		}
	}
	st, _ := link.Close()
	slices.Sort(took)
	median := time.Duration(0)
	if len(took) > 0 {
		median = took[len(took)/2]
	}
	t.Logf("FIGURE bad link (150 ms each way, 30 %% loss, UDP+TCP+WebSocket): %d of %d pairings started a match (%d at a time); median %v (goal ≤ 8 s), all %v; signaling retries %d, probe rounds again %d; link %+v",
		len(took), pairings, atOnce, median.Round(time.Millisecond), took, retries, probeRetries, st)
	if want := pairings - pairings/10; len(took) < want {
		t.Errorf("%d of %d pairings started a match, want at least %d", len(took), pairings, want)
	}
	if retries+probeRetries == 0 {
		t.Errorf("no retry in %d pairings on a 30 %% lossy link: the retries are not exercised", pairings)
	}
}

// waitLog waits up to d for a line of p's log with every sub, or for p to
// exit; it returns when the line was logged.
func waitLog(p *demotest.Proc, d time.Duration, subs ...string) (time.Time, bool) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if p.Find(0, subs...) >= 0 {
			return time.Now(), true
		}
		select {
		case <-p.Exited():
			return time.Time{}, p.Find(0, subs...) >= 0
		case <-time.After(20 * time.Millisecond):
		}
	}
	return time.Time{}, false
}

func kill(p *demotest.Proc) {
	select {
	case <-p.Exited():
	default:
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-p.Exited()
	}
}

func tail(s string) string {
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	return s
}
