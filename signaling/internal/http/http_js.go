//go:build js

package http

// Client stands in for net/http's: a browser's WebSocket takes no HTTP
// client.
type Client struct{}

// Header stands in for net/http's: a browser's WebSocket sends its own
// headers.
type Header map[string][]string

// DefaultClient is the zero Client.
var DefaultClient = &Client{}
