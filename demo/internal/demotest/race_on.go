//go:build race

package demotest

// RaceOn: the tests run under -race, so the binaries they build do too
// (and reuse the race build cache the test binary just filled).
const RaceOn = true
