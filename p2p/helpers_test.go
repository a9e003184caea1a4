package p2p

import (
	"context"
	"errors"
	"testing"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
)

// checkLeaks fails the test if, after the test's cleanups, goroutines that
// were not running before it are still running (they may take until near
// the test binary's deadline to exit: a slow machine is not a leak). Call
// it first in a test, before anything that starts goroutines.
func checkLeaks(t testing.TB) {
	t.Helper()
	leaktest.Check(t)
}

// testCtx is a context for the test's waits: it has no deadline of its
// own, only the test binary's (see testwait).
func testCtx(t testing.TB) context.Context { return testwait.Context(t) }

// waitUntil polls cond until it holds, bounded only by the test binary's
// deadline; what names the condition in the failure.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, what, cond)
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
