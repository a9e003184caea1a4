// Package faults holds the demo's fault suite (its tests only): what real
// networks and real computers do to a match, done to real processes —
// cmd/signal and two headless demos in network namespaces of their own.
// It is a test binary of its own so that the demo's real-process tests do
// not add up to one package near go test's timeout; it tests the demo
// exactly as it did from package demo.
package faults
