// Package hedge races staggered attempts at one operation (a dial, a
// request) and keeps the first that succeeds.
//
// On a lossy link a TCP connection whose SYN, SYN-ACK or first request is
// lost waits for the kernel's retransmission timer: 1 s, then 2, 4, 8 s
// (and a connection whose handshake was retransmitted starts its data
// with a 3 s timer). One dial can so take ten seconds and more while a
// fresh one, started a second later, gets through at its first try. Race
// starts another attempt each time a period passes without an answer, up
// to a bound, and uses whichever completes first: on a good link the
// first completes within the period and nothing else is started.
package hedge

import (
	"context"
	"time"
)

// Race runs attempt, and each time every passes without a success starts
// another alongside those still running, at most most at once (less than
// 1 means 1; every ≤ 0 starts none). It returns the first success, and
// cancels the context of the attempts still running; a success that comes
// after it is given to discard (which may be nil). When every attempt
// started has failed, it returns the last error at once (the caller's own
// retry and backoff decide what comes next). When ctx ends, no attempt is
// started any more and Race returns once those running have returned
// (their contexts end with ctx).
//
// Each attempt gets its own context, derived from ctx; the winner's is
// not canceled (a connection may stay bound to the context it was dialled
// with).
func Race[T any](ctx context.Context, every time.Duration, most int, attempt func(context.Context) (T, error), discard func(T)) (T, error) {
	return RaceNotify(ctx, every, most, attempt, discard, nil)
}

// RaceNotify is Race, calling hedged (if not nil) with the number of
// attempts under way each time it starts one alongside others.
func RaceNotify[T any](ctx context.Context, every time.Duration, most int, attempt func(context.Context) (T, error), discard func(T), hedged func(running int)) (T, error) {
	type result struct {
		v   T
		err error
		i   int
	}
	most = max(most, 1)
	results := make(chan result, most)
	var cancels []context.CancelFunc
	start := func() {
		actx, cancel := context.WithCancel(ctx)
		i := len(cancels)
		cancels = append(cancels, cancel)
		go func() {
			v, err := attempt(actx)
			results <- result{v, err, i}
		}()
	}
	// finish cancels the attempts other than winner (-1: all) and hands
	// their late successes to discard, in the background.
	finish := func(winner, running int) {
		for i, c := range cancels {
			if i != winner {
				c()
			}
		}
		if running == 0 {
			return
		}
		go func() {
			for range running {
				if r := <-results; r.err == nil && discard != nil {
					discard(r.v)
				}
			}
		}()
	}
	start()
	running := 1
	var timer <-chan time.Time
	var t *time.Timer
	if every > 0 && most > 1 {
		t = time.NewTimer(every)
		defer t.Stop()
		timer = t.C
	}
	var lastErr error
	done := ctx.Done()
	for {
		select {
		case r := <-results:
			running--
			if r.err == nil {
				finish(r.i, running)
				return r.v, nil
			}
			lastErr = r.err
			if running == 0 {
				finish(-1, 0)
				var zero T
				return zero, lastErr
			}
		case <-timer:
			if running < most {
				start()
				running++
				if hedged != nil {
					hedged(running)
				}
			}
			t.Reset(every)
		case <-done:
			// The attempts' contexts are done too: wait for them to
			// return, so the error is an attempt's (it wraps ctx's).
			done, timer = nil, nil
		}
	}
}
