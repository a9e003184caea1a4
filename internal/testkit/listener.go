package testkit

import (
	"context"
	"net"
	"sync"
)

// Listener is an in-memory net.Listener: Dial returns one end of a
// net.Pipe and Accept the other. Nothing touches a socket, and blocking
// on it is durable in a testing/synctest bubble.
type Listener struct {
	addr   pipeAddr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// NewListener returns a Listener whose Addr is addr ("host:port"; the
// host name a client dials, e.g. "signal.test:80").
func NewListener(addr string) *Listener {
	return &Listener{addr: pipeAddr(addr), conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for the next Dial.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops the listener: Accept and Dial return net.ErrClosed.
// Connections already made stay open.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr returns the address given to NewListener (network "pipe").
func (l *Listener) Addr() net.Addr { return l.addr }

// Dial connects to the listener, whatever network and address it is
// given: it has the signature of net.Dialer.DialContext, for an
// http.Transport or any injected dialer. It waits for Accept.
func (l *Listener) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr string

func (pipeAddr) Network() string  { return "pipe" }
func (a pipeAddr) String() string { return string(a) }
