package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
)

// childEnv makes the test binary run main instead of the tests, so a test
// can start real cmd/signal processes and kill them.
const childEnv = "RAGSYNC_TEST_SIGNAL_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// proc is a cmd/signal process.
type proc struct {
	cmd  *exec.Cmd
	url  string
	logs *syncBuf
}

// startProc starts cmd/signal on a free loopback port with args and
// returns once it is ready; the test's end kills it.
func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	p, err := tryStartProc(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tryStartProc is startProc, returning the error of a process that did
// not start (its logs in the error).
func tryStartProc(t *testing.T, args ...string) (*proc, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, logs: &syncBuf{}}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("logs of %s (%s):\n%s", p.url, strings.Join(args, " "), p.logs)
		}
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		p.logs.Write(append(sc.Bytes(), '\n'))
		var m struct{ Msg, URL string }
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Msg == "signaling server ready" {
			p.url = m.URL
			break
		}
	}
	if p.url == "" {
		p.kill()
		return nil, fmt.Errorf("cmd/signal did not start:\n%s", p.logs)
	}
	go io.Copy(p.logs, stderr)
	return p, nil
}

// kill ends the process at once, as a crash does: no shutdown, no close
// frames.
func (p *proc) kill() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// TestFailoverRejoin: two cmd/signal processes share a secret; two
// players pair on the first, which is killed mid-match. Their clients
// reach the second through ClientConfig.FallbackURLs, rejoin with their
// relay tokens, are paired again in the same room and roles, and their
// relay works there.
func TestFailoverRejoin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	secret := []string{"-secret", "0123456789abcdef0123456789abcdef"}
	a, b := startProc(t, secret...), startProc(t, secret...)
	ctx := testwait.Context(t)
	cfg := signaling.ClientConfig{FallbackURLs: []string{b.url}}
	dial := func() *signaling.Client {
		t.Helper()
		c, err := signaling.Dial(ctx, a.url, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	next := func(c *signaling.Client, kind signaling.EventKind) signaling.Event {
		t.Helper()
		for {
			ev, err := c.Recv(ctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v", kind, err)
			}
			if ev.Kind == kind {
				return ev
			}
			if ev.Kind != signaling.EventPeerLeft { // "dropped" while the other rejoins
				t.Fatalf("got %+v, want %s", ev, kind)
			}
		}
	}
	off, ans := dial(), dial()
	code, err := off.CreateRoom(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ans.JoinRoom(ctx, string(code)); err != nil {
		t.Fatal(err)
	}
	po, pa := next(off, signaling.EventPaired).Pairing, next(ans, signaling.EventPaired).Pairing

	a.kill()
	<-off.Done()
	<-ans.Done()

	// Both reconnect: the first URL is dead, the fallback answers.
	off2, ans2 := dial(), dial()
	if role, err := off2.Rejoin(ctx, po.Token); err != nil || role != signaling.RoleOfferer {
		t.Fatalf("offerer rejoin: %v %v", role, err)
	}
	if role, err := ans2.Rejoin(ctx, pa.Token); err != nil || role != signaling.RoleAnswerer {
		t.Fatalf("answerer rejoin: %v %v", role, err)
	}
	po2, pa2 := next(off2, signaling.EventPaired).Pairing, next(ans2, signaling.EventPaired).Pairing
	if po2.Room != code || pa2.Room != code || po2.Role != signaling.RoleOfferer || pa2.Role != signaling.RoleAnswerer {
		t.Fatalf("paired again as %+v and %+v, want room %s", po2, pa2, code)
	}
	// Signaling goes on on the second server.
	if err := off2.SendOffer(ctx, "v=0 again"); err != nil {
		t.Fatal(err)
	}
	if ev := next(ans2, signaling.EventOffer); ev.SDP != "v=0 again" {
		t.Fatalf("offer %+v", ev)
	}

	// The relay too: a raw stream and a WebSocket one, both given the
	// dead server's URL first.
	type res struct {
		c   net.Conn
		err error
	}
	rc := make(chan res, 1)
	go func() {
		c, err := signaling.DialRelay(ctx, a.url, po2.Token, cfg)
		rc <- res{c, err}
	}()
	cb, err := signaling.DialRelayWebSocket(ctx, a.url, pa2.Token, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	r := <-rc
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.c.Close()
	if _, err := r.c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(cb, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("relay read %q %v", buf, err)
	}
}

// TestFallbackNotOnRefusal: a server's refusal that another server would
// repeat (a bad token) is returned, not retried elsewhere.
func TestFallbackNotOnRefusal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	a := startProc(t, "-secret", "0123456789abcdef0123456789abcdef")
	ctx := testwait.Context(t)
	c, err := signaling.Dial(ctx, a.url, signaling.ClientConfig{FallbackURLs: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Rejoin(ctx, signaling.RelayToken("not a token"))
	if !errors.Is(err, signaling.ErrBadToken) {
		t.Fatalf("rejoin with a bad token: %v", err)
	}
	_, err = signaling.DialRelay(ctx, a.url, "not a token", signaling.ClientConfig{FallbackURLs: []string{"http://127.0.0.1:1"}})
	if !errors.Is(err, signaling.ErrBadToken) {
		t.Fatalf("relay with a bad token: %v", err)
	}
}
