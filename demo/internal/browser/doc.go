// Package browser holds the demo's browser test (its tests only): headless
// Chromium plays the web demo, served by cmd/signal, against the native
// demo, through real signaling and WebRTC, and over the WebSocket relay
// with UDP blocked; and a reference peer in plain JavaScript
// (testdata/refpeer.js, written from PROTOCOL.md alone) plays a fighter
// against the native demo; and two pages play each other (b2b_test.go). It is a test binary of its own so that the demo's
// real-process tests do not add up to one package near go test's timeout;
// it tests the demo exactly as it did from package demo.
package browser
