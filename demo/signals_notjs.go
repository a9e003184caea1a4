//go:build !js

package main

import (
	"os"
	"syscall"
)

// forwardedSignals are passed on to the window program.
var forwardedSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
