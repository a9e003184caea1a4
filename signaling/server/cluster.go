package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats-server/v2/server/ats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSConfig is the NATS backbone of a server (see the package doc,
// Clustering). The zero value runs an embedded NATS server in this
// process with no listener and JetStream in memory: one machine needs
// nothing else.
type NATSConfig struct {
	// URL, if set, connects to an existing NATS deployment (with
	// JetStream) instead of embedding a server, for example
	// "nats://127.0.0.1:4222". The cluster fields below are then unused.
	URL string
	// CredsFile is the credentials file (JWT and NKey seed) for URL.
	CredsFile string
	// ClusterListen, "host:port", makes the embedded server listen for
	// routes from the other nodes' embedded servers. Empty: no cluster.
	ClusterListen string
	// ClusterRoutes are the other nodes' route URLs,
	// "nats://host:port" (this node's own may be in the list).
	ClusterRoutes []string
	// ClusterName names the NATS cluster. Default "ragsync".
	ClusterName string
	// StoreDir is JetStream's directory. Empty: a temporary directory
	// removed at Shutdown.
	StoreDir string
	// Replicas of the key-value buckets. Default min(3, nodes), the nodes
	// being 1 + the routes other than this node's own (1 with URL).
	Replicas int
	// Nodes is how many signaling servers share the per-address limits:
	// each enforces its share, limit/Nodes rounded up (see the package
	// doc, Limits in a cluster). Default the same count as Replicas'
	// nodes.
	Nodes int
	// ReadyTimeout bounds how long New waits for JetStream on a server
	// that is not clustered (embedded without routes); a clustered one
	// does not wait and reports JetStream in /healthz once it is ready.
	// Default 10s.
	ReadyTimeout time.Duration
}

// The embedded NATS server's access-time ticker is one goroutine per
// process, started by the first store and stopped by the last. Started
// with the package instead, it is one goroutine for the process's
// lifetime: servers started and stopped one after another (tests, a
// game's embedded server) neither start a goroutine nor leave one
// behind, and none lands in a test's synctest bubble (where its ticker,
// outside the bubble, would keep the bubble's clock from moving).
func init() { ats.Register() }

// Key-value bucket names and their entries' lifetimes.
const (
	roomsBucket = "ragsync_rooms" // room code → owner node
	quickBucket = "ragsync_quick" // "home" → the node holding the quick-match queue
	relayBucket = "ragsync_relay" // pairing side → node holding the relay request
	roomTTL     = 10 * time.Minute
	refreshEach = roomTTL / 4
	quickKey    = "home"
	subjectRoot = "ragsync.node." // + node id: everything sent to one node
	kvTimeout   = 5 * time.Second
	reqTimeout  = 3 * time.Second
)

// errNotReady is returned while JetStream's buckets are not ready.
var errNotReady = errors.New("signaling: the cluster's store (NATS JetStream) is not ready yet")

// cluster is a server's NATS side.
type cluster struct {
	s         *Server
	id        string // this node in subjects and buckets
	ns        *natsd.Server
	nc        *nats.Conn
	js        jetstream.JetStream
	tmpDir    string
	replicas  int
	nodes     int
	clustered bool

	rooms, quick, relay atomic.Pointer[kvHandle]
	ready               chan struct{}
	readyOnce           sync.Once
	stop                chan struct{}
	wg                  sync.WaitGroup
	work                chan func()
	sub                 *nats.Subscription

	msgsOut, msgsIn atomic.Uint64 // NATS messages published and received by signaling
}

type kvHandle struct{ jetstream.KeyValue }

func (cl *cluster) isReady() bool {
	select {
	case <-cl.ready:
		return true
	default:
		return false
	}
}

// startCluster starts (or connects to) NATS and, in the background, binds
// the buckets.
func startCluster(s *Server, cfg NATSConfig) (*cluster, error) {
	cl := &cluster{
		s:     s,
		id:    strconv.FormatUint(s.instance, 36),
		ready: make(chan struct{}),
		stop:  make(chan struct{}),
		work:  make(chan func(), 4096),
	}
	others := 0
	if cfg.URL == "" {
		opts := &natsd.Options{
			ServerName: cl.id,
			DontListen: true,
			NoSigs:     true,
			NoLog:      true,
			JetStream:  true,
			StoreDir:   cfg.StoreDir,
			// The in-process client's messages may be large (SDP).
			MaxPayload: 1 << 20,
		}
		if s.cfg.Node != "" && validSubjectToken(s.cfg.Node) {
			opts.ServerName = s.cfg.Node
		}
		if opts.StoreDir == "" {
			d, err := os.MkdirTemp("", "ragsync-signal-js-")
			if err != nil {
				return nil, fmt.Errorf("signaling: JetStream store: %w", err)
			}
			cl.tmpDir, opts.StoreDir = d, d
		}
		if cfg.ClusterListen != "" {
			host, port, err := net.SplitHostPort(cfg.ClusterListen)
			if err != nil {
				cl.cleanupDir()
				return nil, fmt.Errorf("signaling: cluster listen address %q: %w", cfg.ClusterListen, err)
			}
			p, err := strconv.Atoi(port)
			if err != nil {
				cl.cleanupDir()
				return nil, fmt.Errorf("signaling: cluster listen port %q: %w", port, err)
			}
			opts.Cluster.Name = cfg.ClusterName
			if opts.Cluster.Name == "" {
				opts.Cluster.Name = "ragsync"
			}
			opts.Cluster.Host, opts.Cluster.Port = host, p
			// The routes start only once the client listener is up
			// (nats-server's Start), so a clustered server has one: on
			// loopback, a random port.
			opts.DontListen = false
			opts.Host, opts.Port = "127.0.0.1", natsd.RANDOM_PORT
			for _, r := range cfg.ClusterRoutes {
				u, err := url.Parse(r)
				if err != nil || u.Host == "" {
					cl.cleanupDir()
					return nil, fmt.Errorf("signaling: cluster route %q is not nats://host:port", r)
				}
				opts.Routes = append(opts.Routes, u)
				if u.Host != cfg.ClusterListen {
					others++
				}
			}
			cl.clustered = true
		} else if len(cfg.ClusterRoutes) > 0 {
			cl.cleanupDir()
			return nil, errors.New("signaling: cluster routes need a cluster listen address")
		}
		ns, err := natsd.NewServer(opts)
		if err != nil {
			cl.cleanupDir()
			return nil, fmt.Errorf("signaling: embedded NATS: %w", err)
		}
		go ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			ns.Shutdown()
			cl.cleanupDir()
			return nil, errors.New("signaling: embedded NATS did not start")
		}
		cl.ns = ns
		nc, err := nats.Connect("", nats.InProcessServer(ns), nats.Name("ragsync-signal "+cl.id), nats.MaxReconnects(-1))
		if err != nil {
			cl.shutdownNATS()
			return nil, fmt.Errorf("signaling: connecting to the embedded NATS: %w", err)
		}
		cl.nc = nc
	} else {
		o := []nats.Option{nats.Name("ragsync-signal " + cl.id), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
		if cfg.CredsFile != "" {
			o = append(o, nats.UserCredentials(cfg.CredsFile))
		}
		nc, err := nats.Connect(cfg.URL, o...)
		if err != nil {
			return nil, fmt.Errorf("signaling: connecting to NATS at %s: %w", cfg.URL, err)
		}
		cl.nc = nc
	}
	cl.replicas = cfg.Replicas
	if cl.replicas == 0 {
		cl.replicas = min(3, 1+others)
	}
	cl.nodes = cfg.Nodes
	if cl.nodes == 0 {
		cl.nodes = 1 + others
	}
	js, err := jetstream.New(cl.nc)
	if err != nil {
		cl.shutdownNATS()
		return nil, fmt.Errorf("signaling: JetStream: %w", err)
	}
	cl.js = js
	sub, err := cl.nc.Subscribe(subjectRoot+cl.id, cl.receive)
	if err != nil {
		cl.shutdownNATS()
		return nil, fmt.Errorf("signaling: subscribing: %w", err)
	}
	sub.SetPendingLimits(-1, 256<<20)
	cl.sub = sub
	cl.wg.Add(3)
	go cl.bind()
	go cl.worker()
	go cl.watch()
	if !cl.clustered && cfg.URL == "" {
		wait := cfg.ReadyTimeout
		if wait == 0 {
			wait = 10 * time.Second
		}
		select {
		case <-cl.ready:
		case <-time.After(wait):
			cl.close()
			return nil, errors.New("signaling: JetStream did not become ready in " + wait.String())
		}
	}
	return cl, nil
}

func validSubjectToken(s string) bool {
	for _, r := range s {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return s != ""
}

func (cl *cluster) cleanupDir() {
	if cl.tmpDir != "" {
		os.RemoveAll(cl.tmpDir)
	}
}

func (cl *cluster) shutdownNATS() {
	if cl.nc != nil {
		cl.nc.Close()
	}
	if cl.ns != nil {
		cl.ns.Shutdown()
		cl.ns.WaitForShutdown()
	}
	cl.cleanupDir()
}

// bind creates or binds the buckets, retrying until they are there: a
// clustered JetStream has no meta leader until a quorum of its nodes is
// up, and the buckets cannot be made before.
func (cl *cluster) bind() {
	defer cl.wg.Done()
	made := map[string]jetstream.KeyValue{}
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		for _, b := range []string{roomsBucket, quickBucket, relayBucket} {
			if made[b] != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), kvTimeout)
			kv, err := cl.bindBucket(ctx, b)
			cancel()
			if err != nil {
				cl.s.log.Debug("signaling: JetStream bucket not ready", "bucket", b, "err", err)
				continue
			}
			made[b] = kv
		}
		if len(made) == 3 {
			cl.rooms.Store(&kvHandle{made[roomsBucket]})
			cl.quick.Store(&kvHandle{made[quickBucket]})
			cl.relay.Store(&kvHandle{made[relayBucket]})
			cl.readyOnce.Do(func() { close(cl.ready) })
			cl.s.log.Info("signaling: JetStream ready", "node", cl.id, "replicas", cl.replicas)
			return
		}
		select {
		case <-cl.stop:
			return
		case <-time.After(delay):
		}
	}
}

