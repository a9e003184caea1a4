// Package thintcp tunes TCP connections for a few small messages on a
// lossy link: the relay's dials, the signaling client's WebSocket dials
// and the signaling server's accepted connections (so both sides of the
// signaling WebSocket: join, paired, the offer and the answer). Each
// message is waited for, and a lost segment must not cost seconds. On
// Linux:
//
//   - TCP_THIN_LINEAR_TIMEOUTS: while fewer than four segments are in
//     flight, a retransmission timeout does not double for the first six
//     retransmissions. On a lossy link (at a 500 ms timeout) a message
//     whose segment is lost twice waits 1 s of timeouts instead of 1.5 s,
//     three times 1.5 s instead of 3.5 s.
//   - TCP_RTO_MAX_MS (Linux 6.15 and later) caps the retransmission
//     timeout at 1 s. A handshake whose SYN or SYN-ACK was lost gives the
//     connection a round-trip sample that includes the 1 s SYN timer (an
//     RTT of 1.3 s or, after two losses, 3.6 and 7.5 s were seen on the
//     bad-link test's signaling connections), and its timeout follows: 4
//     to 22 s. A message then lost once stalled its connection for 4 to 7
//     s, the longest wait in pairing on that link. With the cap, a
//     retransmission comes within 1 s; a spurious one costs a segment.
//
// Elsewhere, or where the kernel refuses an option, it does nothing.
package thintcp

import (
	"net"
	"syscall"
)

// Control is a net.Dialer or net.ListenConfig Control function that
// tunes the socket (see the package doc). It never fails: a socket it
// cannot tune is used as it is.
func Control(network, address string, c syscall.RawConn) error {
	_ = c.Control(func(fd uintptr) { setThin(fd) })
	return nil
}

// Set tunes conn if it is a TCP connection (an accepted one, say).
func Set(conn net.Conn) {
	if sc, ok := conn.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = Control("", "", rc)
		}
	}
}
