// Package websocket is the WebSocket client of the signaling client, the
// WebSocket relay and the demo's spectator feed, under the names of
// github.com/coder/websocket (the part of its API they use).
//
// Natively it is github.com/coder/websocket itself (aliases). In a js/wasm
// build it is the browser's WebSocket object, used directly through
// syscall/js: coder/websocket's js build links net/http (for a
// *http.Response nobody reads), about 0.9 MB of the web demo's gzipped
// wasm.
package websocket
