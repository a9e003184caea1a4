package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bbk "github.com/ragsync/ragsync/signaling/server/internal/backbone"
)

// NATSConfig is the backbone of a server (see the package doc,
// Clustering). The zero value is a single server: its room codes,
// quick-match queue and relay requests in this process's memory, with no
// NATS at all. URL (an existing NATS deployment) or ClusterListen (an
// embedded NATS server, routed to the other nodes') make it one node of a
// cluster.
type NATSConfig struct {
	// URL, if set, connects to an existing NATS deployment (with
	// JetStream) instead, for example "nats://127.0.0.1:4222". The
	// cluster fields below are then unused.
	URL string
	// CredsFile is the credentials file (JWT and NKey seed) for URL.
	// Empty: none.
	CredsFile string
	// ClusterListen, "host:port", runs an embedded NATS server (Embed)
	// that listens there for routes from the other nodes' embedded
	// servers. Empty: no cluster.
	ClusterListen string
	// ClusterRoutes are the other nodes' route URLs,
	// "nats://host:port" (this node's own may be in the list). They
	// need ClusterListen.
	ClusterRoutes []string
	// ClusterName names the NATS cluster. Empty: "ragsync".
	ClusterName string
	// StoreDir is the embedded server's JetStream directory. Empty: a
	// temporary directory removed at Shutdown.
	StoreDir string
	// Connect connects a node to NATS, with URL or to its embedded
	// server: natsclient.Connect (package signaling/server/natsclient).
	// Embed starts the embedded NATS server of a node with
	// ClusterListen: natsembed.Start (package
	// signaling/server/natsembed). Both are kept out of this package so
	// that a program not clustering (a game or the demo embedding a
	// single server) links neither NATS nor nats-server. Nil: URL needs
	// Connect, and ClusterListen both.
	//
	//	cfg.NATS.Connect, cfg.NATS.Embed = natsclient.Connect, natsembed.Start
	Connect func(NATSConnectOptions) (Backbone, error)
	Embed   func(EmbedOptions) (EmbeddedNATS, error)
	// Replicas of the key-value buckets. Zero: min(3, nodes), the nodes
	// being 1 + the routes other than this node's own (1 with URL).
	Replicas int
	// Nodes is how many signaling servers share the per-address limits:
	// each enforces its share, limit/Nodes rounded up (see the package
	// doc, Limits in a cluster). Zero: the same count as Replicas'
	// nodes.
	Nodes int
}

// EmbedOptions is what NATSConfig.Embed starts a node's NATS server with.
// It is an alias of an unnamed struct type, as is natsembed.Options, so
// that the two are one type and natsembed.Start is a NATSConfig.Embed
// without either package importing the other.
type EmbedOptions = struct {
	// Name is the server's name in the NATS cluster: Config.Node if it is
	// a valid subject token, else the node's random id.
	Name string
	// Listen is NATSConfig.ClusterListen, host:port.
	Listen string
	// Routes are NATSConfig.ClusterRoutes.
	Routes []string
	// ClusterName is NATSConfig.ClusterName, "ragsync" if empty.
	ClusterName string
	// StoreDir is NATSConfig.StoreDir: empty, a temporary directory the
	// server removes at Shutdown.
	StoreDir string
}

// EmbeddedNATS is a NATS server running in this process, ready for
// connections, as NATSConfig.Embed returns it (an alias of an unnamed
// interface type, like EmbedOptions, that natsembed.Server is too):
// InProcessConn connects to it without a listener, Peers names the
// servers of other nodes it has routes to, Shutdown stops it and returns
// once it has stopped.
type EmbeddedNATS = bbk.Embedded

// NATSConnectOptions is what NATSConfig.Connect makes a node's backbone
// with: an external NATS at URL (with CredsFile), or else the node's
// Embedded server (which the backbone then owns, and shuts down when it
// closes or fails to connect); Name is the connection's name in NATS
// monitoring; Replicas is of the buckets this node makes.
type NATSConnectOptions = bbk.ConnectOptions

// Backbone is a node's connection to what the nodes of a cluster share,
// as NATSConfig.Connect returns it. Its methods are used by this
// package only; natsclient implements them.
type Backbone = bbk.Backbone

// validate checks the NATS fields that need no connection.
func (c *NATSConfig) validate() error {
	if c.URL != "" {
		if c.Connect == nil {
			return fmt.Errorf("signaling: invalid config: NATSConfig.URL %q needs NATSConfig.Connect (natsclient.Connect)", c.URL)
		}
		return nil
	}
	if c.ClusterListen == "" {
		if len(c.ClusterRoutes) > 0 {
			return fmt.Errorf("signaling: invalid config: NATSConfig.ClusterRoutes %q need NATSConfig.ClusterListen", c.ClusterRoutes)
		}
		return nil
	}
	if c.Embed == nil || c.Connect == nil {
		return fmt.Errorf("signaling: invalid config: NATSConfig.ClusterListen %q needs NATSConfig.Embed and Connect (natsembed.Start, natsclient.Connect)", c.ClusterListen)
	}
	if _, port, err := net.SplitHostPort(c.ClusterListen); err != nil {
		return fmt.Errorf("signaling: invalid config: NATSConfig.ClusterListen %q: %w", c.ClusterListen, err)
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("signaling: invalid config: NATSConfig.ClusterListen %q: port %q is not a number", c.ClusterListen, port)
	}
	for _, r := range c.ClusterRoutes {
		if u, err := url.Parse(r); err != nil || u.Host == "" {
			return fmt.Errorf("signaling: invalid config: NATSConfig.ClusterRoutes: %q is not nats://host:port", r)
		}
	}
	return nil
}

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

