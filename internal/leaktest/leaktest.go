// Package leaktest is the one goroutine-leak checker of ragsync's tests.
//
// Check records the goroutines running when it is called and registers a
// cleanup that fails the test if goroutines started since are still running
// after the test's other cleanups. Goroutines take a moment to wind down
// after a Close, so the cleanup polls; it has no fixed limit of its own and
// gives up only shortly before the test binary's deadline (package
// testwait): a slow machine makes a clean test wait, never fail.
package leaktest

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/ragsync/ragsync/internal/testwait"
)

// Check fails t if goroutines started after this call are still running
// after the test's cleanups, once they have had until shortly before the
// test binary's deadline to exit. Call it first in the test, before
// anything that starts goroutines, so that its cleanup runs last.
func Check(t testing.TB) {
	t.Helper()
	before := ids()
	t.Cleanup(func() {
		if t.Failed() {
			return // the failure says more than the leak it may cause
		}
		var extra []string
		if !testwait.Until(t, func() bool { extra = since(before); return len(extra) == 0 }) {
			t.Errorf("leaktest: %d goroutine(s) still running near the test binary's deadline:\n\n%s",
				len(extra), strings.Join(extra, "\n\n"))
		}
	})
}

// since returns the stacks of goroutines not in before that are ours to
// clean up (for tests that check a point in the middle of a run).
func since(before map[string]bool) []string {
	var out []string
	for _, s := range stacks() {
		if !before[id(s)] && !ignored(s) {
			out = append(out, s)
		}
	}
	return out
}

func ids() map[string]bool {
	m := map[string]bool{}
	for _, s := range stacks() {
		m[id(s)] = true
	}
	return m
}

func stacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(bytes.TrimSpace(buf[:n])), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// id returns the goroutine number from a stack's first line,
// "goroutine 123 [running]:".
func id(stack string) string {
	if f := strings.Fields(stack); len(f) >= 2 {
		return f[1]
	}
	return ""
}

// ignored reports goroutines the test does not own: the runtime's signal
// handler, and the testing package's own.
func ignored(s string) bool {
	return strings.Contains(s, "os/signal.signal_recv") ||
		strings.Contains(s, "testing.(*T).Run(") ||
		strings.Contains(s, "testing.runFuzzing(") ||
		strings.Contains(s, "testing.tRunner.func1")
}
