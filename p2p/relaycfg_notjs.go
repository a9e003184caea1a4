//go:build !js

package p2p

import (
	"net/http"

	"github.com/ragsync/ragsync/signaling"
)

// relayClientConfig is the signaling client configuration DialRelay gets:
// with Config.RelayDialer, an HTTP client whose transport dials with it
// (keeping the TLS configuration of Config.Signaling's).
func relayClientConfig(cfg Config) signaling.ClientConfig {
	cc := cfg.Signaling
	if cfg.RelayDialer == nil {
		return cc
	}
	tr := &http.Transport{DialContext: cfg.RelayDialer}
	if cc.HTTPClient != nil {
		if t, ok := cc.HTTPClient.Transport.(*http.Transport); ok {
			tr.TLSClientConfig = t.TLSClientConfig
		}
	}
	cc.HTTPClient = &http.Client{Transport: tr}
	return cc
}
