package p2p

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// checkLeaks fails the test if, after the test's cleanups, goroutines that
// were not running before it are still running 5 seconds later. Call it
// first in a test, before anything that starts goroutines.
func checkLeaks(t testing.TB) {
	t.Helper()
	before := goroutineIDs()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			extra := newGoroutines(before)
			if len(extra) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d goroutine(s) leaked:\n%s", len(extra), strings.Join(extra, "\n\n"))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func allStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Split(string(bytes.TrimSpace(buf)), "\n\n")
}

func goroutineID(stack string) string {
	// "goroutine 123 [running]:"
	f := strings.Fields(stack)
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

func goroutineIDs() map[string]bool {
	m := map[string]bool{}
	for _, s := range allStacks() {
		m[goroutineID(s)] = true
	}
	return m
}

// ignoredStack reports goroutines that are not ours to clean up.
func ignoredStack(s string) bool {
	return strings.Contains(s, "os/signal.signal_recv") ||
		strings.Contains(s, "testing.(*T).Run(") ||
		strings.Contains(s, "testing.runFuzzing(")
}

func newGoroutines(before map[string]bool) []string {
	var out []string
	for _, s := range allStacks() {
		if before[goroutineID(s)] || ignoredStack(s) {
			continue
		}
		out = append(out, s)
	}
	return out
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
