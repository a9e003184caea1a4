package main

// Every run here uses a loopback signaling URL, so sessions gather only
// loopback candidates (InterfacesAuto), with -udp4: the network rule.
//
// The -self runs give WebRTC a minute (-webrtc-timeout) to open instead of
// 5 s: the reports must show both transports up, and a loaded machine can
// take longer than 5 s to connect pion on loopback.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/signaling"
)

// skipShort skips the tests that run whole sessions (pion WebRTC and the
// relay on loopback, for seconds each) in -short mode.
func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: it runs whole sessions")
	}
}

// TestPingsSettled: after -duration, the run waits for a measured round
// trip on each transport up and for none to be connecting, within its
// attempts.
func TestPingsSettled(t *testing.T) {
	link := func(state p2p.LinkState, recent int, pings uint64) p2p.LinkStats {
		l := p2p.LinkStats{State: state, PingsSent: pings}
		l.RTT.Recent = recent
		return l
	}
	for _, c := range []struct {
		name        string
		webrtc, tcp p2p.LinkStats
		extra       int
		want        bool
	}{
		{"both answered", link(p2p.LinkUp, 3, 5), link(p2p.LinkUp, 1, 5), 0, true},
		{"tcp not yet answered", link(p2p.LinkUp, 3, 5), link(p2p.LinkUp, 0, 5), 0, false},
		{"webrtc connecting", link(p2p.LinkConnecting, 0, 0), link(p2p.LinkUp, 3, 5), 0, false},
		{"webrtc down", link(p2p.LinkDown, 0, 2), link(p2p.LinkUp, 3, 5), 0, true},
		{"webrtc disabled", link(p2p.LinkDisabled, 0, 0), link(p2p.LinkUp, 3, 5), 0, true},
		{"unmeasured pings used up", link(p2p.LinkUp, 3, 5), link(p2p.LinkUp, 0, 5+maxUnmeasured), 0, true},
		{"one ping short of them", link(p2p.LinkUp, 3, 5), link(p2p.LinkUp, 0, 4+maxUnmeasured), 0, false},
		{"extra messages used up", link(p2p.LinkConnecting, 0, 0), link(p2p.LinkUp, 0, 5), maxExtraMessages * 60, true},
		{"one message short of them", link(p2p.LinkConnecting, 0, 0), link(p2p.LinkUp, 0, 5), maxExtraMessages*60 - 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := p2p.Stats{WebRTC: c.webrtc, TCP: c.tcp}
			if got := pingsSettled(st, [2]uint64{5, 5}, c.extra, 60); got != c.want {
				t.Errorf("pingsSettled = %v, want %v", got, c.want)
			}
		})
	}
}

func TestSelfJSON(t *testing.T) {
	skipShort(t)
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-self", "-udp4", "-webrtc-timeout", "1m", "-duration", "1s", "-json"}, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	var rs []report
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out.String())
	}
	if len(rs) != 2 || rs[0].Role != "offerer" || rs[1].Role != "answerer" {
		t.Fatalf("reports %+v", rs)
	}
	for i, r := range rs {
		if r.Transport != rs[0].Transport || (r.Transport != "webrtc" && r.Transport != "tcp") {
			t.Errorf("%s: transport %q", r.Role, r.Transport)
		}
		// Counts only: rates and the verdict depend on the machine's load.
		// What one end received, the other end sent (the two ends start
		// and stop sending independently, so their Sent differ a little).
		peer := rs[1-i]
		if r.Sent == 0 || r.Received == 0 || r.Received > peer.Sent || r.Corrupt != 0 {
			t.Errorf("%s: sent %d, received %d of the peer's %d, corrupt %d", r.Role, r.Sent, r.Received, peer.Sent, r.Corrupt)
		}
		if len(r.Transports) != 2 {
			t.Fatalf("%s: %d transports", r.Role, len(r.Transports))
		}
		for _, tr := range r.Transports {
			// Both transports up and answering pings. The session leaves
			// out of its round-trip figures every round trip that
			// overlaps a stall of this process, which on a loaded machine
			// can be all of them (the run then waits for one, within its
			// attempts): the distribution is checked where there is one,
			// and the verdict must say why there is none.
			if tr.State != "up" || tr.Pongs == 0 {
				t.Errorf("%s/%s: %+v", r.Role, tr.Name, tr)
			}
			if tr.RTTMs.Samples == 0 {
				t.Logf("%s/%s: %d pings answered, no round trip measured (every one overlapped a stall)", r.Role, tr.Name, tr.Pongs)
				if tr.Active && !strings.Contains(r.VerdictReason, "stall") {
					t.Errorf("%s: verdict %q without a measured round trip", r.Role, r.VerdictReason)
				}
				continue
			}
			if tr.RTTMs.Min <= 0 || tr.RTTMs.P95 < tr.RTTMs.P50 || tr.RTTMs.Max < tr.RTTMs.P95 {
				t.Errorf("%s/%s: %+v", r.Role, tr.Name, tr)
			}
		}
		if r.LocalCand != "host" {
			t.Errorf("%s: local candidate %q", r.Role, r.LocalCand)
		}
		if (r.Verdict != "good" && r.Verdict != "playable" && r.Verdict != "poor") || r.VerdictReason == "" {
			t.Errorf("%s: verdict %q (%q)", r.Role, r.Verdict, r.VerdictReason)
		}
		// Both ends read the same machine clock: the true offset is 0, and
		// the uncertainty bounds the error whatever the load.
		if r.ClockUncMs <= 0 || r.ClockOffsetMs > r.ClockUncMs || r.ClockOffsetMs < -r.ClockUncMs {
			t.Errorf("%s: clock offset %v ± %v ms between two ends of one process", r.Role, r.ClockOffsetMs, r.ClockUncMs)
		}
	}
	if rs[0].ChoiceReason == "" || !strings.Contains(rs[1].ChoiceReason, "offerer") {
		t.Errorf("choice reasons %q / %q", rs[0].ChoiceReason, rs[1].ChoiceReason)
	}
}

