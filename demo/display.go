package main

import (
	"os"
	"runtime"

	"github.com/ragsync/ragsync/demo/internal/cli"
)

// noDisplayMsg is what the demo says when there is no display to open its
// window on.
const noDisplayMsg = "demo: there is no display to open the window on (DISPLAY and WAYLAND_DISPLAY are not set).\n" +
	cli.NoDisplayHint + "\n  Or run it from a desktop session."

// hasDisplay reports whether a window can be opened, as far as the
// environment tells: on Linux and the BSDs, X11 or Wayland must be named.
// Other systems always have one.
func hasDisplay() bool {
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
		return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
	}
	return true
}
