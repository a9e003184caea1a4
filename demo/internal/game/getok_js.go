//go:build js

package game

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"
	"time"
)

// getOK checks that a GET of url answers 200 OK within timeout, with the
// browser's fetch (the web build links no net/http).
func getOK(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	abort := js.Global().Get("AbortController").New()
	done := make(chan error, 1)
	var then, catch js.Func
	settle := func(err error) {
		done <- err
		// The promise is settled: neither callback runs again.
		go func() { then.Release(); catch.Release() }()
	}
	then = js.FuncOf(func(_ js.Value, args []js.Value) any {
		if st := args[0].Get("status").Int(); st != 200 {
			settle(fmt.Errorf("%s answers %d %s", url, st, args[0].Get("statusText").String()))
		} else {
			settle(nil)
		}
		return nil
	})
	catch = js.FuncOf(func(_ js.Value, args []js.Value) any {
		settle(errors.New(args[0].Call("toString").String()))
		return nil
	})
	// The promise settles once: after an abort, with an AbortError.
	js.Global().Call("fetch", url, map[string]any{"signal": abort.Get("signal"), "cache": "no-store"}).
		Call("then", then, catch)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		abort.Call("abort")
		return ctx.Err()
	}
}
