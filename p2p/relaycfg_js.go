//go:build js

package p2p

import "github.com/ragsync/ragsync/signaling"

// relayClientConfig is Config.Signaling: a browser's relay is a WebSocket
// of its own, which takes no dialer (Config.RelayDialer is not used).
func relayClientConfig(cfg Config) signaling.ClientConfig { return cfg.Signaling }
