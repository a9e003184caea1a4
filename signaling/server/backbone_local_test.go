package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func localBucketForTest(t *testing.T, now func() time.Time, ttl time.Duration) kvBucket {
	t.Helper()
	b := newLocalBackbone(now)
	t.Cleanup(b.Close)
	kv, err := b.Bucket(context.Background(), roomsBucket, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func TestLocalBucket(t *testing.T) {
	testBucket(t, localBucketForTest(t, time.Now, roomTTL))
}

// testBucket checks the kvBucket semantics the cluster logic relies on,
// on a bucket with no entries.
func testBucket(t *testing.T, kv kvBucket) {
	ctx, cancel := context.WithTimeout(context.Background(), kvTimeout)
	defer cancel()

	r1, err := kv.Create(ctx, "ABCD", []byte("n1"))
	if err != nil || r1 == 0 {
		t.Fatalf("create: rev %d, %v", r1, err)
	}
	if _, err := kv.Create(ctx, "ABCD", []byte("n2")); !errors.Is(err, errKeyExists) {
		t.Fatalf("second create: %v, want errKeyExists", err)
	}
	if e, err := kv.Get(ctx, "ABCD"); err != nil || string(e.Value) != "n1" || e.Revision != r1 {
		t.Fatalf("get: %q rev %d, %v; want n1 rev %d", e.Value, e.Revision, err, r1)
	}
	if _, err := kv.Get(ctx, "WXYZ"); !errors.Is(err, errKeyNotFound) {
		t.Fatalf("get of a missing key: %v", err)
	}

	// Update is a compare-and-set on the revision: of two nodes that read
	// r1, one wins.
	r2, err := kv.Update(ctx, "ABCD", []byte("n2"), r1)
	if err != nil || r2 <= r1 {
		t.Fatalf("update: rev %d, %v (after %d)", r2, err, r1)
	}
	if _, err := kv.Update(ctx, "ABCD", []byte("n3"), r1); !errors.Is(err, errWrongRevision) {
		t.Fatalf("update at a stale revision: %v, want errWrongRevision", err)
	}
	if _, err := kv.Update(ctx, "WXYZ", []byte("n3"), r2); !errors.Is(err, errWrongRevision) {
		t.Fatalf("update of a missing key: %v, want errWrongRevision", err)
	}

	// Revisions grow per bucket, over every key.
	r3, err := kv.Create(ctx, "WXYZ", []byte("n1"))
	if err != nil || r3 <= r2 {
		t.Fatalf("create of another key: rev %d, %v (after %d)", r3, err, r2)
	}

	// A delete at a stale revision leaves the key alone.
	if err := kv.Delete(ctx, "ABCD", r1); !errors.Is(err, errWrongRevision) {
		t.Fatalf("delete at a stale revision: %v, want errWrongRevision", err)
	}
	if e, err := kv.Get(ctx, "ABCD"); err != nil || string(e.Value) != "n2" {
		t.Fatalf("after a refused delete: %q, %v", e.Value, err)
	}
	if err := kv.Delete(ctx, "ABCD", r2); err != nil {
		t.Fatalf("delete at its revision: %v", err)
	}
	if _, err := kv.Get(ctx, "ABCD"); !errors.Is(err, errKeyNotFound) {
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

func TestLocalBucketTTL(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	kv := localBucketForTest(t, clk.Now, roomTTL)

	r1, err := kv.Create(ctx, "ABCD", []byte("n1"))
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(roomTTL - time.Second)
	// A refresh (its owner's Update) gives the entry a whole TTL again.
	r2, err := kv.Update(ctx, "ABCD", []byte("n1"), r1)
	if err != nil {
		t.Fatalf("refresh before expiry: %v", err)
	}
	clk.advance(roomTTL - time.Second)
	if e, err := kv.Get(ctx, "ABCD"); err != nil || e.Revision != r2 {
		t.Fatalf("refreshed entry before its new expiry: rev %d, %v", e.Revision, err)
	}
	clk.advance(time.Second)
	if _, err := kv.Get(ctx, "ABCD"); !errors.Is(err, errKeyNotFound) {
		t.Fatalf("get after the TTL: %v, want errKeyNotFound", err)
	}
	// Expired, the entry's revision no longer matches anything: its
	// owner's late refresh or release fails, and another node creates it.
	if _, err := kv.Update(ctx, "ABCD", []byte("n1"), r2); !errors.Is(err, errWrongRevision) {
		t.Fatalf("update of an expired entry: %v, want errWrongRevision", err)
	}
	if err := kv.Delete(ctx, "ABCD", r2); !errors.Is(err, errWrongRevision) {
		t.Fatalf("delete of an expired entry: %v, want errWrongRevision", err)
	}
	if _, err := kv.Create(ctx, "ABCD", []byte("n2")); err != nil {
		t.Fatalf("create over an expired entry: %v", err)
	}

	// Expired entries nobody reads are swept as the bucket is written.
	lb := kv.(*localBucket)
	for i := range 100 {
		kv.Put(ctx, fmt.Sprint("old", i), nil)
	}
	clk.advance(roomTTL)
	for i := range 200 {
		kv.Put(ctx, fmt.Sprint("new", i), nil)
	}
	lb.mu.Lock()
	n := len(lb.m)
	lb.mu.Unlock()
	if n > 200 {
		t.Fatalf("%d entries kept, want the 200 live ones", n)
	}
}

// testBus checks the messaging the cluster logic relies on: "no
// responders" at once, messages in order, a request's answer.
func testBus(t *testing.T, b backbone) {
	if _, err := b.Request(subjectRoot+"n2", []byte("ping"), reqTimeout); !errors.Is(err, errNoResponders) {
		t.Fatalf("request with no subscriber: %v, want errNoResponders", err)
	}
	if err := b.Publish(subjectRoot+"n2", []byte("lost")); err != nil {
		t.Fatalf("publish with no subscriber: %v", err)
	}

	var mu sync.Mutex
	var got []string
	unsub, err := b.Subscribe(subjectRoot+"n1", 1<<20, func(m *busMsg) {
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
		if err := b.Publish(subjectRoot+"n1", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	a, err := b.Request(subjectRoot+"n1", []byte("ask 1"), reqTimeout)
	if err != nil || string(a) != "answer 1" {
		t.Fatalf("request: %q, %v", a, err)
	}
	mu.Lock()
	if want := "0 1 2 3 4 ask 1"; strings.Join(got, " ") != want {
		t.Errorf("delivered %q, want %q (in order)", got, want)
	}
	mu.Unlock()
	unsub()
	if _, err := b.Request(subjectRoot+"n1", []byte("ask 2"), reqTimeout); !errors.Is(err, errNoResponders) {
		t.Fatalf("request after unsubscribe: %v, want errNoResponders", err)
	}
}

func TestLocalBus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newLocalBackbone(time.Now)
		defer b.Close()
		testBus(t, b)

		// A second answer is ignored.
		unsub, _ := b.Subscribe(subjectRoot+"n1", 1<<20, func(m *busMsg) {
			m.Respond([]byte("first"))
			m.Respond([]byte("second"))
		})
		if a, err := b.Request(subjectRoot+"n1", nil, reqTimeout); err != nil || string(a) != "first" {
			t.Fatalf("request answered twice: %q, %v", a, err)
		}
		unsub()

		// A subscriber that does not answer: the request times out, on
		// the bubble's clock.
		unsubMute, _ := b.Subscribe(subjectRoot+"mute", 1<<20, func(*busMsg) {})
		start := time.Now()
		if _, err := b.Request(subjectRoot+"mute", []byte("hello"), reqTimeout); !errors.Is(err, errBusTimeout) {
			t.Fatalf("request to a mute subscriber: %v, want errBusTimeout", err)
		}
		if d := time.Since(start); d != reqTimeout {
			t.Errorf("timed out after %v, want %v", d, reqTimeout)
		}
		unsubMute()

		b.Close()
		if err := b.Publish(subjectRoot+"n1", nil); !errors.Is(err, errBusClosed) {
			t.Fatalf("publish after close: %v", err)
		}
		if _, err := b.Subscribe(subjectRoot+"n1", 0, func(*busMsg) {}); !errors.Is(err, errBusClosed) {
			t.Fatalf("subscribe after close: %v", err)
		}
		if st := b.Status(); st.connected || st.server != "local" {
			t.Fatalf("status after close: %+v", st)
		}
	})
}

// TestLocalBusSlowConsumer: a subscriber that does not keep up loses the
// messages beyond its pending bytes, and never holds up the publisher.
func TestLocalBusSlowConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newLocalBackbone(time.Now)
		defer b.Close()
		release := make(chan struct{})
		n := 0
		_, err := b.Subscribe("ragsync.relay.x", 100, func(m *busMsg) {
			<-release
			n++
		})
		if err != nil {
			t.Fatal(err)
		}
		b.Publish("ragsync.relay.x", make([]byte, 10))
		synctest.Wait() // the first message is in the handler
		for range 20 {
			b.Publish("ragsync.relay.x", make([]byte, 10))
		}
		close(release)
		synctest.Wait()
		if n != 11 {
			t.Fatalf("%d messages delivered, want 11 (1 in the handler + 100 bytes waiting)", n)
		}
	})
}

// TestSingleServerLocal: the zero NATSConfig is a single server on the
// local backbone, ready at once.
func TestSingleServerLocal(t *testing.T) {
	s, err := New(Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	st := s.Stats()
	if st.Status != "ok" || st.NATS == nil || st.NATS.Server != "local" || !st.NATS.JetStream || !st.NATS.Connected || st.NATS.Nodes != 1 {
		t.Fatalf("stats right after New: %+v, nats %+v", st, st.NATS)
	}
}

func TestNATSConfigValidate(t *testing.T) {
	embed := func(EmbedOptions) (EmbeddedNATS, error) { return nil, errors.New("not here") }
	for _, tc := range []struct {
		cfg  NATSConfig
		want string // in the error; "" for none
	}{
		{NATSConfig{}, ""},
		{NATSConfig{URL: "nats://127.0.0.1:4222", ClusterListen: "127.0.0.1:6222"}, ""},
		{NATSConfig{ClusterListen: "127.0.0.1:6222"}, `ClusterListen "127.0.0.1:6222" needs NATSConfig.Embed`},
		{NATSConfig{ClusterRoutes: []string{"nats://127.0.0.2:6222"}}, "need NATSConfig.ClusterListen"},
		{NATSConfig{ClusterListen: "6222", Embed: embed}, `ClusterListen "6222"`},
		{NATSConfig{ClusterListen: "127.0.0.1:http", Embed: embed}, `port "http" is not a number`},
		{NATSConfig{ClusterListen: "127.0.0.1:6222", ClusterRoutes: []string{"127.0.0.2"}, Embed: embed}, `"127.0.0.2" is not nats://host:port`},
		{NATSConfig{ClusterListen: "127.0.0.1:6222", ClusterRoutes: []string{"nats://127.0.0.2:6222"}, Embed: embed}, ""},
	} {
		_, err := Config{NATS: tc.cfg}.withDefaults()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// The embedder's error is New's.
	_, err := New(Config{NATS: NATSConfig{ClusterListen: "127.0.0.1:6222", Embed: embed}})
	if err == nil || !strings.Contains(err.Error(), "not here") {
		t.Fatalf("New with a failing embedder: %v", err)
	}
}