// cluster is a server's side of the backbone its nodes share: a single
// server's in memory, or NATS.
type cluster struct {
	s        *Server
	id       string // this node in subjects and buckets
	bb       backbone
	replicas int
	nodes    int

	rooms, quick, relay atomic.Pointer[kvHandle]
	ready               chan struct{}
	readyOnce           sync.Once
	stop                chan struct{}
	wg                  sync.WaitGroup
	work                chan func()
	unsub               func()

	msgsOut, msgsIn atomic.Uint64 // backbone messages published and received by signaling
}

type kvHandle struct{ kvBucket }

func (cl *cluster) isReady() bool {
	select {
	case <-cl.ready:
		return true
	default:
		return false
	}
}

// startCluster starts the server's backbone: in memory for a single
// server, else NATS (connecting to URL, or starting the embedded server)
// with the buckets bound in the background.
func startCluster(s *Server, cfg NATSConfig) (*cluster, error) {
	cl := &cluster{
		s:     s,
		id:    strconv.FormatUint(s.instance, 36),
		ready: make(chan struct{}),
		stop:  make(chan struct{}),
		work:  make(chan func(), 4096),
	}
	cl.replicas = cfg.Replicas
	if cl.replicas == 0 {
		cl.replicas = min(3, 1+otherNodes(cfg))
	}
	cl.nodes = natsNodes(cfg)
	name := "ragsync-signal " + cl.id
	switch {
	case cfg.URL != "":
		bb, err := cfg.Connect(NATSConnectOptions{URL: cfg.URL, CredsFile: cfg.CredsFile, Name: name, Replicas: cl.replicas})
		if err != nil {
			return nil, fmt.Errorf("signaling: connecting to NATS at %s: %w", cfg.URL, err)
		}
		cl.bb = bb
	case cfg.ClusterListen != "":
		o := EmbedOptions{
			Name:        cl.id,
			Listen:      cfg.ClusterListen,
			Routes:      cfg.ClusterRoutes,
			ClusterName: cfg.ClusterName,
			StoreDir:    cfg.StoreDir,
		}
		if validSubjectToken(s.cfg.Node) {
			o.Name = s.cfg.Node
		}
		ns, err := cfg.Embed(o)
		if err != nil {
			return nil, fmt.Errorf("signaling: embedded NATS: %w", err)
		}
		bb, err := cfg.Connect(NATSConnectOptions{Embedded: ns, Name: name, Replicas: cl.replicas})
		if err != nil {
			return nil, fmt.Errorf("signaling: connecting to the embedded NATS: %w", err)
		}
		cl.bb = bb
	default:
		// The local store's clock is the one watch refreshes keys by.
		cl.bb = newLocalBackbone(time.Now)
		if !cl.bindOnce(map[string]kvBucket{}, kvTimeout) {
			cl.bb.Close()
			return nil, errors.New("signaling: the local store did not start")
		}
	}
	unsub, err := cl.bb.Subscribe(subjectRoot+cl.id, 256<<20, cl.receive)
	if err != nil {
		cl.bb.Close()
		return nil, fmt.Errorf("signaling: subscribing: %w", err)
	}
	cl.unsub = unsub
	if !cl.isReady() {
		cl.wg.Add(1)
		go cl.bind()
	}
	cl.wg.Add(2)
	go cl.worker()
	go cl.watch()
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

// bind binds the buckets, retrying until they are there: a clustered
// JetStream has no meta leader until a quorum of its nodes is up, and the
// buckets cannot be made before. A request made before then gets no
// answer at all, so the first tries wait 1 s for one, not kvTimeout:
// three nodes started together were ready after 15 s with 5 s tries, as
// each try waited out its timeout.
func (cl *cluster) bind() {
	defer cl.wg.Done()
	made := map[string]kvBucket{}
	timeout := time.Second
	for delay := 50 * time.Millisecond; !cl.bindOnce(made, timeout); delay = min(2*delay, time.Second) {
		timeout = min(2*timeout, kvTimeout)
		select {
		case <-cl.stop:
			return
		case <-time.After(delay):
		}
	}
}

// bindOnce binds the buckets not yet in made, each try bounded by
// timeout, reporting whether all of them are there and answer a read:
// then the cluster is ready. The read goes to each bucket's stream
// leader (see natsBackbone.Bucket), which a replicated bucket just made
// may not have elected yet.
func (cl *cluster) bindOnce(made map[string]kvBucket, timeout time.Duration) bool {
	for _, b := range []string{roomsBucket, quickBucket, relayBucket} {
		if made[b] != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		kv, err := cl.bb.Bucket(ctx, b, roomTTL)
		cancel()
		if err != nil {
			cl.s.log.Debug("signaling: bucket not ready", "bucket", b, "err", err)
			continue
		}
		made[b] = kv
	}
	if len(made) < 3 {
		return false
	}
	for b, kv := range made {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		_, err := kv.Get(ctx, readyProbeKey)
		cancel()
		if err != nil && !errors.Is(err, errKeyNotFound) {
			// Bound again next time, in case the handle is what fails.
			cl.s.log.Debug("signaling: bucket does not answer", "bucket", b, "err", err)
			delete(made, b)
			return false
		}
	}
	cl.rooms.Store(&kvHandle{made[roomsBucket]})
	cl.quick.Store(&kvHandle{made[quickBucket]})
	cl.relay.Store(&kvHandle{made[relayBucket]})
	cl.readyOnce.Do(func() { close(cl.ready) })
	if _, local := cl.bb.(*localBackbone); !local {
		cl.s.log.Info("signaling: JetStream ready", "node", cl.id, "replicas", cl.replicas)
	}
	return true
}

// readyProbeKey is read, never written, to see that a bucket answers.
const readyProbeKey = "ready-probe"

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
	cl.bb.Close()
}

func kvctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), kvTimeout)
}

func (cl *cluster) kv(p *atomic.Pointer[kvHandle]) (kvBucket, error) {
	h := p.Load()
	if h == nil {
		return nil, errNotReady
	}
	return h.kvBucket, nil
}

// owner is a key's entry: the node named and the entry's revision.
type owner struct {
	node string
	rev  uint64
}

// getOwner reads key of bucket p; a missing key is owner{} and no error.
func (cl *cluster) getOwner(p *atomic.Pointer[kvHandle], key string) (owner, error) {
	return cl.getOwnerWithin(p, key, kvTimeout)
}

// getOwnerWithin is getOwner waiting at most timeout for the answer.
func (cl *cluster) getOwnerWithin(p *atomic.Pointer[kvHandle], key string, timeout time.Duration) (owner, error) {
	kv, err := cl.kv(p)
	if err != nil {
		return owner{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	e, err := kv.Get(ctx, key)
	if errors.Is(err, errKeyNotFound) {
		return owner{}, nil
	}
	if err != nil {
		return owner{}, err
	}
	return owner{string(e.Value), e.Revision}, nil
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
	} else {
		rev, err = kv.Update(ctx, key, []byte(cl.id), old.rev)
	}
	if errors.Is(err, errKeyExists) || errors.Is(err, errWrongRevision) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return rev, true, nil
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
		if err := kv.Delete(ctx, key, rev); err != nil && !errors.Is(err, errWrongRevision) {
			cl.s.log.Debug("signaling: releasing a key", "key", key, "err", err)
		}
	})
}

// NATSStats is the backbone's part of /healthz (see NATSConfig): NATS,
// or a single server's local store.
type NATSStats struct {
	Node      string   `json:"node"`      // this node's id in the cluster's subjects and buckets
	Connected bool     `json:"connected"` // the server's NATS connection is up (always, local)
	Server    string   `json:"server"`    // "local" (a single server), "embedded" or the URL
	Routes    int      `json:"routes"`    // routes of the embedded server to other nodes
	JetStream bool     `json:"jetstream"` // the key-value buckets are ready (at once, local)
	Replicas  int      `json:"replicas"`
	Nodes     int      `json:"nodes"` // nodes sharing the per-address limits
	Peers     []string `json:"peers,omitempty"`
	MsgsOut   uint64   `json:"msgs_out"` // backbone messages signaling published
	MsgsIn    uint64   `json:"msgs_in"`  // backbone messages signaling received
}

func (cl *cluster) stats() *NATSStats {
	bs := cl.bb.Status()
	return &NATSStats{
		Node:      cl.id,
		Connected: bs.Connected,
		Server:    bs.Server,
		Routes:    len(bs.Peers),
		JetStream: cl.isReady(),
		Replicas:  cl.replicas,
		Nodes:     cl.nodes,
		Peers:     bs.Peers,
		MsgsOut:   cl.msgsOut.Load(),
		MsgsIn:    cl.msgsIn.Load(),
	}
}

// natsNodes is how many nodes share the per-address limits.
func natsNodes(cfg NATSConfig) int {
	if cfg.Nodes > 0 {
		return cfg.Nodes
	}
	return 1 + otherNodes(cfg)
}

// otherNodes is how many nodes other than this one cfg routes to: 0
// with URL (where they are not known).
func otherNodes(cfg NATSConfig) int {
	if cfg.URL != "" {
		return 0
	}
	n := 0
	for _, r := range cfg.ClusterRoutes {
		if u, err := url.Parse(r); err == nil && u.Host != cfg.ClusterListen {
			n++
		}
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
		if e, err := kv.Get(ctx, code); err == nil && string(e.Value) == cl.id {
			kv.Delete(ctx, code, e.Revision)
		}
	})
}
