//go:build !js

package game

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"github.com/ragsync/ragsync/demo/webdist"
	"github.com/ragsync/ragsync/internal/lanaddr"
	"github.com/ragsync/ragsync/signaling/server"
)

// siteHandler is what the embedded signaling server serves at /: the web
// demo.
func siteHandler() http.Handler { return webdist.Handler() }

// embeddedServer is a signaling server running inside the demo.
type embeddedServer struct {
	*server.Running
}

// startServer starts a signaling server listening on addr.
func startServer(addr string, log *slog.Logger) (*embeddedServer, error) {
	r, err := server.Start(addr, server.Config{Logger: log.With("component", "signaling"), Site: siteHandler()})
	if err != nil {
		return nil, fmt.Errorf("embedded signaling server: %w", err)
	}
	return &embeddedServer{r}, nil
}

// LocalURL is the URL this process uses to reach the server: loopback when
// the server listens on every interface or on loopback (so the session's
// default interface policy keeps WebRTC on loopback), else the listen IP.
func (e *embeddedServer) LocalURL() string { return e.URL() }

// ShareURLs are the URLs another machine can use to reach the server: one
// per non-loopback IPv4 address of this machine when it listens on every
// interface, the listen address when it is a specific one, none when it
// listens on loopback only.
func (e *embeddedServer) ShareURLs() []string {
	a := e.Addr()
	port := strconv.Itoa(a.Port)
	switch {
	case a.IP.IsLoopback():
		return nil
	case !a.IP.IsUnspecified():
		return []string{"http://" + net.JoinHostPort(a.IP.String(), port)}
	}
	var out []string
	for _, ip := range lanaddr.IPv4s() {
		out = append(out, "http://"+net.JoinHostPort(ip.String(), port))
	}
	return out
}

// Close shuts the server down and waits for it.
func (e *embeddedServer) Close() { e.Running.Close() }
