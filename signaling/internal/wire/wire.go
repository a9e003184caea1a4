// Package wire holds the few relay wire constants that both sides of
// signaling spell: the client (package signaling) and the server (package
// signaling/server). The relay's wire format is documented where the
// server implements it, in signaling/server's relay_server.go and
// relay_ws.go.
package wire

// RelayUpgrade is the Upgrade token of the raw relay endpoint.
const RelayUpgrade = "ragsync-relay/1"

// RelayAttached is the server's text message once a WebSocket relay
// stream runs.
const RelayAttached = `{"type":"relay_attached"}`

// RelayHello is the client's first WebSocket relay message.
type RelayHello struct {
	Type  string `json:"type"`
	Token string `json:"token"`
}

// Limits of an ice_servers entry, shared by the protocol's validation and
// the server's TURN configuration.
const (
	MaxICEURLs     = 4
	MaxICEFieldLen = 256
)

// Truncate cuts s to n bytes for an error message, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
