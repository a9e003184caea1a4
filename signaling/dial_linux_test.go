package signaling

import (
	"context"
	"net"
	"net/http"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDefaultClientTunesTCP: with no HTTPClient, the signaling WebSocket
// is dialled with TCP tuned for small messages on a lossy link (see
// internal/thintcp), as the server's side is: the join and the answer
// leave from this side.
func TestDefaultClientTunesTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			defer c.Close()
			c.Read(make([]byte, 1))
		}
	}()
	hc := dialOptions(&ClientConfig{}).HTTPClient
	tr, ok := hc.Transport.(*http.Transport)
	if !ok || tr.DialContext == nil {
		t.Fatalf("default HTTP client transport %T has no dialer of its own", hc.Transport)
	}
	c, err := tr.DialContext(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
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
		t.Errorf("TCP_THIN_LINEAR_TIMEOUTS = %d on the default client's connection, want 1", v)
	}
}
