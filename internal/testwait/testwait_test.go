package testwait

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestDeadlineIsBeforeTheBinarys(t *testing.T) {
	td, ok := t.Deadline()
	d, ok2 := Deadline(t)
	if ok != ok2 {
		t.Fatalf("Deadline reports %v, t.Deadline %v", ok2, ok)
	}
	if !ok {
		t.Skip("run without -timeout")
	}
	if gap := td.Sub(d); gap < MinGrace || gap > MaxGrace {
		t.Errorf("gives up %v before the binary's deadline, want %v..%v", gap, MinGrace, MaxGrace)
	}
	if bd, ok := BinaryDeadline(); !ok || bd.After(td) || td.Sub(bd) > time.Minute {
		t.Errorf("binary deadline %v (%v), testing's %v", bd, ok, td)
	}
}

func TestUntilWaitsForTheCondition(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 5 {
			time.Sleep(time.Millisecond)
			n.Add(1)
		}
	}()
	if !Until(t, func() bool { return n.Load() == 5 }) {
		t.Fatal("Until gave up")
	}
	For(t, "a condition that holds", func() bool { return true })
}

func TestUntilGivesUpAtTheDeadline(t *testing.T) {
	if until(time.Now().Add(-time.Second), true, func() bool { return false }) {
		t.Error("until reported a condition that never holds")
	}
	if !until(time.Now().Add(-time.Second), true, func() bool { return true }) {
		t.Error("until past its deadline ignored a condition that holds")
	}
}

func TestContextOutlivesTheTestBody(t *testing.T) {
	var ctxErr error
	t.Run("sub", func(t *testing.T) {
		ctx := Context(t)
		t.Cleanup(func() { ctxErr = ctx.Err() })
		if _, ok := ctx.Deadline(); !ok {
			if _, bounded := Deadline(t); bounded {
				t.Error("context without the test's deadline")
			}
		}
	})
	if ctxErr != nil {
		t.Errorf("context done in a cleanup: %v", ctxErr)
	}
}

func TestVirtualTimeInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		d, ok := Deadline(t)
		if !ok || d.Sub(start) != VirtualLimit {
			t.Fatalf("deadline %v after the bubble's now (%v)", d.Sub(start), ok)
		}
		if Until(t, func() bool { return false }) {
			t.Fatal("Until reported a condition that never holds")
		}
		if waited := time.Since(start); waited < VirtualLimit {
			t.Errorf("gave up after %v of virtual time", waited)
		}
		<-Chan(t)
	})
}
