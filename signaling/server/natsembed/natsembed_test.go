package natsembed

import (
	"net"
	"strings"
	"testing"
)

// TestStartPortInUse: a route port another socket holds fails Start with
// the reason, not only a timeout.
func TestStartPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := Start(Options{Name: "n1", Listen: l.Addr().String(), Routes: []string{"nats://" + l.Addr().String()}, StoreDir: t.TempDir()})
	if err == nil {
		s.Shutdown()
		t.Fatal("started on a port in use")
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error without the reason: %v", err)
	}
	t.Log(err)
}

// TestStartShutdown: a single node starts on a free port, serves an
// in-process connection, and shuts down.
func TestStartShutdown(t *testing.T) {
	s, err := Start(Options{Name: "n1", Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.InProcessConn()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if p := s.Peers(); len(p) != 0 {
		t.Errorf("peers of a lone node: %v", p)
	}
	s.Shutdown()
}
