package thintcp

import "golang.org/x/sys/unix"

// tcpRTOMaxMS is Linux's TCP_RTO_MAX_MS (6.15 and later; golang.org/x/sys
// does not name it yet): the socket's largest retransmission timeout, in
// ms, at least 1000.
const tcpRTOMaxMS = 44

// rtoMax is the retransmission timeout cap set by setThin, the smallest
// Linux allows.
const rtoMax = 1000

func setThin(fd uintptr) {
	_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_THIN_LINEAR_TIMEOUTS, 1)
	// An older kernel refuses the option; the socket is used as it is.
	_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, tcpRTOMaxMS, rtoMax)
}
