// Package badlink holds the demo's bad-link pairing test (its tests only):
// two headless demos pairing through cmd/signal on a loopback where every
// packet, UDP and TCP alike, is delayed and a share of them lost
// (internal/linkshape). It is a test binary of its own so that it runs
// alongside the fault suite (demo/internal/faults) rather than after it,
// in a package near go test's timeout.
package badlink
