package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestRunServesAndShutsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuf
	addrc := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, []string{"-addr", "127.0.0.1:0", "-log-format", "json", "-max-rooms", "1", "-idle-timeout", "30s"}, &logs, nil, func(a string) { addrc <- a })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-errc:
		t.Fatal(err)
	}
	url := "http://" + addr
	tctx := testwait.Context(t) // no limit but the test binary's
	a, err := signaling.Dial(tctx, url, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if l := a.Limits(); l.IdleTimeoutMS != 30000 {
		t.Fatalf("flags not applied: %+v", l)
	}
	if _, err := a.CreateRoom(tctx); err != nil {
		t.Fatal(err)
	}
	b, err := signaling.Dial(tctx, url, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateRoom(tctx); !errors.Is(err, signaling.ErrTooManyRooms) {
		t.Fatalf("-max-rooms 1 not applied: %v", err)
	}
	hc := &http.Client{Transport: &http.Transport{}}
	resp, err := hc.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var st signaling.Stats
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	hc.CloseIdleConnections()
	if st.Rooms != 1 || st.Clients != 2 {
		t.Fatalf("healthz %+v", st)
	}

	cancel() // as SIGTERM would
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := a.Recv(tctx); err == nil {
		// The shutting_down error event may come first.
		if _, err := a.Recv(tctx); !errors.Is(err, signaling.ErrShuttingDown) {
			t.Fatalf("after shutdown: %v", err)
		}
	}
	if !strings.Contains(logs.String(), `"msg":"signaling server stopped"`) {
		t.Fatalf("logs:\n%s", logs.String())
	}
}

func TestRunBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-log-format", "xml"},
		{"-log-level", "loud"},
		{"-max-rooms", "-1"},
		{"extra"},
		{"-addr", "127.0.0.1:99999"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out syncBuf
			if err := run(context.Background(), args, &out, nil, nil); err == nil {
				t.Errorf("run(%q) succeeded", args)
			}
		})
	}
}
