//go:build !race

package demotest

// RaceOn: the tests run under -race, so the binaries they build do too.
const RaceOn = false
