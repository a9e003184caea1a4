// Package server is ragsync's signaling server: the other side of package
// signaling's Client and relay dialers. It pairs players (rooms by code,
// quick match), forwards their offers, answers and candidates, keeps a
// dropped player's place for rejoin, relays the byte streams of players
// WebRTC cannot connect, and optionally runs a TURN server (pion/turn).
// It enforces server-wide and per-address limits and exports Prometheus
// metrics.
//
// The wire protocol, the relay and the limits are documented in package
// signaling; Start runs a server in a program of its own (cmd/signal, the
// demo, tests), New and Server.Serve give full control.
package server
