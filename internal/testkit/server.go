package testkit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/ragsync/ragsync/internal/testwait"
)

// Serve serves h over HTTP on 127.0.0.1:0 for the test and returns its
// base URL ("http://127.0.0.1:port"). Cleanup shuts the server down,
// waiting for its handlers (WebSockets included, if h tracks them).
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, l, h)
	return "http://" + l.Addr().String()
}

// ServeMem serves h over HTTP on an in-memory Listener (for a
// testing/synctest bubble: call it inside) and returns the base URL
// ("http://mem.test") and a client that reaches it. Cleanup shuts the
// server down.
func ServeMem(t testing.TB, h http.Handler) (string, *http.Client) {
	t.Helper()
	l := NewListener("mem.test:80")
	serve(t, l, h)
	tr := &http.Transport{DialContext: l.Dial}
	t.Cleanup(tr.CloseIdleConnections)
	return "http://mem.test", &http.Client{Transport: tr}
}

func serve(t testing.TB, l net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		// Shutdown waits for the handlers; Close then ends what an
		// upgraded connection (hijacked) still holds.
		ctx, cancel := testwait.ContextFrom(context.Background(), t)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("testkit: serving: %v", err)
		}
	})
}
