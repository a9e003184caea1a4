package server

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
	"github.com/ragsync/ragsync/signaling"
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
		b, _ := signaling.AppendMessage(nil, &signaling.Message{Type: signaling.TypeWelcome, V: signaling.ProtocolVersion})
		c.Write(r.Context(), websocket.MessageText, b)
		<-release // never reads, never answers pings
	})}
	go hs.Serve(l)
	defer hs.Close()
	defer close(release)
	c, err := signaling.Dial(ctxT(t), "ws://"+l.Addr().String(), signaling.ClientConfig{KeepAlive: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Recv(ctxT(t)); !errors.Is(err, signaling.ErrServerUnresponsive) {
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
	a := dial(t, url, mn.client(signaling.ClientConfig{KeepAlive: 150 * time.Millisecond, EventBuffer: 1}))
	b := dial(t, url, mn.client(signaling.ClientConfig{KeepAlive: 150 * time.Millisecond}))
	code, err := a.CreateRoom(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.JoinRoom(ctxT(t), string(code)); err != nil {
		t.Fatal(err)
	}
	next(t, b, signaling.EventPaired)
	for i := 0; i < 3; i++ {
		if err := b.SendCandidate(ctxT(t), signaling.Candidate{Candidate: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // a's buffer is full for six keepalive periods
	next(t, a, signaling.EventPaired)
	for i := 0; i < 3; i++ {
		next(t, a, signaling.EventCandidate)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.Recv(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("connection ended: %v", err)
	}
}

// The client refuses to send a message over the size the server
// announced, instead of having the server close the connection.
func TestClientMessageTooBig(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{MaxMessageBytes: 1024})
	a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	pairByCode(t, a, b)
	big := make([]byte, 1100)
	for i := range big {
		big[i] = 'x'
	}
	err := a.SendOffer(ctxT(t), string(big))
	var e *signaling.Error
	if !errors.As(err, &e) || e.Code != signaling.ErrMessageTooBig || e.Ref != signaling.TypeOffer {
		t.Fatalf("oversized offer: %v", err)
	}
	err = a.SendCandidate(ctxT(t), signaling.Candidate{Candidate: string(big[:1000])})
	if !errors.Is(err, signaling.ErrMessageTooBig) {
		t.Fatalf("oversized candidate: %v", err)
	}
	exchange(t, a, b) // still connected
	if st := s.Stats(); st.LimitViolations != 0 {
		t.Fatalf("stats %+v", st)
	}
}
