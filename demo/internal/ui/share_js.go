//go:build js

package ui

import "syscall/js"

// inBrowser: the web demo, whose rivals join by a link rather than a
// command line.
const inBrowser = true

// shareState is what the page last showed of the share link.
type shareState struct {
	set, show bool
	room      string
}

// pageShare tells the page (index.html's ragsyncShare) what a rival opens to
// join: room "" is quick match (the page itself), else the room's code; the
// page shows the link with a copy button. show false hides it. Only changes
// reach the page.
func (s *shareState) pageShare(show bool, room string) {
	if s.set && s.show == show && s.room == room {
		return
	}
	s.set, s.show, s.room = true, show, room
	if f := js.Global().Get("ragsyncShare"); f.Type() == js.TypeFunction {
		f.Invoke(show, room)
	}
}
