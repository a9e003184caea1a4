//go:build !js

// Command web is the ragsync demo in a browser; it only builds for
// GOOS=js GOARCH=wasm (make web). Elsewhere it says how to play it.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "the web demo runs in a browser: `make web`, start `go run ./cmd/signal` (or the demo), then open http://HOST:8080/")
	os.Exit(2)
}
