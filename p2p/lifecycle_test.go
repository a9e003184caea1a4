package p2p

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

// Ending before ready fails the wait with the end's error; close waits
// for the spawned goroutines, which stop on ctx.
func TestLifecycleEndBeforeReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLifecycle()
		stopped := false
		l.spawn(func() {
			<-l.ctx.Done()
			stopped = true
		})
		boom := errors.New("boom")
		l.end(boom)
		l.settle(nil) // too late: the first settle wins
		if err := l.waitReady(context.Background()); err != boom {
			t.Errorf("waitReady = %v, want %v", err, boom)
		}
		if !l.ended.Load() || l.err() != boom {
			t.Errorf("ended %v err %v, want true, %v", l.ended.Load(), l.err(), boom)
		}
		l.close()
		l.close() // idempotent
		if !stopped {
			t.Error("close returned before the goroutine stopped")
		}
	})
}

// A wait for ready gives up with its context.
func TestLifecycleWaitReadyCanceled(t *testing.T) {
	l := newLifecycle()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.waitReady(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("waitReady = %v, want context.Canceled", err)
	}
	l.settle(nil)
	if err := l.waitReady(context.Background()); err != nil {
		t.Errorf("waitReady after settle = %v", err)
	}
}
