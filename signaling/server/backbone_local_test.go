package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ragsync/ragsync/signaling/server/internal/backbone/backbonetest"
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
	backbonetest.Bucket(t, localBucketForTest(t, time.Now, roomTTL))
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

func TestLocalBus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newLocalBackbone(time.Now)
		defer b.Close()
		backbonetest.Bus(t, b)

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
		if st := b.Status(); st.Connected || st.Server != "local" {
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
	conn := func(NATSConnectOptions) (Backbone, error) { return nil, errors.New("no NATS") }
	for _, tc := range []struct {
		cfg  NATSConfig
		want string // in the error; "" for none
	}{
		{NATSConfig{}, ""},
		{NATSConfig{URL: "nats://127.0.0.1:4222", ClusterListen: "127.0.0.1:6222", Connect: conn}, ""},
		{NATSConfig{URL: "nats://127.0.0.1:4222"}, `URL "nats://127.0.0.1:4222" needs NATSConfig.Connect`},
		{NATSConfig{ClusterListen: "127.0.0.1:6222"}, `ClusterListen "127.0.0.1:6222" needs NATSConfig.Embed and Connect`},
		{NATSConfig{ClusterListen: "127.0.0.1:6222", Embed: embed}, `needs NATSConfig.Embed and Connect`},
		{NATSConfig{ClusterRoutes: []string{"nats://127.0.0.2:6222"}}, "need NATSConfig.ClusterListen"},
		{NATSConfig{ClusterListen: "6222", Embed: embed, Connect: conn}, `ClusterListen "6222"`},
		{NATSConfig{ClusterListen: "127.0.0.1:http", Embed: embed, Connect: conn}, `port "http" is not a number`},
		{NATSConfig{ClusterListen: "127.0.0.1:6222", ClusterRoutes: []string{"127.0.0.2"}, Embed: embed, Connect: conn}, `"127.0.0.2" is not nats://host:port`},
		{NATSConfig{ClusterListen: "127.0.0.1:6222", ClusterRoutes: []string{"nats://127.0.0.2:6222"}, Embed: embed, Connect: conn}, ""},
	} {
		_, err := Config{NATS: tc.cfg}.withDefaults()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// The embedder's error is New's.
	_, err := New(Config{NATS: NATSConfig{ClusterListen: "127.0.0.1:6222", Embed: embed, Connect: conn}})
	if err == nil || !strings.Contains(err.Error(), "not here") {
		t.Fatalf("New with a failing embedder: %v", err)
	}
	// So is the connector's.
	_, err = New(Config{NATS: NATSConfig{URL: "nats://127.0.0.1:4222", Connect: conn}})
	if err == nil || !strings.Contains(err.Error(), "no NATS") {
		t.Fatalf("New with a failing connector: %v", err)
	}
}