// bindBucket binds bucket b, making it if it is not there, with reads
// served by its stream's leader only: a replica's direct get may lag a
// create made a moment before on another node, and a join must find the
// room its creator has just been told about.
func (cl *cluster) bindBucket(ctx context.Context, b string) (jetstream.KeyValue, error) {
	kv, err := cl.js.KeyValue(ctx, b)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = cl.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:   b,
			TTL:      roomTTL,
			Storage:  jetstream.MemoryStorage,
			Replicas: cl.replicas,
		})
	}
	if err != nil {
		return nil, err
	}
	st, err := cl.js.Stream(ctx, "KV_"+b)
	if err != nil {
		return nil, err
	}
	if c := st.CachedInfo().Config; c.AllowDirect {
		c.AllowDirect = false
		if _, err := cl.js.UpdateStream(ctx, c); err != nil {
			return nil, err
		}
		return cl.js.KeyValue(ctx, b)
	}
	return kv, nil
}

// worker runs the bucket updates that need not hold up a client: closed
// rooms' keys, refreshes.
func (cl *cluster) worker() {
	defer cl.wg.Done()
	for {
		select {
		case <-cl.stop:
			return
		case f := <-cl.work:
			f()
		}
	}
}

// later queues f for the worker (or runs it on a goroutine of its own
// when the queue is full).
func (cl *cluster) later(f func()) {
	select {
	case cl.work <- f:
	default:
		go f()
	}
}

