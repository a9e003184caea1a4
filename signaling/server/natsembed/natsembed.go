// Package natsembed runs the NATS server a clustered signaling server
// embeds: Start is the NATSConfig.Embed of package signaling/server, and
// the only part of ragsync that links nats-server. A single server (a
// game's, the demo's) needs none of it; cmd/signal sets it, with
// natsclient.Connect, so that its -cluster-listen and -cluster-routes
// flags work:
//
//	cfg.NATS.Connect, cfg.NATS.Embed = natsclient.Connect, natsembed.Start
package natsembed

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats-server/v2/server/ats"
)

// The embedded NATS server's access-time ticker is one goroutine per
// process, started by the first store and stopped by the last. Started
// with the package instead, it is one goroutine for the process's
// lifetime: servers started and stopped one after another (tests, a
// game's embedded server) neither start a goroutine nor leave one
// behind, and none lands in a test's synctest bubble (where its ticker,
// outside the bubble, would keep the bubble's clock from moving).
func init() { ats.Register() }

// Options is server.EmbedOptions: an alias of the same unnamed struct
// type, so that Start is a NATSConfig.Embed without this package
// importing signaling/server.
type Options = struct {
	// Name is the server's name in the NATS cluster, unique per node.
	Name string
	// Listen, host:port, is where the server listens for routes from
	// the other nodes' servers.
	Listen string
	// Routes are the other nodes' route URLs, nats://host:port (this
	// node's own may be among them).
	Routes []string
	// ClusterName names the NATS cluster. Empty: "ragsync".
	ClusterName string
	// StoreDir is JetStream's directory. Empty: a temporary directory
	// removed at Shutdown.
	StoreDir string
}

// Server is server.EmbeddedNATS, an alias of the same unnamed interface
// type: the running NATS server Start returns.
type Server = interface {
	// InProcessConn connects to the server without a listener
	// (nats.InProcessConnProvider).
	InProcessConn() (net.Conn, error)
	// Peers names the servers of other nodes it has routes to.
	Peers() []string
	// Shutdown stops the server and returns once it has stopped.
	Shutdown()
}

// readyTimeout bounds how long Start waits for the server's listeners.
const readyTimeout = 10 * time.Second

// Start runs a NATS server with JetStream in this process, listening on
// o.Listen for routes and routed to o.Routes, and returns once it is
// ready for connections. Its client listener is on a random loopback
// port (nats-server starts routes only once it has one); the signaling
// server connects in process.
func Start(o Options) (Server, error) {
	host, port, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("natsembed: cluster listen address %q: %w", o.Listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("natsembed: cluster listen port %q: %w", port, err)
	}
	opts := &natsd.Options{
		ServerName: o.Name,
		Host:       "127.0.0.1",
		Port:       natsd.RANDOM_PORT,
		NoSigs:     true,
		NoLog:      true,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		// The in-process client's messages may be large (SDP).
		MaxPayload: 1 << 20,
	}
	opts.Cluster.Name = o.ClusterName
	if opts.Cluster.Name == "" {
		opts.Cluster.Name = "ragsync"
	}
	opts.Cluster.Host, opts.Cluster.Port = host, p
	for _, r := range o.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("natsembed: cluster route %q is not nats://host:port", r)
		}
		opts.Routes = append(opts.Routes, u)
	}
	s := &embedded{}
	if opts.StoreDir == "" {
		d, err := os.MkdirTemp("", "ragsync-signal-js-")
		if err != nil {
			return nil, fmt.Errorf("natsembed: JetStream store: %w", err)
		}
		s.tmpDir, opts.StoreDir = d, d
	}
	ns, err := natsd.NewServer(opts)
	if err != nil {
		s.removeDir()
		return nil, fmt.Errorf("natsembed: %w", err)
	}
	s.ns = ns
	var log failLog
	ns.SetLogger(&log, false, false)
	go ns.Start()
	// Ready, or a fatal error (a listener that could not start), or the
	// timeout; polled so that a fatal error ends the wait at once.
	for deadline := time.Now().Add(readyTimeout); !ns.ReadyForConnections(50 * time.Millisecond); {
		fatal, last := log.get()
		if fatal || time.Now().After(deadline) {
			s.Shutdown()
			if last != "" {
				return nil, fmt.Errorf("natsembed: the NATS server did not start: %s", last)
			}
			return nil, errors.New("natsembed: the NATS server did not start in " + readyTimeout.String())
		}
	}
	return s, nil
}

// failLog keeps the embedded server's latest error or fatal message (a
// route port already in use, say), for Start's error; the rest of its
// log is dropped.
type failLog struct {
	mu    sync.Mutex
	last  string
	fatal bool
}

func (l *failLog) set(fatal bool, format string, v ...any) {
	l.mu.Lock()
	if !l.fatal { // the first fatal message is the cause
		l.last = fmt.Sprintf(format, v...)
		l.fatal = fatal
	}
	l.mu.Unlock()
}

func (l *failLog) get() (fatal bool, last string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal, l.last
}

func (l *failLog) Fatalf(format string, v ...any) { l.set(true, format, v...) }
func (l *failLog) Errorf(format string, v ...any) { l.set(false, format, v...) }
func (*failLog) Noticef(string, ...any)           {}
func (*failLog) Warnf(string, ...any)             {}
func (*failLog) Debugf(string, ...any)            {}
func (*failLog) Tracef(string, ...any)            {}

// embedded is a running server and its temporary store.
type embedded struct {
	ns     *natsd.Server
	tmpDir string
}

func (s *embedded) InProcessConn() (net.Conn, error) { return s.ns.InProcessConn() }

func (s *embedded) Peers() []string {
	rz, err := s.ns.Routez(nil)
	if err != nil {
		return nil
	}
	var peers []string
	seen := map[string]bool{}
	for _, r := range rz.Routes {
		if !seen[r.RemoteName] {
			seen[r.RemoteName] = true
			peers = append(peers, r.RemoteName)
		}
	}
	return peers
}

func (s *embedded) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	s.removeDir()
}

func (s *embedded) removeDir() {
	if s.tmpDir != "" {
		os.RemoveAll(s.tmpDir)
	}
}
