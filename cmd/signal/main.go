// Command signal runs the ragsync signaling server: rooms by code, quick
// match, SDP/ICE relay over WebSocket, the TCP fallback relay and,
// optionally, a TURN server, with per-address limits and Prometheus
// metrics.
//
//	go run ./cmd/signal                       # listens on 127.0.0.1:8080 (this machine only)
//	go run ./cmd/signal -addr :8080           # listens on every interface: reachable by other machines
//	go run ./cmd/signal -log-format json -log-level debug
//	RAGSYNC_SIGNAL_ADDR=:8080 go run ./cmd/signal   # every flag can be an environment variable
//
// Endpoints: ws://ADDR/ws?v=1 (signaling), http://ADDR/relay?v=1 (TCP
// relay), http://ADDR/healthz (JSON counters). Prometheus metrics are at
// http://METRICS-ADDR/metrics, by default 127.0.0.1:9464 (this machine
// only), never on -addr unless -metrics-addr is empty and
// -metrics-token-file gives the bearer token a scrape must send; with
// neither, no metrics are served. Every limit of signaling/server.Config
// has a flag; 0 means the library default, shown in -help. SIGINT or
// SIGTERM shuts down gracefully: clients get a shutting_down error and a
// going-away close, relay streams get -shutdown-timeout to finish.
//
// Every flag can also be set with an environment variable: RAGSYNC_SIGNAL_
// and the flag's name in upper case with - as _ (-max-conns is
// RAGSYNC_SIGNAL_MAX_CONNS). A flag on the command line wins over the
// environment; an empty variable counts as unset.
package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ragsync/ragsync/demo/webdist"
	"github.com/ragsync/ragsync/signaling/server"
	"github.com/ragsync/ragsync/signaling/server/natsclient"
	"github.com/ragsync/ragsync/signaling/server/natsembed"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, func(string) {
		stop() // after the first signal, a second one kills the process
	}, nil)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "signal:", err)
		os.Exit(1)
	}
}

// envPrefix starts the environment variable of every flag.
const envPrefix = "RAGSYNC_SIGNAL_"

// envName is the environment variable of a flag.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// environment variable, if that is set and not empty.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				if want := wantOf(f.Value); want != "" {
					err = fmt.Errorf("%s=%q: want %s: %w", envName(f.Name), v, want, e)
				} else {
					err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, e)
				}
			}
		}
	})
	return err
}

// wantOf says what a flag's value must look like, by its type ("" for
// flags of other types, whose errors say it themselves).
func wantOf(v flag.Value) string {
	g, ok := v.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case int, int64, uint, uint64:
		return "an integer"
	case time.Duration:
		return "a duration like 30s"
	case bool:
		return "true or false"
	case float64:
		return "a number"
	}
	return ""
}

// usage prints the flags with their environment variables.
func usage(fs *flag.FlagSet) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: signal [flags]\n\nRuns the ragsync signaling server. Every flag can also be set with the environment\nvariable shown after it (a flag on the command line wins; an empty variable is unset).\n\n")
		fs.VisitAll(func(f *flag.Flag) {
			name, use := flag.UnquoteUsage(f)
			fmt.Fprintf(w, "  -%s", f.Name)
			if name != "" {
				fmt.Fprintf(w, " %s", name)
			}
			fmt.Fprintf(w, "  [%s]\n    \t%s", envName(f.Name), strings.ReplaceAll(use, "\n", "\n    \t"))
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "0s" {
				fmt.Fprintf(w, " (default %q)", f.DefValue)
			}
			fmt.Fprintln(w)
		})
	}
}

// prefixList is a flag of comma-separated IP addresses or CIDR prefixes.
type prefixList struct{ p *[]netip.Prefix }

func (l prefixList) String() string {
	if l.p == nil {
		return ""
	}
	var s []string
	for _, p := range *l.p {
		s = append(s, p.String())
	}
	return strings.Join(s, ",")
}

func (l prefixList) Set(v string) error {
	*l.p = nil
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			*l.p = append(*l.p, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return fmt.Errorf("%q is neither an IP address nor a CIDR prefix", f)
		}
		*l.p = append(*l.p, netip.PrefixFrom(a, a.BitLen()))
	}
	return nil
}

// prefixLimits is a flag of comma-separated BITS:FACTOR network
// aggregates; "none" is an empty list (no aggregation).
type prefixLimits struct{ p *[]server.PrefixLimit }

