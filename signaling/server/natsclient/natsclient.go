// Package natsclient is the NATS backbone of a clustered signaling
// server: Connect is the NATSConfig.Connect of package signaling/server,
// and the only part of ragsync that links the NATS client. A single
// server (a game's, the demo's) needs none of it; cmd/signal sets it, with
// natsembed.Start, so that its -nats, -cluster-listen and -cluster-routes
// flags work:
//
//	cfg.NATS.Connect, cfg.NATS.Embed = natsclient.Connect, natsembed.Start
//
// The nodes share JetStream key-value buckets (in memory, replicated,
// read from each stream's leader only) and core NATS subjects.
package natsclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	bbk "github.com/ragsync/ragsync/signaling/server/internal/backbone"
)

// Connect connects to the NATS of o: o.URL, or else the embedded server
// o.Embedded, in process. The backbone it returns owns the connection and
// the embedded server; a failed Connect shuts the embedded server down.
// Reconnections (to an external NATS) are retried for ever, every 250 ms.
func Connect(o bbk.ConnectOptions) (bbk.Backbone, error) {
	opts := []nats.Option{nats.Name(o.Name), nats.MaxReconnects(-1)}
	switch {
	case o.URL != "":
		opts = append(opts, nats.ReconnectWait(250*time.Millisecond))
		if o.CredsFile != "" {
			opts = append(opts, nats.UserCredentials(o.CredsFile))
		}
	case o.Embedded != nil:
		opts = append(opts, nats.InProcessServer(o.Embedded))
	default:
		return nil, errors.New("natsclient: neither a URL nor an embedded server")
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err == nil {
		b, jerr := newBackbone(nc, o.Embedded, o.Replicas)
		if jerr == nil {
			return b, nil
		}
		nc.Close()
		err = fmt.Errorf("JetStream: %w", jerr)
	}
	if o.Embedded != nil {
		o.Embedded.Shutdown()
	}
	return nil, err
}

// natsBackbone is the backbone of a cluster: NATS, with JetStream's
// key-value buckets, on an external deployment or a clustered node's
// embedded server.
type natsBackbone struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	ns       bbk.Embedded // nil with an external NATS
	replicas int          // of the buckets this node makes
}

// newBackbone takes over nc (and ns, if not nil): Close closes them.
func newBackbone(nc *nats.Conn, ns bbk.Embedded, replicas int) (*natsBackbone, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return &natsBackbone{nc: nc, js: js, ns: ns, replicas: replicas}, nil
}

// Bucket binds bucket name, making it if it is not there, with reads
// served by its stream's leader only: a replica's direct get may lag a
// create made a moment before on another node, and a join must find the
// room its creator has just been told about.
func (b *natsBackbone) Bucket(ctx context.Context, name string, ttl time.Duration) (bbk.Bucket, error) {
	_, err := b.js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		_, err = b.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:   name,
			TTL:      ttl,
			Storage:  jetstream.MemoryStorage,
			Replicas: b.replicas,
		})
	}
	if err != nil {
		return nil, err
	}
	st, err := b.js.Stream(ctx, "KV_"+name)
	if err != nil {
		return nil, err
	}
	if c := st.CachedInfo().Config; c.AllowDirect {
		c.AllowDirect = false
		if _, err := b.js.UpdateStream(ctx, c); err != nil {
			return nil, err
		}
	}
	// Bound again, now that the stream is known to refuse direct gets:
	// the handle reads the way the stream's config said when it was
	// bound. Bound above while another node's update was under way, it
	// would make direct gets that no one answers, for good.
	kv, err := b.js.KeyValue(ctx, name)
	if err != nil {
		return nil, err
	}
	return natsBucket{kv}, nil
}

func (b *natsBackbone) Publish(subject string, data []byte) error {
	return b.nc.Publish(subject, data)
}

func (b *natsBackbone) Request(subject string, data []byte, timeout time.Duration) ([]byte, error) {
	m, err := b.nc.Request(subject, data, timeout)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, bbk.ErrNoResponders
	}
	if err != nil {
		return nil, err
	}
	return m.Data, nil
}

func (b *natsBackbone) Subscribe(subject string, maxPending int, f func(*bbk.Msg)) (func(), error) {
	sub, err := b.nc.Subscribe(subject, func(m *nats.Msg) {
		bm := &bbk.Msg{Data: m.Data}
		if m.Reply != "" {
			bm.Reply = func(data []byte) { m.Respond(data) }
		}
		f(bm)
	})
	if err != nil {
		return nil, err
	}
	sub.SetPendingLimits(-1, maxPending)
	return func() { sub.Unsubscribe() }, nil
}

func (b *natsBackbone) Status() bbk.Status {
	st := bbk.Status{Connected: b.nc.IsConnected(), Sent: b.nc.Stats().OutMsgs}
	if b.ns != nil {
		st.Server = "embedded"
		st.Peers = b.ns.Peers()
	} else {
		st.Server = b.nc.ConnectedUrlRedacted()
	}
	return st
}

func (b *natsBackbone) Close() {
	// Not Drain: its flush takes a timer from nats.go's process-wide
	// pool, which must not cross synctest bubbles in the tests; what this
	// node still had to send is moot.
	b.nc.Close()
	if b.ns != nil {
		b.ns.Shutdown()
	}
}

// natsBucket is a JetStream key-value bucket, its errors those of
// bbk.Bucket.
type natsBucket struct{ kv jetstream.KeyValue }

func (k natsBucket) Get(ctx context.Context, key string) (bbk.Entry, error) {
	e, err := k.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return bbk.Entry{}, bbk.ErrKeyNotFound
	}
	if err != nil {
		return bbk.Entry{}, err
	}
	return bbk.Entry{Value: e.Value(), Revision: e.Revision()}, nil
}

func (k natsBucket) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	rev, err := k.kv.Create(ctx, key, value)
	if isRevMismatch(err) {
		return 0, bbk.ErrKeyExists
	}
	return rev, err
}

func (k natsBucket) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	rev, err := k.kv.Update(ctx, key, value, rev)
	if isRevMismatch(err) {
		return 0, bbk.ErrWrongRevision
	}
	return rev, err
}

func (k natsBucket) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return k.kv.Put(ctx, key, value)
}

func (k natsBucket) Delete(ctx context.Context, key string, rev uint64) error {
	var err error
	if rev == 0 {
		err = k.kv.Delete(ctx, key)
	} else {
		err = k.kv.Delete(ctx, key, jetstream.LastRevision(rev))
	}
	if isRevMismatch(err) {
		return bbk.ErrWrongRevision
	}
	return err
}

// isRevMismatch reports whether err is JetStream refusing a write whose
// expected revision is not the key's (ErrKeyExists for a Create).
func isRevMismatch(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return true
	}
	return strings.Contains(err.Error(), "wrong last sequence")
}
