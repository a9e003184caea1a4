package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
)

func TestStart(t *testing.T) {
	leaktest.Check(t)
	r, err := Start("127.0.0.1:0", Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.URL(), "http://127.0.0.1:") || r.Addr().Port == 0 {
		t.Fatalf("URL %s, addr %v", r.URL(), r.Addr())
	}
	resp, err := http.Get(r.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz: %s", resp.Status)
	}
	a, b := dial(t, r.URL(), signaling.ClientConfig{}), dial(t, r.URL(), signaling.ClientConfig{})
	pairByCode(t, a, b)
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := Start("127.0.0.1:-1", Config{}); err == nil {
		t.Error("a bad address was accepted")
	}
}