func TestSelfText(t *testing.T) {
	skipShort(t)
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"-self", "-udp4", "-webrtc-timeout", "1m", "-duration", "1s"}, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	s := out.String()
	for _, want := range []string{"this peer is the offerer", "this peer is the answerer", "3-probe ping",
		"Chosen:", "WebRTC candidates: local host", "Clock offset to the peer", "Verdict: ", "playable: ≤ 200 ms"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

// roomWatch is a run's stderr that hands over the code of the room it
// created, read from the line that tells the other machine how to join.
type roomWatch struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	codes chan string
	sent  bool
}

func newRoomWatch() *roomWatch { return &roomWatch{codes: make(chan string, 1)} }

var roomLine = regexp.MustCompile(`-room ([0-9A-Z]{6})\n`)

func (w *roomWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := roomLine.FindSubmatch(w.buf.Bytes()); m != nil && !w.sent {
		w.sent = true
		w.codes <- string(m[1])
	}
	return len(p), nil
}

func (w *roomWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestTwoProcessesByRoom runs the two-machine mode: one run creates a room
// (and prints its code), the other joins it, against a separate signaling
// server.
func TestTwoProcessesByRoom(t *testing.T) {
	skipShort(t)
	url, stop, err := embeddedServer(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var wg sync.WaitGroup
	var outA, outB, errB bytes.Buffer
	errA := newRoomWatch() // the host prints the room's code on stderr
	var runA, runB error
	wg.Add(2)
	go func() {
		defer wg.Done()
		runA = run(context.Background(), []string{"-signal", url, "-udp4", "-duration", "1s", "-json"}, &outA, errA)
	}()
	go func() {
		defer wg.Done()
		var code string
		select {
		case code = <-errA.codes:
		case <-testwait.Chan(t):
			runB = errors.New("no room code (gave up near the test binary's deadline)")
			return
		}
		runB = run(context.Background(), []string{"-signal", url, "-udp4", "-room", strings.ToLower(code), "-duration", "1s", "-json"}, &outB, &errB)
	}()
	wg.Wait()
	if runA != nil || runB != nil {
		t.Fatalf("runs: %v / %v\n%s\n%s", runA, runB, errA.String(), errB.String())
	}
	if !strings.Contains(errA.String(), "-room ") {
		t.Errorf("host did not print how to join:\n%s", errA.String())
	}
	var ra, rb report
	if err := json.Unmarshal(outA.Bytes(), &ra); err != nil {
		t.Fatal(err, outA.String())
	}
	if err := json.Unmarshal(outB.Bytes(), &rb); err != nil {
		t.Fatal(err, outB.String())
	}
	if ra.Role != "offerer" || rb.Role != "answerer" || ra.Room != rb.Room || ra.Transport != rb.Transport {
		t.Errorf("reports disagree: %s/%s room %s/%s transport %s/%s", ra.Role, rb.Role, ra.Room, rb.Room, ra.Transport, rb.Transport)
	}
	if ra.Received == 0 || rb.Received == 0 {
		t.Errorf("received %d / %d", ra.Received, rb.Received)
	}
}

// TestBothByAgreedCode is the usage: both machines run
// netdiag -signal URL -room CODE with the same code.
func TestBothByAgreedCode(t *testing.T) {
	skipShort(t)
	url, stop, err := embeddedServer(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var wg sync.WaitGroup
	var out [2]bytes.Buffer
	var errs [2]error
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = run(context.Background(), []string{"-signal", url, "-udp4", "-room", "brawl7", "-duration", "1s", "-json"}, &out[i], io.Discard)
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("runs: %v / %v", errs[0], errs[1])
	}
	var r [2]report
	for i := range r {
		if err := json.Unmarshal(out[i].Bytes(), &r[i]); err != nil {
			t.Fatal(err, out[i].String())
		}
	}
	if r[0].Room != "BRAWL7" || r[1].Room != "BRAWL7" || r[0].Role == r[1].Role || r[0].Received == 0 || r[1].Received == 0 {
		t.Errorf("reports: room %s/%s role %s/%s received %d/%d", r[0].Room, r[1].Room, r[0].Role, r[1].Role, r[0].Received, r[1].Received)
	}
}

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-rate", "0"},
		{"-size", "4"},
		{"-duration", "-1s"},
		{"-self", "-room", "ABCDEF"},
		{"-quick", "-room", "ABCDEF"},
		{"-interfaces", "wifi"},
		{"extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			err := run(context.Background(), args, io.Discard, io.Discard)
			if err == nil || errors.Is(err, flag.ErrHelp) {
				t.Errorf("%q: %v", args, err)
			}
		})
	}
	if err := run(context.Background(), []string{"-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

func TestJoinBadRoom(t *testing.T) {
	url, stop, err := embeddedServer(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// Fill room ZZZZZZ with two players: a third is refused, by name.
	for range 2 {
		c, err := signaling.Dial(context.Background(), url, signaling.ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.JoinOrCreateRoom(context.Background(), "ZZZZZZ"); err != nil {
			t.Fatal(err)
		}
	}
	err = run(context.Background(), []string{"-signal", url, "-room", "ZZZZZZ"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "ZZZZZZ") || !errors.Is(err, signaling.ErrRoomFull) {
		t.Errorf("joining a full room: %v", err)
	}
	err = run(context.Background(), []string{"-signal", url, "-room", "0O1"}, io.Discard, io.Discard)
	if err == nil {
		t.Error("a malformed room code was accepted")
	}
}

func TestVerdict(t *testing.T) {
	mk := func(p95, jitter float64) *transportReport {
		return &transportReport{Name: "webrtc", RTTMs: rttReport{Samples: 10, Recent: 10, P95: p95}, JitterInMs: jitter}
	}
	for _, c := range []struct {
		tr          *transportReport
		loss        float64
		interrupted bool
		want        string
	}{
		{mk(30, 2), 0, false, "good"},
		{mk(80, 10), 1, false, "good"},
		{mk(81, 2), 0, false, "playable"},
		{mk(30, 11), 0, false, "playable"},
		{mk(30, 2), 1.5, false, "playable"},
		{mk(200, 30), 5, false, "playable"},
		{mk(201, 2), 0, false, "poor"},
		{mk(30, 31), 0, false, "poor"},
		{mk(30, 2), 6, false, "poor"},
		{mk(30, 2), 0, true, "poor"},
		{nil, 0, false, "poor"},
		{&transportReport{Name: "tcp"}, 0, false, "poor"},
		{&transportReport{Name: "tcp", RTTMs: rttReport{Samples: 10}}, 0, false, "poor"}, // none in the last 10 s
		{&transportReport{Name: "tcp", Pongs: 10}, 0, false, "poor"},                     // answered, none measured
	} {
		t.Run(fmt.Sprint(c.want, " ", c.loss, " ", c.interrupted), func(t *testing.T) {
			if got, why := verdict(c.tr, c.loss, c.interrupted); got != c.want || why == "" {
				t.Errorf("%+v loss %v interrupted %v: %s (%s), want %s", c.tr, c.loss, c.interrupted, got, why, c.want)
			}
		})
	}
}

// The host's hint names an address the other machine can use: not the
// loopback address this machine reaches the server at, but its network
// addresses with the same port; a non-loopback -signal is passed on as is.
func TestJoinHint(t *testing.T) {
	lan := []net.IP{net.ParseIP("192.0.2.7").To4(), net.ParseIP("198.51.100.3").To4()}
	for _, tc := range []struct {
		name, signal string
		ips          []net.IP
		want, not    []string
	}{
		{"loopback with network addresses", "http://127.0.0.1:8080", lan,
			[]string{"netdiag -signal http://192.0.2.7:8080 -room ABCDEF\n", "netdiag -signal http://198.51.100.3:8080 -room ABCDEF\n", "-addr :8080", "-interfaces all"},
			[]string{"-signal http://127.0.0.1:8080 -room"}},
		{"localhost", "http://localhost:9000", lan[:1], []string{"-signal http://192.0.2.7:9000 -room ABCDEF\n"}, []string{"localhost:9000 -room"}},
		{"loopback only", "http://127.0.0.1:8080", nil, []string{"-signal http://127.0.0.1:8080 -room ABCDEF\n", "no other network address"}, nil},
		{"a server other machines reach", "https://signal.example.org", lan, []string{"-signal https://signal.example.org -room ABCDEF\n"}, []string{"192.0.2.7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := joinHint(tc.signal, "ABCDEF", tc.ips)
			for _, w := range tc.want {
				if !strings.Contains(h, w) {
					t.Errorf("hint lacks %q:\n%s", w, h)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(h, n) {
					t.Errorf("hint has %q:\n%s", n, h)
				}
			}
		})
	}
}

// TestWaitExpires: when nobody joins within -wait, the error says so (the
// room and the flag), not a bare context deadline.
func TestWaitExpires(t *testing.T) {
	url, stop, err := embeddedServer(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	err = run(context.Background(), []string{"-signal", url, "-udp4", "-room", "qwerty", "-wait", "300ms"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "nobody joined room QWERTY within 300ms (-wait)") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("run: %v", err)
	}
}
