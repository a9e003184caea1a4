package natsclient

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	bbk "github.com/ragsync/ragsync/signaling/server/internal/backbone"
	"github.com/ragsync/ragsync/signaling/server/internal/backbone/backbonetest"
	"github.com/ragsync/ragsync/signaling/server/natsembed"
)

// TestNATSBackbone runs the backbone checks of the local store on NATS (a
// two-node embedded cluster), so that the two keep the same semantics.
func TestNATSBackbone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS cluster")
	}
	var addrs, routes []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		routes = append(routes, "nats://"+l.Addr().String())
		l.Close()
	}
	var bs []*natsBackbone
	for i, a := range addrs {
		ns, err := natsembed.Start(natsembed.Options{Name: fmt.Sprint("t", i), Listen: a, Routes: routes, StoreDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect("", nats.InProcessServer(ns))
		if err != nil {
			ns.Shutdown()
			t.Fatal(err)
		}
		b, err := newBackbone(nc, ns, 1)
		if err != nil {
			nc.Close()
			ns.Shutdown()
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		bs = append(bs, b)
	}

	// The bucket is made on one node, once JetStream has its meta leader.
	var kv bbk.Bucket
	for deadline := time.Now().Add(30 * time.Second); kv == nil; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var err error
		kv, err = bs[0].Bucket(ctx, "ragsync_rooms", 10*time.Minute)
		cancel()
		if err != nil && time.Now().After(deadline) {
			t.Fatalf("bucket: %v", err)
		}
	}
	if st := bs[0].Status(); !st.Connected || st.Server != "embedded" || len(st.Peers) != 1 || st.Peers[0] != "t1" {
		t.Errorf("status: %+v, want embedded with peer t1", st)
	}
	t.Run("bucket", func(t *testing.T) { backbonetest.Bucket(t, kv) })
	t.Run("bus", func(t *testing.T) { backbonetest.Bus(t, bs[0]) })
}
