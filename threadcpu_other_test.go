//go:build !linux

package ragsync

// threadCPU has no thread CPU clock here: false.
func threadCPU() (int64, bool) { return 0, false }
