package server

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
)

// TestRelayWebSocket: one player on the WebSocket relay and the other on
// the raw one get one stream, both ways; refusals arrive as errors.
func TestRelayWebSocket(t *testing.T) {
	leaktest.Check(t)
	_, url := startServer(t, Config{})
	a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	pa, pb := pairByCode(t, a, b)

	t.Run("bad token", func(t *testing.T) {
		_, err := signaling.DialRelayWebSocket(ctxT(t), url, "nope", signaling.ClientConfig{})
		var se *signaling.Error
		if !errors.As(err, &se) || se.Code != signaling.ErrBadToken {
			t.Fatalf("got %v, want %s", err, signaling.ErrBadToken)
		}
	})
	t.Run("no hello", func(t *testing.T) {
		c, _, err := websocket.Dial(ctxT(t), "ws"+url[len("http"):]+"/relay?v=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if _, data, err := c.Read(ctxT(t)); err != nil || !strings.Contains(string(data), `"type":"relay_challenge"`) {
			t.Fatalf("first message %q %v, want the challenge", data, err)
		}
		if err := c.Write(ctxT(t), websocket.MessageText, []byte(`{"token":1}`)); err != nil {
			t.Fatal(err)
		}
		_, data, err := c.Read(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if m, err := signaling.DecodeMessage(data); err != nil || m.Code != signaling.ErrBadToken {
			t.Fatalf("got %q (%v), want a %s error", data, err, signaling.ErrBadToken)
		}
	})
	t.Run("other origin", func(t *testing.T) {
		h := http.Header{"Origin": {"http://evil.example"}}
		_, err := signaling.DialRelayWebSocket(ctxT(t), url, pa.Token, signaling.ClientConfig{Header: h})
		var se *signaling.Error
		if !errors.As(err, &se) || se.Code != signaling.ErrOriginNotAllowed {
			t.Fatalf("a page of another origin: %v, want %s", err, signaling.ErrOriginNotAllowed)
		}
	})
	t.Run("raw meets websocket", func(t *testing.T) {
		ch := make(chan dialResult, 1)
		go func() {
			c, err := signaling.DialRelayWebSocket(ctxT(t), url, pa.Token, signaling.ClientConfig{})
			ch <- dialResult{c, err}
		}()
		rb := <-dialAsync(t, url, pb.Token)
		ra := <-ch
		if ra.err != nil || rb.err != nil {
			t.Fatalf("websocket %v, raw %v", ra.err, rb.err)
		}
		defer ra.c.Close()
		roundTrip(t, ra.c, rb.c, "hello over two kinds of relay")
		big := make([]byte, 100<<10)
		for i := range big {
			big[i] = byte(i * 7)
		}
		roundTrip(t, rb.c, ra.c, string(big))
		ra.c.Close()
		expectEOF(t, rb.c)
	})
}

// TestOriginRefusedWithMessage: a page of another origin gets an error
// message it can read (origin_not_allowed), not a bare refusal; its own
// origin and the configured ones are let in.
func TestOriginRefusedWithMessage(t *testing.T) {
	leaktest.Check(t)
	_, url := startServer(t, Config{OriginPatterns: []string{"*.example.org"}})
	host := url[len("http://"):]
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"http://evil.example", false},
		{"http://" + host, true},
		{"https://game.example.org", true},
		{"null", false},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			c, err := signaling.Dial(ctxT(t), url, signaling.ClientConfig{Header: http.Header{"Origin": {tc.origin}}})
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				c.Close()
				return
			}
			var se *signaling.Error
			if !errors.As(err, &se) || se.Code != signaling.ErrOriginNotAllowed || !strings.Contains(se.Message, "-origins") {
				t.Fatalf("got %v, want %s with advice", err, signaling.ErrOriginNotAllowed)
			}
		})
	}
}
