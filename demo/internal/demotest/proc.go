package demotest

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ragsync/ragsync/demo/internal/game"
	"github.com/ragsync/ragsync/internal/testwait"
)

// Proc is a process of a test: its stdout kept, its stderr (the log)
// scanned line by line with the time each line arrived. Cleanup kills it
// (after a SIGCONT, should the test have stopped it) and, if the test
// failed, logs its log.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	out  strings.Builder

	mu     sync.Mutex
	lines  []logLine
	grew   chan struct{} // closed and replaced when a line arrives
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

type logLine struct {
	at   time.Time
	text string
}

// Start starts cmd as a Proc named name, in a process group of its own:
// cleanup kills the group, children included (the demo runs its window
// program as a child, which would otherwise outlive it and hold the log's
// pipe open).
func Start(t testing.TB, name string, cmd *exec.Cmd) *Proc {
	t.Helper()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// Each process keeps its seat tokens (os.UserCacheDir) in a cache of
	// its own, unless the test chose one: a seat left by an earlier test's
	// killed player, for the same server and room, would otherwise be
	// taken up by the next test's player, and never in the user's cache.
	if !slices.ContainsFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "XDG_CACHE_HOME=") }) {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+t.TempDir())
	}
	p := &Proc{Name: name, Cmd: cmd, grew: make(chan struct{}), exited: make(chan struct{})}
	cmd.Stdout = &syncWriter{w: &p.out, mu: &p.mu}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, logLine{time.Now(), sc.Text()})
			close(p.grew)
			p.grew = make(chan struct{})
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.Log())
		}
	})
	return p
}

type syncWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// Log returns the log so far.
func (p *Proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		b.WriteString(l.text + "\n")
	}
	return b.String()
}

// Lines returns the log lines from index from on, and the index after
// them.
func (p *Proc) Lines(from int) ([]string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var r []string
	for i := from; i < len(p.lines); i++ {
		r = append(r, p.lines[i].text)
	}
	return r, max(from, len(p.lines))
}

// Find returns the index of the first log line from index from on that
// contains every one of subs, or -1: it does not wait.
func (p *Proc) Find(from int, subs ...string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := from; i < len(p.lines); i++ {
		if containsAll(p.lines[i].text, subs) {
			return i
		}
	}
	return -1
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// WaitLog waits for a log line containing every one of subs, from line
// index from on, and returns when it arrived and the index after it. It
// fails the test if the process exits first, or near the test binary's
// deadline (testwait).
func (p *Proc) WaitLog(t testing.TB, from int, subs ...string) (time.Time, int) {
	t.Helper()
	ctx := testwait.Context(t)
	for {
		p.mu.Lock()
		for i := from; i < len(p.lines); i++ {
			if containsAll(p.lines[i].text, subs) {
				at := p.lines[i].at
				p.mu.Unlock()
				return at, i + 1
			}
		}
		from = len(p.lines)
		grew := p.grew
		p.mu.Unlock()
		select {
		case <-grew:
		case <-p.exited:
			// Lines may still have arrived before the exit.
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if n == from {
				t.Fatalf("%s exited (%v) before logging %q", p.Name, p.Err(), subs)
			}
		case <-ctx.Done():
			t.Fatalf("%s did not log %q", p.Name, subs)
		}
	}
}

// Exited is closed when the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err is the process's exit error, once Exited is closed.
func (p *Proc) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Signal sends sig to the process.
func (p *Proc) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v: %v", p.Name, sig, err)
	}
}

// Summary waits for the demo to exit and returns its JSON summary (the
// run's only player).
func (p *Proc) Summary(t testing.TB) game.Summary {
	t.Helper()
	select {
	case <-p.exited:
	case <-testwait.Context(t).Done():
		t.Fatalf("%s did not exit", p.Name)
	}
	p.mu.Lock()
	out := p.out.String()
	p.mu.Unlock()
	i := strings.Index(out, "\n{")
	var rep game.RunReport
	if i < 0 {
		t.Fatalf("%s (%v): no JSON summary in:\n%s", p.Name, p.Err(), out)
	}
	if err := json.Unmarshal([]byte(out[i+1:]), &rep); err != nil || len(rep.Players) != 1 {
		t.Fatalf("%s: summary: %v (%d players)", p.Name, err, len(rep.Players))
	}
	return rep.Players[0]
}
