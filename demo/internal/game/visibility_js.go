//go:build js

package game

import (
	"syscall/js"
	"time"
)

// watchVisibility tells the rival when the page is hidden or shown again,
// and repeats "hidden" every bgRepeat while it is hidden (see
// background.go). It runs outside the game loop, which a hidden page
// does not run; its ticker, throttled by the browser in the background,
// also fires whenever a packet wakes the page.
func (a *App) watchVisibility() {
	doc := js.Global().Get("document")
	changed := make(chan struct{}, 1)
	f := js.FuncOf(func(js.Value, []js.Value) any {
		select {
		case changed <- struct{}{}:
		default:
		}
		return nil
	})
	doc.Call("addEventListener", "visibilitychange", f)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer f.Release()
		defer doc.Call("removeEventListener", "visibilitychange", f)
		t := time.NewTicker(bgRepeat)
		defer t.Stop()
		was := false
		for {
			select {
			case <-a.ctx.Done():
				return
			case <-changed:
			case <-t.C:
			}
			hidden := doc.Get("visibilityState").String() == "hidden"
			if !hidden && !was {
				continue
			}
			if hidden != was {
				if hidden {
					a.log.Info("page hidden: the rival is told; the game stands still until the page is shown")
				} else {
					a.log.Info("page shown again")
				}
			}
			was = hidden
			a.page.sendBackground(hidden)
		}
	}()
}

// sendBackground tells the rival on the current session, if any, that
// the page is hidden or shown.
func (ps *pageSession) sendBackground(hidden bool) {
	if s := ps.s.Load(); s != nil {
		s.Send(appendBackground(nil, hidden))
	}
}
