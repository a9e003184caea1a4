package signaling

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestDialHedgesALostConnection: the first connection Dial opens goes
// nowhere (a lost SYN or request on a lossy link: the server never
// answers); Dial starts another after DialHedge and connects with it, and
// the stuck one is given up.
func TestDialHedgesALostConnection(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		b, _ := AppendMessage(nil, &Message{Type: TypeWelcome, V: ProtocolVersion})
		if c.Write(r.Context(), websocket.MessageText, b) != nil {
			return
		}
		c.Read(r.Context()) // until the client closes
	}))
	defer srv.Close()
	hole, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	holeClosed := make(chan struct{})
	go func() {
		c, err := hole.Accept()
		if err != nil {
			return
		}
		var b [4096]byte
		for {
			if _, err := c.Read(b[:]); err != nil {
				close(holeClosed)
				return
			}
		}
	}()
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		if dials.Add(1) == 1 {
			return d.DialContext(ctx, "tcp", hole.Addr().String())
		}
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := Dial(ctx, srv.URL, ClientConfig{HTTPClient: &http.Client{Transport: tr}, DialHedge: 10 * time.Millisecond, KeepAlive: -1})
	if err != nil {
		t.Fatalf("Dial with its first connection lost: %v", err)
	}
	defer cl.Close()
	if n := dials.Load(); n < 2 {
		t.Errorf("%d connections dialled, want a second one", n)
	}
	select {
	case <-holeClosed:
	case <-time.After(20 * time.Second):
		t.Error("the stuck connection was not closed once another connected")
	}
}
