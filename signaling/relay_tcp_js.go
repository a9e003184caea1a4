//go:build js

package signaling

import (
	"context"
	"errors"
	"net"
)

// DialRelay fails in a browser, which cannot open a TCP stream: use
// DialRelayWebSocket.
func DialRelay(context.Context, string, RelayToken, ClientConfig) (net.Conn, error) {
	return nil, errors.New("signaling: a browser cannot open the TCP relay; use DialRelayWebSocket")
}
