//go:build !linux

// Command nfqdelay delays the packets of an NFQUEUE queue; it needs
// Linux's nfnetlink_queue (see main.go).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "nfqdelay: needs Linux (nfnetlink_queue)")
	os.Exit(2)
}
