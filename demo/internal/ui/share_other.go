//go:build !js

package ui

// inBrowser: the web demo (see share_js.go).
const inBrowser = false

// shareState: a native window shows no share link.
type shareState struct{}

// pageShare: a native window has no page; the waiting screen gives the
// commands instead.
func (s *shareState) pageShare(show bool, room string) {}
