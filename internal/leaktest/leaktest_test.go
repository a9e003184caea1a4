package leaktest

import (
	"testing"
)

// fakeTB records failures instead of failing the real test.
type fakeTB struct {
	testing.TB
	cleanups []func()
	errors   int
}

func (f *fakeTB) Helper()               { f.TB.Helper() }
func (f *fakeTB) Cleanup(fn func())     { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(string, ...any) { f.errors++ }
func (f *fakeTB) Failed() bool          { return f.errors > 0 }
func (f *fakeTB) runCleanups() {
	for _, c := range f.cleanups {
		c()
	}
}

func TestCheckPassesWhenGoroutinesExit(t *testing.T) {
	f := &fakeTB{TB: t}
	Check(f)
	done := make(chan struct{})
	go func() { <-done }()
	close(done)
	f.runCleanups()
	if f.errors != 0 {
		t.Fatalf("reported %d leaks for a goroutine that exited", f.errors)
	}
}

func TestSinceSeesALeak(t *testing.T) {
	before := ids()
	stop := make(chan struct{})
	go func() { <-stop }()
	defer close(stop)
	if got := since(before); len(got) != 1 {
		t.Fatalf("since found %d new goroutines, want 1:\n%v", len(got), got)
	}
}
