//go:build race

package main

// raceOn: the tests run under -race, so the binary they build does too
// (and reuses the race build cache the test binary just filled).
const raceOn = true
