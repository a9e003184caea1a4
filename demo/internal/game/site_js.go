//go:build js

package game

import (
	"errors"
	"log/slog"
	"net"
)

// embeddedServer: a browser runs no signaling server, and the web build
// links none (nor Prometheus, TURN or NATS).
type embeddedServer struct{}

// startServer fails: a browser cannot listen.
func startServer(string, *slog.Logger) (*embeddedServer, error) {
	return nil, errors.New("a browser cannot run a signaling server")
}

func (*embeddedServer) Addr() *net.TCPAddr  { return nil }
func (*embeddedServer) LocalURL() string    { return "" }
func (*embeddedServer) ShareURLs() []string { return nil }
func (*embeddedServer) Close()              {}
