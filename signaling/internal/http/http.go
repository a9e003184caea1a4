// Package http is what ClientConfig takes of net/http: Client and Header.
// Natively they are net/http's (aliases). In a js/wasm build they stand in
// for them, and are not used: the browser's WebSocket makes its own
// handshake, and the browser build links no net/http.
package http
