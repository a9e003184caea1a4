//go:build linux

package thintcp

import (
	"errors"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestThin: a dialled connection (Control) and an accepted one (Set) are
// marked thin.
func TestThin(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := net.Dialer{Control: Control}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	Set(a)
	for name, conn := range map[string]net.Conn{"dialled": c, "accepted": a} {
		rc, err := conn.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var v int
		var gerr error
		if err := rc.Control(func(fd uintptr) {
			v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_THIN_LINEAR_TIMEOUTS)
		}); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		if v != 1 {
			t.Errorf("%s connection: TCP_THIN_LINEAR_TIMEOUTS = %d, want 1", name, v)
		}
		if err := rc.Control(func(fd uintptr) {
			v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, tcpRTOMaxMS)
		}); err != nil {
			t.Fatal(err)
		}
		switch {
		case errors.Is(gerr, unix.ENOPROTOOPT):
			t.Logf("%s connection: this kernel has no TCP_RTO_MAX_MS (Linux 6.15)", name)
		case gerr != nil:
			t.Fatal(gerr)
		case v != rtoMax:
			t.Errorf("%s connection: TCP_RTO_MAX_MS = %d, want %d", name, v, rtoMax)
		}
	}
}
