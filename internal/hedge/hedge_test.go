package hedge

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// An attempt that hangs (a lost SYN) does not hold up the next one: the
// second attempt's success is returned, and the first's context ends.
func TestRaceHedgesAHangingAttempt(t *testing.T) {
	var n atomic.Int32
	firstEnded := make(chan struct{})
	v, err := Race(context.Background(), time.Millisecond, 3, func(ctx context.Context) (int, error) {
		if n.Add(1) == 1 {
			<-ctx.Done()
			close(firstEnded)
			return 0, ctx.Err()
		}
		return 2, nil
	}, nil)
	if err != nil || v != 2 {
		t.Fatalf("Race = %d, %v; want the second attempt's 2", v, err)
	}
	select {
	case <-firstEnded:
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging attempt's context was not canceled")
	}
}

// A success that comes after the winner is discarded, not leaked.
func TestRaceDiscardsLateSuccesses(t *testing.T) {
	release := make(chan struct{})
	var n atomic.Int32
	discarded := make(chan int, 3)
	v, err := Race(context.Background(), time.Millisecond, 2, func(ctx context.Context) (int, error) {
		if i := n.Add(1); i == 1 {
			<-release // completes only after the second has won
			return 1, nil
		}
		return 2, nil
	}, func(v int) { discarded <- v })
	close(release)
	if err != nil || v != 2 {
		t.Fatalf("Race = %d, %v; want 2", v, err)
	}
	select {
	case d := <-discarded:
		if d != 1 {
			t.Errorf("discarded %d, want 1", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the late success was not discarded")
	}
}

// With every attempt failed, Race returns the last error at once, and
// never runs more than most at once; with every ≤ 0 it runs one.
func TestRaceFailsWhenAllFail(t *testing.T) {
	boom := errors.New("refused")
	var n atomic.Int32
	_, err := Race(context.Background(), 0, 3, func(ctx context.Context) (int, error) {
		n.Add(1)
		return 0, boom
	}, nil)
	if !errors.Is(err, boom) || n.Load() != 1 {
		t.Fatalf("Race = %v after %d attempts; want %v after 1", err, n.Load(), boom)
	}

	var running, most atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for most.Load() < 3 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // room for a fourth, which must not start
		cancel()
	}()
	_, err = Race(ctx, time.Millisecond, 3, func(ctx context.Context) (int, error) {
		r := running.Add(1)
		for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
		}
		<-ctx.Done()
		running.Add(-1)
		return 0, ctx.Err()
	}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Race after ctx ended = %v, want context.Canceled", err)
	}
	if most.Load() != 3 {
		t.Errorf("%d attempts ran at once, want at most (and here exactly) 3", most.Load())
	}
}
