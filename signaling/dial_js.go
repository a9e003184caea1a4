//go:build js

package signaling

import "github.com/ragsync/ragsync/internal/websocket"

// dialOptions: in a browser the WebSocket is the browser's, which takes no
// HTTP client, headers (the browser sends its own, Origin included) or
// compression setting, so ClientConfig.HTTPClient and Header are ignored.
func dialOptions(*ClientConfig) *websocket.DialOptions { return nil }