func (cl *cluster) close() {
	select {
	case <-cl.stop:
		return
	default:
	}
	close(cl.stop)
	cl.wg.Wait()
	if cl.nc != nil {
		// Not Drain: its flush takes a timer from nats.go's
		// process-wide pool, which must not cross synctest bubbles in
		// the tests; what this node still had to send is moot.
		cl.nc.Close()
	}
	if cl.ns != nil {
		cl.ns.Shutdown()
		cl.ns.WaitForShutdown()
	}
	cl.cleanupDir()
}

func kvctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), kvTimeout)
}

func (cl *cluster) kv(p *atomic.Pointer[kvHandle]) (jetstream.KeyValue, error) {
	h := p.Load()
	if h == nil {
		return nil, errNotReady
	}
	return h.KeyValue, nil
}

// owner is a key's entry: the node named and the entry's revision.
type owner struct {
	node string
	rev  uint64
}

// getOwner reads key of bucket p; a missing key is owner{} and no error.
func (cl *cluster) getOwner(p *atomic.Pointer[kvHandle], key string) (owner, error) {
	kv, err := cl.kv(p)
	if err != nil {
		return owner{}, err
	}
	ctx, cancel := kvctx()
	defer cancel()
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return owner{}, nil
	}
	if err != nil {
		return owner{}, err
	}
	return owner{string(e.Value()), e.Revision()}, nil
}