func (l prefixLimits) String() string {
	if l.p == nil || *l.p == nil {
		return ""
	}
	if len(*l.p) == 0 {
		return "none"
	}
	var s []string
	for _, p := range *l.p {
		s = append(s, fmt.Sprintf("%d:%g", p.Bits, p.Factor))
	}
	return strings.Join(s, ",")
}

func (l prefixLimits) Set(v string) error {
	*l.p = []server.PrefixLimit{}
	if strings.TrimSpace(v) == "none" {
		return nil
	}
	for _, f := range strings.Split(v, ",") {
		b, x, ok := strings.Cut(strings.TrimSpace(f), ":")
		bits, err1 := strconv.Atoi(b)
		factor, err2 := strconv.ParseFloat(x, 64)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("%q: want BITS:FACTOR, e.g. 24:10", f)
		}
		*l.p = append(*l.p, server.PrefixLimit{Bits: bits, Factor: factor})
	}
	return nil
}

// stringList is a flag of comma-separated strings.
type stringList struct{ p *[]string }

func (l stringList) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l stringList) Set(v string) error {
	*l.p = nil
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*l.p = append(*l.p, f)
		}
	}
	return nil
}

// run serves until ctx is done, then shuts down gracefully. getenv reads
// the environment; onShutdown is called when shutdown starts; ready, if
// not nil, gets the listen address.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, onShutdown func(string), ready func(addr string)) error {
	fs := flag.NewFlagSet("signal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usage(fs)
	var cfg server.Config
	addr := fs.String("addr", "127.0.0.1:8080", "listen address; the default is reachable from this machine only, use :8080 to accept other machines")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	shutdownTimeout := fs.Duration("shutdown-timeout", 10*time.Second, "how long a graceful shutdown waits for relay streams")
	fs.IntVar(&cfg.MaxMessageBytes, "max-message", 0, "largest client message in bytes (0: 16384)")
	fs.Float64Var(&cfg.RatePerSec, "rate", 0, "messages per second per connection, sustained (0: 20)")
	fs.IntVar(&cfg.RateBurst, "burst", 0, "messages per connection in a burst (0: 40)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", 0, "close connections silent for this long (0: 60s)")
	fs.IntVar(&cfg.MaxConns, "max-conns", 0, "concurrent WebSocket connections (0: 10000)")
	fs.IntVar(&cfg.MaxRooms, "max-rooms", 0, "concurrent rooms (0: 5000)")
	fs.IntVar(&cfg.SendQueue, "send-queue", 0, "messages queued per client before it is dropped as a slow consumer (0: 32)")
	fs.DurationVar(&cfg.WriteTimeout, "write-timeout", 0, "timeout of one write to a client or relay peer (0: 10s)")
	fs.IntVar(&cfg.MaxRelays, "max-relays", 0, "concurrent relay streams (0: 1000)")
	fs.DurationVar(&cfg.RelayWaitTimeout, "relay-wait", 0, "how long a relay request waits for the other player (0: 30s)")
	fs.DurationVar(&cfg.RelayIdleTimeout, "relay-idle", 0, "close relay streams idle for this long (0: 60s)")
	fs.IntVar(&cfg.RelayBufferBytes, "relay-buffer", 0, "copy buffer per relay direction in bytes (0: 16384)")
	fs.IntVar(&cfg.MaxConnsPerAddr, "max-conns-per-addr", 0, "WebSockets and relay connections per client address (0: 100)")
	fs.IntVar(&cfg.MaxRoomsPerAddr, "max-rooms-per-addr", 0, "rooms and quick-match places held per client address (0: 50)")
	fs.Float64Var(&cfg.AddrRatePerSec, "addr-rate", 0, "messages per second per client address, over all its connections; more wait (0: 100)")
	fs.IntVar(&cfg.AddrRateBurst, "addr-burst", 0, "messages per client address in a burst (0: 200)")
	fs.Float64Var(&cfg.FailedJoinRate, "failed-join-rate", 0, "joins that find no room (or a full one) per second per address, sustained: bounds code guessing (0: 0.2)")
	fs.IntVar(&cfg.FailedJoinBurst, "failed-join-burst", 0, "failed joins per address in a burst (0: 10)")
	fs.IntVar(&cfg.MaxHandshakesPerAddr, "max-handshakes-per-addr", 0, "connections per direct peer address still in their HTTP handshake (0: 16)")
	fs.DurationVar(&cfg.HandshakeTimeout, "handshake-timeout", 0, "time to send the request headers, TLS handshake included (0: 5s)")
	fs.IntVar(&cfg.IPv6PrefixLen, "ipv6-prefix", 0, "IPv6 client addresses share limits per prefix of this length (0: 64)")
	fs.Var(prefixLimits{&cfg.IPv4Prefixes}, "ipv4-prefixes", "comma-separated BITS:FACTOR: each IPv4 /BITS network shares FACTOR× the per-address limits; \"none\" turns it off (default 24:10)")
	fs.Var(prefixLimits{&cfg.IPv6Prefixes}, "ipv6-prefixes", "comma-separated BITS:FACTOR: each IPv6 /BITS network shares FACTOR× the per-address limits; \"none\" turns it off (default 56:4,48:10)")
	fs.Var(prefixList{&cfg.TrustedProxies}, "trusted-proxies", "comma-separated addresses or CIDR prefixes of reverse proxies whose client address header is believed (default: none)")
	fs.StringVar(&cfg.ClientIPHeader, "client-ip-header", "", "header trusted proxies put the client address in (default X-Forwarded-For)")
	secret := fs.String("secret", "", "secret (16+ bytes) signing relay tokens and TURN credentials; the same on every instance and across restarts (default: random, with a warning). Prefer the environment or -secret-file: flags show in ps")
	secretFile := fs.String("secret-file", "", "file holding the secret (surrounding whitespace is ignored)")
	fs.DurationVar(&cfg.CredentialTTL, "credential-ttl", 0, "how long relay tokens stay valid (0: 12h; TURN credentials: -turn-credential-ttl)")
	fs.DurationVar(&cfg.RejoinGrace, "rejoin-grace", 0, "how long a paired player whose connection dropped keeps its place, to rejoin with its relay token (0: 30s)")
	tlsCert := fs.String("tls-cert", "", "TLS certificate file (PEM, with its chain); serve https/wss directly. Reloaded when the file changes")
	tlsKey := fs.String("tls-key", "", "TLS private key file (PEM)")
	fs.StringVar(&cfg.Node, "node", "", "name of this server among several of one deployment: its metrics carry it as the label node (default: no such label)")
	metricsAddr := fs.String("metrics-addr", "127.0.0.1:9464", "serve /metrics on this address only; empty: on -addr if -metrics-token-file is given, else nowhere")
	metricsTokenFile := fs.String("metrics-token-file", "", "file holding a bearer token (16+ bytes) every /metrics scrape must send (Authorization: Bearer …); required to serve metrics on -addr")
	turnOn := fs.Bool("turn", false, "run the embedded TURN server; paired messages then carry credentials for it")
	turnUDP := fs.String("turn-udp", "127.0.0.1:3478", "TURN UDP listen address; like -addr, the default is this machine only, use :3478 for others (empty: none)")
	turnTCP := fs.String("turn-tcp", "127.0.0.1:3478", "TURN TCP listen address (empty: none)")
	turnIP := fs.String("turn-ip", "", "public IP address of the TURN relay (required with -turn)")
	turnBind := fs.String("turn-bind", "", "local address TURN relay sockets bind to (default: every interface)")
	turnPorts := fs.String("turn-ports", "", "relay port range min-max, e.g. 49160-49200 (default: any)")
	var turnURLs []string
	fs.Var(stringList{&turnURLs}, "turn-urls", "comma-separated turn:/stun: URLs given to clients (default: from -turn-ip and the listeners' ports)")
	turnRealm := fs.String("turn-realm", "", "TURN realm (default ragsync)")
	turnMax := fs.Int("turn-max-allocations", 0, "TURN allocations on the server (0: 1000)")
	turnPerAddr := fs.Int("turn-max-per-addr", 0, "TURN allocations and TCP connections per client address (0: 8)")
	var turnAllow []netip.Prefix
	fs.Var(prefixList{&turnAllow}, "turn-allow-peers", "comma-separated private/loopback prefixes TURN may relay to, when they are the other player's candidates (default: none; -turn-ip for its relayed ports only)")
	turnLAN := fs.Bool("turn-lan", false, "let TURN relay to loopback, private and link-local candidates of the other player (a server on a LAN); never metadata addresses or the TURN ports")
	turnTTL := fs.Duration("turn-credential-ttl", 0, "how long TURN credentials stay valid after their pairing ended; players renew them while paired (0: 5m)")
	origins := fs.String("origins", "", "comma-separated browser origin patterns allowed to connect (default: same origin only)")
	web := fs.Bool("web", true, "serve the web demo at / (built into this binary by make web)")
	fs.StringVar(&cfg.NATS.URL, "nats", "", "URL of an existing NATS deployment (with JetStream) shared by the signaling servers of a cluster, e.g. nats://127.0.0.1:4222 (default: a single server, or the embedded NATS of -cluster-listen)")
	fs.StringVar(&cfg.NATS.CredsFile, "nats-creds", "", "NATS credentials file (JWT and NKey seed) for -nats")
	fs.StringVar(&cfg.NATS.ClusterListen, "cluster-listen", "", "host:port an embedded NATS server listens on for routes from the other signaling servers of a cluster (default: no cluster, no NATS)")
	fs.Var(stringList{&cfg.NATS.ClusterRoutes}, "cluster-routes", "comma-separated route URLs of the cluster's embedded NATS servers, nats://host:port (this node's own may be listed)")
	fs.StringVar(&cfg.NATS.ClusterName, "cluster-name", "", "name of the NATS cluster (default ragsync)")
	fs.StringVar(&cfg.NATS.StoreDir, "nats-store", "", "JetStream directory of the embedded NATS server of -cluster-listen (default: a temporary directory)")
	fs.IntVar(&cfg.NATS.Replicas, "nats-replicas", 0, "replicas of the cluster's key-value buckets (0: min(3, nodes))")
	fs.IntVar(&cfg.NATS.Nodes, "cluster-nodes", 0, "signaling servers sharing the per-address limits, each enforcing its share (0: 1 + the routes to other nodes; 1 with -nats)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err := applyEnv(fs, getenv); err != nil {
		return err
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch *logFormat {
	case "text":
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, opts))
	case "json":
		cfg.Logger = slog.New(slog.NewJSONHandler(stderr, opts))
	default:
		return fmt.Errorf("-log-format must be text or json, not %q", *logFormat)
	}
	log := cfg.Logger
	if *origins != "" {
		cfg.OriginPatterns = strings.Split(*origins, ",")
	}
	switch {
	case *secret != "" && *secretFile != "":
		return errors.New("give -secret or -secret-file, not both")
	case *secretFile != "":
		b, err := os.ReadFile(*secretFile)
		if err != nil {
			return fmt.Errorf("-secret-file: %w", err)
		}
		cfg.Secret = []byte(strings.TrimSpace(string(b)))
	case *secret != "":
		cfg.Secret = []byte(*secret)
	default:
		cfg.Secret = make([]byte, 32)
		if _, err := rand.Read(cfg.Secret); err != nil {
			return err
		}
		log.Warn("no -secret: using a random one; relay tokens and TURN credentials will not survive a restart, and other instances will not accept them (set " + envName("secret") + ")")
	}
	if cfg.Secret != nil && len(cfg.Secret) < 16 {
		return fmt.Errorf("the secret is %d bytes; use at least 16 (32 random bytes, e.g. openssl rand -hex 32)", len(cfg.Secret))
	}
	if *turnOn {
		tc, err := turnConfig(*turnUDP, *turnTCP, *turnIP, *turnBind, *turnPorts)
		if err != nil {
			return err
		}
		tc.URLs, tc.Realm, tc.MaxAllocations, tc.MaxPerAddr, tc.AllowPeers = turnURLs, *turnRealm, *turnMax, *turnPerAddr, turnAllow
		tc.LAN, tc.CredentialTTL = *turnLAN, *turnTTL
		cfg.TURN = tc
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return errors.New("give both -tls-cert and -tls-key, or neither")
	}
	var certs *certReloader
	if *tlsCert != "" {
		var err error
		if certs, err = newCertReloader(*tlsCert, *tlsKey, log); err != nil {
			return err
		}
	}
	if *metricsTokenFile != "" {
		b, err := os.ReadFile(*metricsTokenFile)
		if err != nil {
			return fmt.Errorf("-metrics-token-file: %w", err)
		}
		cfg.MetricsToken = strings.TrimSpace(string(b))
		if len(cfg.MetricsToken) < 16 {
			return fmt.Errorf("-metrics-token-file: the token is %d bytes; use at least 16", len(cfg.MetricsToken))
		}
	}
	// Metrics are on the public listener only behind a token.
	cfg.HideMetrics = *metricsAddr != "" || cfg.MetricsToken == ""
	if *metricsAddr == "" && cfg.MetricsToken == "" {
		log.Warn("no -metrics-addr and no -metrics-token-file: metrics are not served")
	}
	if *web {
		cfg.Site = webdist.Handler()
		if !webdist.Available() {
			log.Warn("the web demo is not in this binary (make web, then build again): / says so")
		}
	}

	cfg.NATS.Connect, cfg.NATS.Embed = natsclient.Connect, natsembed.Start // used with -nats and -cluster-listen
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	var l net.Listener
	var ml net.Listener
	var serveErr error
	defer func() {
		if serveErr != nil { // not started: stop TURN
			srv.Shutdown(context.Background())
		}
	}()
	if l, serveErr = net.Listen("tcp", *addr); serveErr != nil {
		return serveErr
	}
	if *metricsAddr != "" {
		if ml, serveErr = net.Listen("tcp", *metricsAddr); serveErr != nil {
			l.Close()
			return serveErr
		}
	}
	if host, _, err := net.SplitHostPort(l.Addr().String()); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
			log.Warn("listening on a non-loopback address: other machines can connect", "addr", l.Addr().String())
		}
	}
	scheme := "http"
	if certs != nil {
		l = tls.NewListener(l, &tls.Config{GetCertificate: certs.get, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
		scheme = "https"
	}

	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(l) }()
	var ms *http.Server
	if ml != nil {
		ms = &http.Server{Handler: metricsMux(srv), ReadHeaderTimeout: 5 * time.Second}
		go func() { errc <- ms.Serve(ml) }()
		log.Info("metrics listening", "addr", ml.Addr().String())
	}
	sc := srv.Config()
	log.Info("signaling server ready", "url", scheme+"://"+l.Addr().String(), "turn", cfg.TURN != nil, "trusted_proxies", prefixList{&cfg.TrustedProxies}.String(), "ipv4_prefixes", prefixLimits{&sc.IPv4Prefixes}.String(), "ipv6_prefixes", prefixLimits{&sc.IPv6Prefixes}.String(), "web_demo", cfg.Site != nil && webdist.Available())
	if ready != nil {
		ready(l.Addr().String())
	}

	select {
	case err := <-errc:
		if ms != nil {
			ms.Close()
		}
		srv.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	if onShutdown != nil {
		onShutdown(context.Cause(ctx).Error())
	}
	log.Info("shutting down", "cause", context.Cause(ctx).Error(), "timeout", shutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	if ms != nil {
		ms.Shutdown(sctx)
	}
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	for range 1 + btoi(ms != nil) {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func metricsMux(srv *server.Server) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", srv.MetricsHandler())
	return mux
}

// turnConfig builds the TURN configuration from its flags.
func turnConfig(udp, tcp, ip, bind, ports string) (*server.TURNConfig, error) {
	tc := &server.TURNConfig{ListenUDP: udp, ListenTCP: tcp}
	if ip == "" {
		return nil, errors.New("-turn needs -turn-ip, the public address peers reach the relay at")
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return nil, fmt.Errorf("-turn-ip: %w", err)
	}
	tc.RelayIP = a
	if bind != "" {
		if tc.RelayBind, err = netip.ParseAddr(bind); err != nil {
			return nil, fmt.Errorf("-turn-bind: %w", err)
		}
	}
	if ports != "" {
		lo, hi, ok := strings.Cut(ports, "-")
		first, err1 := strconv.ParseUint(lo, 10, 16)
		last, err2 := strconv.ParseUint(hi, 10, 16)
		if !ok || err1 != nil || err2 != nil || first == 0 || first > last {
			return nil, fmt.Errorf("-turn-ports %q: want min-max, e.g. 49160-49200", ports)
		}
		tc.MinPort, tc.MaxPort = uint16(first), uint16(last)
	}
	return tc, nil
}

// certReloader serves a certificate from files, reloading them when they
// change (checked at most every 10 s), so a renewed certificate is picked
// up without a restart. A failed reload keeps the old one and is logged.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	mtime   time.Time
	checked time.Time
}

func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *certReloader) modTime() time.Time {
	var t time.Time
	for _, f := range []string{r.certFile, r.keyFile} {
		if fi, err := os.Stat(f); err == nil && fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t
}

func (r *certReloader) load() error {
	mt := r.modTime()
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	r.cert, r.mtime = &c, mt
	return nil
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.checked) > 10*time.Second {
		r.checked = now
		if r.modTime().After(r.mtime) {
			if err := r.load(); err != nil {
				r.log.Error("reloading the TLS certificate failed; keeping the old one", "err", err)
			} else {
				r.log.Info("TLS certificate reloaded", "file", r.certFile)
			}
		}
	}
	return r.cert, nil
}
