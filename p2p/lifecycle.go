package p2p

import (
	"context"
	"sync"
	"sync/atomic"
)

// lifecycle is a session's start and end: the ready signal Connect waits
// for, the end (once, with its error), the goroutines the session runs
// and the context that stops them. It needs no lock: each error is
// written once, before the channel close or the atomic store that
// publishes it, and read only after them.
type lifecycle struct {
	ready     chan struct{} // closed when the first transport is chosen, or connecting failed
	readyOnce sync.Once
	readyErr  error // set before ready is closed

	ended  atomic.Bool   // set once the session has ended
	endErr error         // set before ended
	done   chan struct{} // closed when the session is torn down

	closing   chan struct{} // closed by Close
	closeOnce sync.Once

	// wg counts the session's goroutines (see the package doc's
	// Internals); ctx is canceled when the session ends.
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

func newLifecycle() *lifecycle {
	l := &lifecycle{ready: make(chan struct{}), done: make(chan struct{}), closing: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l
}

// settle closes ready, the first time, with err (nil: connected).
func (l *lifecycle) settle(err error) {
	l.readyOnce.Do(func() {
		l.readyErr = err
		close(l.ready)
	})
}

// end records why the session ended, settles ready with it if connecting
// had not, and cancels ctx. The caller ends a session once.
func (l *lifecycle) end(err error) {
	l.endErr = err
	l.ended.Store(true)
	l.settle(err)
	l.cancel()
}

// err returns why the session ended, once it has (ErrClosed if unknown).
func (l *lifecycle) err() error {
	if l.endErr == nil {
		return ErrClosed
	}
	return l.endErr
}

// waitReady waits for ready or ctx.
func (l *lifecycle) waitReady(ctx context.Context) error {
	select {
	case <-l.ready:
		return l.readyErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// spawn runs f in a goroutine counted in wg.
func (l *lifecycle) spawn(f func()) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		f()
	}()
}

// close closes closing, the first time, and waits for the goroutines.
func (l *lifecycle) close() {
	l.closeOnce.Do(func() {
		close(l.closing)
		l.wg.Wait()
	})
}
