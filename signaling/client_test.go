package signaling

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/ragsync/ragsync/internal/leaktest"
)

// A server that welcomes and then goes silent is detected by keepalive.
func TestClientDetectsSilentServer(t *testing.T) {
	leaktest.Check(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		b, _ := AppendMessage(nil, &Message{Type: TypeWelcome, V: ProtocolVersion})
		c.Write(r.Context(), websocket.MessageText, b)
		<-release // never reads, never answers pings
	})}
	go hs.Serve(l)
	defer hs.Close()
	defer close(release)
	c, err := Dial(ctxT(t), "ws://"+l.Addr().String(), ClientConfig{KeepAlive: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Recv(ctxT(t)); !errors.Is(err, ErrServerUnresponsive) {
		t.Fatalf("Recv = %v, want ErrServerUnresponsive", err)
	}
}

// A client whose application is slow to call Recv is not mistaken for one
// whose server is dead. It runs in virtual time (synctest, the server on an
// in-memory listener): keepalive periods are exact, so a loaded machine
// cannot delay a pong past them.
func TestClientSlowRecvKeepsConnection(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, testClientSlowRecvKeepsConnection)
}

func testClientSlowRecvKeepsConnection(t *testing.T) {
	_, url, mn := startMemServer(t, Config{})
	a := dial(t, url, mn.client(ClientConfig{KeepAlive: 150 * time.Millisecond, EventBuffer: 1}))
	b := dial(t, url, mn.client(ClientConfig{KeepAlive: 150 * time.Millisecond}))
	code, err := a.CreateRoom(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.JoinRoom(ctxT(t), string(code)); err != nil {
		t.Fatal(err)
	}
	next(t, b, EventPaired)
	for i := 0; i < 3; i++ {
		if err := b.SendCandidate(ctxT(t), Candidate{Candidate: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // a's buffer is full for six keepalive periods
	next(t, a, EventPaired)
	for i := 0; i < 3; i++ {
		next(t, a, EventCandidate)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.Recv(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("connection ended: %v", err)
	}
}

func TestEndpointURL(t *testing.T) {
	for _, tc := range []struct{ in, path, want string }{
		{"http://127.0.0.1:8080", "/ws", "ws://127.0.0.1:8080/ws?v=1"},
		{"ws://127.0.0.1:8080/", "/ws", "ws://127.0.0.1:8080/ws?v=1"},
		{"https://example.test/signal/ws", "/ws", "wss://example.test/signal/ws?v=1"},
		{"ws://127.0.0.1:8080/ws?v=7&x=1", "/ws", "ws://127.0.0.1:8080/ws?v=1&x=1"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := endpointURL(tc.in, tc.path, true)
			if err != nil || got != tc.want {
				t.Errorf("endpointURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	for _, tc := range []struct{ in, want string }{
		{"ws://127.0.0.1:8080", "http://127.0.0.1:8080/relay?v=1"},
		{"wss://example.test/signal/ws", "https://example.test/signal/relay?v=1"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := endpointURL(tc.in, "/relay", false)
			if err != nil || got != tc.want {
				t.Errorf("relay endpointURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{"ftp://x", "127.0.0.1:8080", "ws://", "::"} {
		t.Run(bad, func(t *testing.T) {
			if _, err := endpointURL(bad, "/ws", true); err == nil {
				t.Errorf("endpointURL(%q) succeeded", bad)
			}
		})
	}
}

// The client refuses to send a message over the size the server
// announced, instead of having the server close the connection.
func TestClientMessageTooBig(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{MaxMessageBytes: 1024})
	a, b := dial(t, url, ClientConfig{}), dial(t, url, ClientConfig{})
	pairByCode(t, a, b)
	big := make([]byte, 1100)
	for i := range big {
		big[i] = 'x'
	}
	err := a.SendOffer(ctxT(t), string(big))
	var e *Error
	if !errors.As(err, &e) || e.Code != ErrMessageTooBig || e.Ref != TypeOffer {
		t.Fatalf("oversized offer: %v", err)
	}
	err = a.SendCandidate(ctxT(t), Candidate{Candidate: string(big[:1000])})
	if !errors.Is(err, ErrMessageTooBig) {
		t.Fatalf("oversized candidate: %v", err)
	}
	exchange(t, a, b) // still connected
	if st := s.Stats(); st.LimitViolations != 0 {
		t.Fatalf("stats %+v", st)
	}
}
