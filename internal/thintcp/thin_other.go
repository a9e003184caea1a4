//go:build !linux

package thintcp

func setThin(uintptr) {}
