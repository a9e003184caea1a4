package testkit

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

func TestClock(t *testing.T) {
	c := NewClock(time.Time{})
	if !c.Now().Equal(Epoch) {
		t.Fatalf("starts at %v, want %v", c.Now(), Epoch)
	}
	tm := c.NewTimer(time.Second)
	c.Advance(999 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("fired early")
	default:
	}
	c.Advance(time.Millisecond)
	select {
	case at := <-tm.C():
		if !at.Equal(Epoch.Add(time.Second)) {
			t.Errorf("fired at %v", at)
		}
	default:
		t.Fatal("did not fire at its time")
	}
	if tm.Stop() {
		t.Error("Stop of a fired timer reports it active")
	}
	// Reset re-arms; Stop leaves no stale tick behind.
	if tm.Reset(time.Second) {
		t.Error("Reset of a fired timer reports it active")
	}
	c.Advance(2 * time.Second)
	if len(tm.ch) != 1 {
		t.Error("the re-armed timer did not fire")
	}
	tm.Stop()
	select {
	case <-tm.C():
		t.Error("a stale tick after Stop")
	default:
	}
	// A clock stepped back does not fire.
	tm.Reset(time.Second)
	c.Set(c.Now().Add(-time.Hour))
	select {
	case <-tm.C():
		t.Error("fired on a step back")
	default:
	}
	if !tm.Stop() {
		t.Error("Stop of an armed timer reports it inactive")
	}
}

func TestListenerAndServeMem(t *testing.T) {
	// In a bubble: everything blocks durably, time is virtual.
	synctest.Test(t, func(t *testing.T) {
		url, hc := ServeMem(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "hello "+r.URL.Path)
		}))
		resp, err := hc.Get(url + "/x")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "hello /x" {
			t.Errorf("got %q", b)
		}
	})
	l := NewListener("a.test:1")
	if l.Addr().String() != "a.test:1" || l.Addr().Network() != "pipe" {
		t.Errorf("addr %v %v", l.Addr().Network(), l.Addr())
	}
	l.Close()
	if _, err := l.Accept(); err == nil {
		t.Error("Accept after Close")
	}
	if _, err := l.Dial(context.Background(), "tcp", "x"); err == nil {
		t.Error("Dial after Close")
	}
}

func TestServe(t *testing.T) {
	url := Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Errorf("got %q", b)
	}
}
