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
// WebSocket relay: the configured HTTP client (by default lossyClient)
// and headers, no compression.
func dialOptions(cfg *ClientConfig) *websocket.DialOptions {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = lossyClient
	}
	return &websocket.DialOptions{
		HTTPClient:      hc,
		HTTPHeader:      cfg.Header,
		CompressionMode: websocket.CompressionDisabled,
	}
}

// lossyClient is http.DefaultClient with TCP connections tuned for a few
// small messages on a lossy link (internal/thintcp), as the server's
// side of the WebSocket is: the join and the answer leave on the
// client's side.
var lossyClient = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: thintcp.Control}).DialContext
	return &http.Client{Transport: tr}
}()
