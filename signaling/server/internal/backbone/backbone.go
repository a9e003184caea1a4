// Package backbone is what the nodes of a signaling cluster share, as the
// cluster logic of package signaling/server uses it: key-value buckets
// naming the node that holds a room code, the quick-match queue or a
// relay request, and messages on subjects (ragsync.node.<id>, the relay
// streams' subjects).
//
// Two implement it: the server's own in-memory backbone of a single
// server, and package signaling/server/natsclient's NATS with JetStream
// (an external deployment, or a clustered node's embedded server). The
// interface lives here, and not in signaling/server, so that the NATS one
// can be kept out of that package, and out of programs that do not
// cluster.
package backbone

import (
	"context"
	"errors"
	"net"
	"time"
)

// Backbone is a node's connection to what the nodes share. The cluster
// logic above it is the same over every implementation.
type Backbone interface {
	// Bucket binds the named bucket, making it if need be, whose entries
	// expire ttl after their last write. Its reads must see every write
	// made before, on any node (no stale replica reads).
	Bucket(ctx context.Context, name string, ttl time.Duration) (Bucket, error)
	// Publish sends data to the subscribers of subject, if any, without
	// waiting for them. The backbone owns data from then on.
	Publish(subject string, data []byte) error
	// Request sends data to subject's subscriber and waits up to timeout
	// for its answer (Msg.Respond). It fails with ErrNoResponders at
	// once when nothing subscribes to subject.
	Request(subject string, data []byte, timeout time.Duration) ([]byte, error)
	// Subscribe calls f with each message to subject, one at a time in
	// the order they came, on a goroutine of the subscription's own,
	// until unsubscribe is called. Messages beyond maxPending bytes
	// waiting for f are dropped (a slow consumer).
	Subscribe(subject string, maxPending int, f func(*Msg)) (unsubscribe func(), err error)
	// Status is the backbone's part of /healthz.
	Status() Status
	// Close ends the backbone's subscriptions and connections, and stops
	// an embedded NATS server.
	Close()
}

// Bucket is one key-value bucket. Revisions grow with every write to the
// bucket; an entry expired by the bucket's TTL is as absent as a deleted
// one.
type Bucket interface {
	// Get returns key's entry, or ErrKeyNotFound.
	Get(ctx context.Context, key string) (Entry, error)
	// Create sets key if it is absent (atomically), returning the new
	// revision, or ErrKeyExists.
	Create(ctx context.Context, key string, value []byte) (uint64, error)
	// Update sets key if its revision is still rev (a compare-and-set),
	// returning the new revision, or ErrWrongRevision.
	Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error)
	// Put sets key whatever it held, returning the new revision.
	Put(ctx context.Context, key string, value []byte) (uint64, error)
	// Delete removes key: whatever it held with rev 0, else only if its
	// revision is still rev (ErrWrongRevision if not).
	Delete(ctx context.Context, key string, rev uint64) error
}

// Entry is a key's value and the revision that wrote it.
type Entry struct {
	Value    []byte
	Revision uint64
}

// Msg is a message a subscription receives.
type Msg struct {
	Data []byte
	// Reply answers a Request; nil for a Publish.
	Reply func([]byte)
}

// Respond answers the message if it was a Request; it does nothing for a
// Publish.
func (m *Msg) Respond(data []byte) {
	if m.Reply != nil {
		m.Reply(data)
	}
}

// Status is a backbone's health.
type Status struct {
	Connected bool
	Server    string   // "local", "embedded" or the NATS URL (redacted)
	Peers     []string // the embedded NATS server's routed peers
	// Sent is how many messages the node has sent on the backbone, its
	// store's requests (JetStream's API) included.
	Sent uint64
}

// Embedded is a NATS server running in this process, ready for
// connections: signaling/server's EmbeddedNATS and natsembed's Server are
// this same unnamed interface type.
type Embedded = interface {
	// InProcessConn connects to the server without a listener
	// (nats.InProcessConnProvider).
	InProcessConn() (net.Conn, error)
	// Peers names the servers of other nodes it has routes to.
	Peers() []string
	// Shutdown stops the server and returns once it has stopped.
	Shutdown()
}

// ConnectOptions is what a node's NATS backbone is made with
// (signaling/server's NATSConnectOptions).
type ConnectOptions struct {
	// URL is an external NATS deployment with JetStream; else Embedded.
	URL string
	// CredsFile is the credentials file (JWT and NKey seed) for URL.
	// Empty: none.
	CredsFile string
	// Embedded is the node's own NATS server, connected to in process,
	// when URL is empty. The backbone owns it: Close shuts it down, and
	// so does a failed Connect.
	Embedded Embedded
	// Name is the connection's name, as NATS monitoring shows it.
	Name string
	// Replicas of the buckets this node makes.
	Replicas int
}

// The errors of a Backbone and its Buckets.
var (
	ErrKeyNotFound   = errors.New("signaling: key not found")
	ErrKeyExists     = errors.New("signaling: key exists")
	ErrWrongRevision = errors.New("signaling: key's revision changed")
	ErrNoResponders  = errors.New("signaling: no node subscribes to the subject")
	ErrBusTimeout    = errors.New("signaling: no answer in time")
	ErrBusClosed     = errors.New("signaling: the backbone is closed")
)
