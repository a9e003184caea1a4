//go:build js

package main

import (
	"os"
	"syscall"
)

// forwardedSignals: js has no SIGHUP (and no processes to run; the web
// demo is demo/web).
var forwardedSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}
