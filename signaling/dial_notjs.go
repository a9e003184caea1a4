//go:build !js

package signaling

import "github.com/ragsync/ragsync/internal/websocket"

// dialOptions are the WebSocket options of the signaling client and the
// WebSocket relay: the configured HTTP client and headers, no compression.
func dialOptions(cfg *ClientConfig) *websocket.DialOptions {
	return &websocket.DialOptions{
		HTTPClient:      cfg.HTTPClient,
		HTTPHeader:      cfg.Header,
		CompressionMode: websocket.CompressionDisabled,
	}
}
