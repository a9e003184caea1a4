// Package backbonetest checks that an implementation of package
// backbone has the semantics the signaling cluster relies on. The
// in-memory backbone's tests and NATS's run the same checks.
package backbonetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragsync/ragsync/signaling/server/internal/backbone"
)

// Bucket checks the bucket semantics the cluster logic relies on,
// on a bucket with no entries.
func Bucket(t *testing.T, kv backbone.Bucket) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	r1, err := kv.Create(ctx, "ABCD", []byte("n1"))
	if err != nil || r1 == 0 {
		t.Fatalf("create: rev %d, %v", r1, err)
	}
	if _, err := kv.Create(ctx, "ABCD", []byte("n2")); !errors.Is(err, backbone.ErrKeyExists) {
		t.Fatalf("second create: %v, want backbone.ErrKeyExists", err)
	}
	if e, err := kv.Get(ctx, "ABCD"); err != nil || string(e.Value) != "n1" || e.Revision != r1 {
		t.Fatalf("get: %q rev %d, %v; want n1 rev %d", e.Value, e.Revision, err, r1)
	}
	if _, err := kv.Get(ctx, "WXYZ"); !errors.Is(err, backbone.ErrKeyNotFound) {
		t.Fatalf("get of a missing key: %v", err)
	}

	// Update is a compare-and-set on the revision: of two nodes that read
	// r1, one wins.
	r2, err := kv.Update(ctx, "ABCD", []byte("n2"), r1)
	if err != nil || r2 <= r1 {
		t.Fatalf("update: rev %d, %v (after %d)", r2, err, r1)
	}
	if _, err := kv.Update(ctx, "ABCD", []byte("n3"), r1); !errors.Is(err, backbone.ErrWrongRevision) {
		t.Fatalf("update at a stale revision: %v, want backbone.ErrWrongRevision", err)
	}
	if _, err := kv.Update(ctx, "WXYZ", []byte("n3"), r2); !errors.Is(err, backbone.ErrWrongRevision) {
		t.Fatalf("update of a missing key: %v, want backbone.ErrWrongRevision", err)
	}

	// Revisions grow per bucket, over every key.
	r3, err := kv.Create(ctx, "WXYZ", []byte("n1"))
	if err != nil || r3 <= r2 {
		t.Fatalf("create of another key: rev %d, %v (after %d)", r3, err, r2)
	}

	// A delete at a stale revision leaves the key alone.
	if err := kv.Delete(ctx, "ABCD", r1); !errors.Is(err, backbone.ErrWrongRevision) {
		t.Fatalf("delete at a stale revision: %v, want backbone.ErrWrongRevision", err)
	}
	if e, err := kv.Get(ctx, "ABCD"); err != nil || string(e.Value) != "n2" {
		t.Fatalf("after a refused delete: %q, %v", e.Value, err)
	}
	if err := kv.Delete(ctx, "ABCD", r2); err != nil {
		t.Fatalf("delete at its revision: %v", err)
	}
	if _, err := kv.Get(ctx, "ABCD"); !errors.Is(err, backbone.ErrKeyNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	r4, err := kv.Create(ctx, "ABCD", []byte("n3"))
	if err != nil || r4 <= r3 {
		t.Fatalf("create after delete: rev %d, %v", r4, err)
	}

	// Delete with revision 0 and Put take no revision into account.
	if err := kv.Delete(ctx, "WXYZ", 0); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "WXYZ", 0); err != nil {
		t.Fatalf("delete of a missing key: %v", err)
	}
	r5, err := kv.Put(ctx, "ABCD", []byte("n4"))
	if err != nil || r5 <= r4 {
		t.Fatalf("put: rev %d, %v", r5, err)
	}
	if e, _ := kv.Get(ctx, "ABCD"); string(e.Value) != "n4" || e.Revision != r5 {
		t.Fatalf("after put: %q rev %d", e.Value, e.Revision)
	}

	// The bucket keeps its own copy of a value.
	v := []byte("n5")
	kv.Put(ctx, "copy", v)
	v[0] = 'x'
	if e, _ := kv.Get(ctx, "copy"); string(e.Value) != "n5" {
		t.Fatalf("value changed with the caller's slice: %q", e.Value)
	}
}

// Bus checks the messaging the cluster logic relies on: "no
// responders" at once, messages in order, a request's answer.
func Bus(t *testing.T, b backbone.Backbone) {
	if _, err := b.Request("ragsync.node."+"n2", []byte("ping"), 3*time.Second); !errors.Is(err, backbone.ErrNoResponders) {
		t.Fatalf("request with no subscriber: %v, want backbone.ErrNoResponders", err)
	}
	if err := b.Publish("ragsync.node."+"n2", []byte("lost")); err != nil {
		t.Fatalf("publish with no subscriber: %v", err)
	}

	var mu sync.Mutex
	var got []string
	unsub, err := b.Subscribe("ragsync.node."+"n1", 1<<20, func(m *backbone.Msg) {
		mu.Lock()
		got = append(got, string(m.Data))
		mu.Unlock()
		if s, ok := strings.CutPrefix(string(m.Data), "ask "); ok {
			m.Respond([]byte("answer " + s))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := b.Publish("ragsync.node."+"n1", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	a, err := b.Request("ragsync.node."+"n1", []byte("ask 1"), 3*time.Second)
	if err != nil || string(a) != "answer 1" {
		t.Fatalf("request: %q, %v", a, err)
	}
	mu.Lock()
	if want := "0 1 2 3 4 ask 1"; strings.Join(got, " ") != want {
		t.Errorf("delivered %q, want %q (in order)", got, want)
	}
	mu.Unlock()
	unsub()
	if _, err := b.Request("ragsync.node."+"n1", []byte("ask 2"), 3*time.Second); !errors.Is(err, backbone.ErrNoResponders) {
		t.Fatalf("request after unsubscribe: %v, want backbone.ErrNoResponders", err)
	}
}
