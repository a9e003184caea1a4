// Package thintcp marks TCP connections as thin streams, for the relay's
// dials and the signaling server's accepted connections (so the server's
// side of the signaling WebSocket: paired, the offer and the answer on
// their way to a player): a few small messages in flight, each waited
// for. On Linux that is TCP_THIN_LINEAR_TIMEOUTS: while fewer than
// four segments are in flight, a retransmission timeout does not double
// for the first six retransmissions. On a lossy link (at a 500 ms
// timeout) a message whose segment is lost twice waits 1 s of timeouts
// instead of 1.5 s, three times 1.5 s instead of 3.5 s. Elsewhere it does
// nothing.
package thintcp

import (
	"net"
	"syscall"
)

// Control is a net.Dialer or net.ListenConfig Control function that
// marks the socket thin (see the package doc). It never fails: a socket
// it cannot mark is used as it is.
func Control(network, address string, c syscall.RawConn) error {
	_ = c.Control(func(fd uintptr) { setThin(fd) })
	return nil
}

// Set marks conn thin if it is a TCP connection (an accepted one, say).
func Set(conn net.Conn) {
	if sc, ok := conn.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = Control("", "", rc)
		}
	}
}
