package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Running is a Server serving on a listener of its own, started by Start:
// the signaling server a game or a tool embeds so that players can pair
// without running cmd/signal.
type Running struct {
	*Server
	l    net.Listener
	done chan struct{}
	err  error // Serve's error, once done is closed
}

// Start creates a server with cfg, listens on the TCP address addr (for
// example "127.0.0.1:0" for a free loopback port, or ":8080" to be reachable
// from other machines) and serves in the background until Close. Without
// cfg.Secret the server's relay tokens are signed with a random secret of
// its own, valid for its lifetime.
func Start(addr string, cfg Config) (*Running, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		s.Shutdown(context.Background())
		return nil, fmt.Errorf("signaling: listen: %w", err)
	}
	r := &Running{Server: s, l: l, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := s.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			r.err = err
			s.log.Error("signaling server stopped", "err", err)
		}
	}()
	return r, nil
}

// Addr is the address the server listens on.
func (r *Running) Addr() *net.TCPAddr { return r.l.Addr().(*net.TCPAddr) }

// URL is the URL a client in this process reaches the server at: loopback
// when the server listens on every interface or on loopback (so sessions
// between two processes of one machine stay on loopback), else the listen
// address.
func (r *Running) URL() string {
	a := r.Addr()
	host := "127.0.0.1"
	if !a.IP.IsUnspecified() && !a.IP.IsLoopback() {
		host = a.IP.String()
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(a.Port))
}

// Close shuts the server down gracefully (see Server.Shutdown), waiting at
// most 5 s for relayed streams, and returns once it has stopped: the
// error Serve failed with, if it did, else Shutdown's.
func (r *Running) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.Shutdown(ctx)
	<-r.done
	if r.err != nil {
		return r.err
	}
	return err
}
