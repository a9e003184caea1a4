package server

import (
	"context"
	"errors"
	"time"
)

// backbone is what the nodes of a cluster share, as the cluster logic
// (cluster.go, cluster_route.go, relay_cluster.go) uses it: key-value
// buckets naming the node that holds a room code, the quick-match queue
// or a relay request, and messages on subjects (ragsync.node.<id>, the
// relay streams' subjects). natsBackbone is NATS with JetStream (an
// external deployment or a clustered node's embedded server);
// localBackbone is a single server's, in memory. The logic above is the
// same over both.
type backbone interface {
	// Bucket binds the named bucket, making it if need be, whose entries
	// expire ttl after their last write.
	Bucket(ctx context.Context, name string, ttl time.Duration) (kvBucket, error)
	// Publish sends data to the subscribers of subject, if any, without
	// waiting for them. The backbone owns data from then on.
	Publish(subject string, data []byte) error
	// Request sends data to subject's subscriber and waits up to timeout
	// for its answer (busMsg.Respond). It fails with errNoResponders at
	// once when nothing subscribes to subject.
	Request(subject string, data []byte, timeout time.Duration) ([]byte, error)
	// Subscribe calls f with each message to subject, one at a time in
	// the order they came, on a goroutine of the subscription's own,
	// until unsubscribe is called. Messages beyond maxPending bytes
	// waiting for f are dropped (a slow consumer).
	Subscribe(subject string, maxPending int, f func(*busMsg)) (unsubscribe func(), err error)
	// Status is the backbone's part of /healthz.
	Status() backboneStatus
	// Close ends the backbone's subscriptions and connections, and stops
	// an embedded NATS server.
	Close()
}

// kvBucket is one key-value bucket. Revisions grow with every write to
// the bucket; an entry expired by the bucket's TTL is as absent as a
// deleted one.
type kvBucket interface {
	// Get returns key's entry, or errKeyNotFound.
	Get(ctx context.Context, key string) (kvEntry, error)
	// Create sets key if it is absent (atomically), returning the new
	// revision, or errKeyExists.
	Create(ctx context.Context, key string, value []byte) (uint64, error)
	// Update sets key if its revision is still rev (a compare-and-set),
	// returning the new revision, or errWrongRevision.
	Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error)
	// Put sets key whatever it held, returning the new revision.
	Put(ctx context.Context, key string, value []byte) (uint64, error)
	// Delete removes key: whatever it held with rev 0, else only if its
	// revision is still rev (errWrongRevision if not).
	Delete(ctx context.Context, key string, rev uint64) error
}

// kvEntry is a key's value and the revision that wrote it.
type kvEntry struct {
	Value    []byte
	Revision uint64
}

// busMsg is a message a subscription receives.
type busMsg struct {
	Data  []byte
	reply func([]byte) // answers a Request; nil for a Publish
}

// Respond answers the message if it was a Request; it does nothing for a
// Publish.
func (m *busMsg) Respond(data []byte) {
	if m.reply != nil {
		m.reply(data)
	}
}

// backboneStatus is a backbone's health.
type backboneStatus struct {
	connected bool
	server    string   // "local", "embedded" or the NATS URL (redacted)
	peers     []string // the embedded NATS server's routed peers
}

var (
	errKeyNotFound   = errors.New("signaling: key not found")
	errKeyExists     = errors.New("signaling: key exists")
	errWrongRevision = errors.New("signaling: key's revision changed")
	errNoResponders  = errors.New("signaling: no node subscribes to the subject")
	errBusTimeout    = errors.New("signaling: no answer in time")
	errBusClosed     = errors.New("signaling: the backbone is closed")
)
