//go:build !js

package signaling

import (
	"net"
	"net/http"
	"time"

	"github.com/ragsync/ragsync/internal/thintcp"
	"github.com/ragsync/ragsync/internal/websocket"
)

// dialOptions are the WebSocket options of the signaling client and the
// WebSocket relay: the configured HTTP client (by default, Go's default
// transport whose TCP connections are thin streams, see internal/thintcp)
// and headers, no compression.
func dialOptions(cfg *ClientConfig) *websocket.DialOptions {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = thinClient
	}
	return &websocket.DialOptions{
		HTTPClient:      hc,
		HTTPHeader:      cfg.Header,
		CompressionMode: websocket.CompressionDisabled,
	}
}

// thinClient is http.DefaultClient with thin-stream TCP connections.
var thinClient = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: thintcp.Control}).DialContext
	return &http.Client{Transport: tr}
}()