// claim makes this node key's owner: creating the key, or taking it over
// from old (the entry read before, whose node is gone). It reports false
// when another node got there first.
func (cl *cluster) claim(p *atomic.Pointer[kvHandle], key string, old owner) (uint64, bool, error) {
	kv, err := cl.kv(p)
	if err != nil {
		return 0, false, err
	}
	ctx, cancel := kvctx()
	defer cancel()
	var rev uint64
	if old.rev == 0 {
		rev, err = kv.Create(ctx, key, []byte(cl.id))
		if errors.Is(err, jetstream.ErrKeyExists) {
			return 0, false, nil
		}
	} else {
		rev, err = kv.Update(ctx, key, []byte(cl.id), old.rev)
		if isRevMismatch(err) {
			return 0, false, nil
		}
	}
	if err != nil {
		return 0, false, err
	}
	return rev, true, nil
}

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

// release deletes key of bucket p if it is still this node's at rev.
func (cl *cluster) release(p *atomic.Pointer[kvHandle], key string, rev uint64) {
	cl.later(func() {
		kv, err := cl.kv(p)
		if err != nil {
			return
		}
		ctx, cancel := kvctx()
		defer cancel()
		if err := kv.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil && !isRevMismatch(err) {
			cl.s.log.Debug("signaling: releasing a key", "key", key, "err", err)
		}
	})
}

// NATSStats is the NATS part of /healthz.
type NATSStats struct {
	Node      string   `json:"node"`      // this node's id in the cluster's subjects and buckets
	Connected bool     `json:"connected"` // the server's NATS connection is up
	Server    string   `json:"server"`    // "embedded" or the URL
	Routes    int      `json:"routes"`    // routes of the embedded server to other nodes
	JetStream bool     `json:"jetstream"` // the key-value buckets are ready
	Replicas  int      `json:"replicas"`
	Nodes     int      `json:"nodes"` // nodes sharing the per-address limits
	Peers     []string `json:"peers,omitempty"`
	MsgsOut   uint64   `json:"msgs_out"` // NATS messages signaling published
	MsgsIn    uint64   `json:"msgs_in"`  // NATS messages signaling received
}

func (cl *cluster) stats() *NATSStats {
	st := &NATSStats{Node: cl.id, Connected: cl.nc.IsConnected(), JetStream: cl.isReady(), Replicas: cl.replicas, Nodes: cl.nodes, MsgsOut: cl.msgsOut.Load(), MsgsIn: cl.msgsIn.Load()}
	if cl.ns != nil {
		st.Server = "embedded"
		st.Routes = cl.ns.NumRoutes()
		if rz, err := cl.ns.Routez(nil); err == nil {
			seen := map[string]bool{}
			for _, r := range rz.Routes {
				if !seen[r.RemoteName] {
					seen[r.RemoteName] = true
					st.Peers = append(st.Peers, r.RemoteName)
				}
			}
			st.Routes = len(st.Peers)
		}
	} else {
		st.Server = cl.nc.ConnectedUrlRedacted()
	}
	return st
}

// natsNodes is how many nodes share the per-address limits.
func natsNodes(cfg NATSConfig) int {
	if cfg.Nodes > 0 {
		return cfg.Nodes
	}
	n := 1
	for _, r := range cfg.ClusterRoutes {
		if u, err := url.Parse(r); err == nil && u.Host != cfg.ClusterListen {
			n++
		}
	}
	if cfg.URL != "" {
		n = 1
	}
	return n
}

// shareLimits gives this node its share of the per-address limits, when
// n nodes enforce them: each limit over n, rounded up, so that one
// address spread over the n nodes gets at most its limit plus n-1 (the
// rounding).
func (c *Config) shareLimits(n int) {
	if n <= 1 {
		return
	}
	div := func(v *int) { *v = max(1, (*v+n-1)/n) }
	div(&c.MaxConnsPerAddr)
	div(&c.MaxRoomsPerAddr)
	div(&c.AddrRateBurst)
	div(&c.FailedJoinBurst)
	div(&c.MaxHandshakesPerAddr)
	c.AddrRatePerSec /= float64(n)
	c.FailedJoinRate /= float64(n)
}

// releaseLater deletes a room code's key this node claimed for a room it
// then did not make.
func (cl *cluster) releaseLater(code string) {
	cl.later(func() {
		kv, err := cl.kv(&cl.rooms)
		if err != nil {
			return
		}
		ctx, cancel := kvctx()
		defer cancel()
		if e, err := kv.Get(ctx, code); err == nil && string(e.Value()) == cl.id {
			kv.Delete(ctx, code, jetstream.LastRevision(e.Revision()))
		}
	})
}
