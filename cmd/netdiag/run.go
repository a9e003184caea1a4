package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/ragsync/ragsync/internal/lanaddr"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/signaling/server"
)

const defaultSignal = "http://127.0.0.1:8080"

type options struct {
	signal     string
	signalSet  bool
	room       string
	quick      bool
	self       bool
	duration   time.Duration
	rate       int
	size       int
	jsonOut    bool
	wait       time.Duration
	iceServers []string
	interfaces string
	udp4       bool
	webrtcWait time.Duration
	verbose    bool
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("netdiag", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.signal, "signal", defaultSignal, "signaling server URL")
	fs.StringVar(&o.room, "room", "", "room code agreed with the other machine (joined, or created if it does not exist yet); without it (and without -quick or -self) a room is created and its code printed")
	fs.BoolVar(&o.quick, "quick", false, "pair by quick match instead of a room code")
	fs.BoolVar(&o.self, "self", false, "run both ends in this process (against -signal if given, else an embedded server on 127.0.0.1:0)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long to measure after connecting (longer, within bounds, until each transport that is up has a measured round trip)")
	fs.IntVar(&o.rate, "rate", 60, "test messages per second each way (a game's tick rate)")
	fs.IntVar(&o.size, "size", 200, "test message size in bytes")
	fs.BoolVar(&o.jsonOut, "json", false, "print the report as JSON")
	fs.DurationVar(&o.wait, "wait", 5*time.Minute, "how long to wait for the other machine to join")
	var ice stringList
	fs.Var(&ice, "ice-server", "STUN or TURN server URL (repeatable), e.g. stun:stun.example.org:3478; none by default")
	fs.StringVar(&o.interfaces, "interfaces", "auto", "ICE interfaces: auto (loopback only if -signal is a loopback URL), loopback or all")
	fs.BoolVar(&o.udp4, "udp4", false, "use only UDP over IPv4 for WebRTC")
	fs.DurationVar(&o.webrtcWait, "webrtc-timeout", 0, "how long WebRTC may take to connect before the session settles on TCP (0: 5s)")
	fs.BoolVar(&o.verbose, "v", false, "log session events and debug output to stderr")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "signal" {
			o.signalSet = true
		}
	})
	o.iceServers = ice
	switch {
	case o.duration <= 0:
		return o, fmt.Errorf("-duration must be positive, got %v", o.duration)
	case o.rate < 1 || o.rate > 1000:
		return o, fmt.Errorf("-rate must be 1..1000 messages per second, got %d", o.rate)
	case o.size < 8 || o.size > p2p.DefaultMaxMessageSize:
		return o, fmt.Errorf("-size must be 8..%d bytes, got %d", p2p.DefaultMaxMessageSize, o.size)
	case o.self && (o.room != "" || o.quick):
		return o, errors.New("-self runs both ends: it takes neither -room nor -quick")
	case o.quick && o.room != "":
		return o, errors.New("use either -room or -quick")
	}
	if _, err := parseInterfaces(o.interfaces); err != nil {
		return o, err
	}
	return o, nil
}

func parseInterfaces(s string) (p2p.InterfacePolicy, error) {
	switch s {
	case "auto":
		return p2p.InterfacesAuto, nil
	case "loopback":
		return p2p.InterfacesLoopback, nil
	case "all":
		return p2p.InterfacesAll, nil
	}
	return 0, fmt.Errorf("-interfaces must be auto, loopback or all, got %q", s)
}

func (o options) config(log *slog.Logger) p2p.Config {
	pol, _ := parseInterfaces(o.interfaces)
	c := p2p.Config{
		Interfaces:    pol,
		UDP4Only:      o.udp4,
		WebRTCTimeout: o.webrtcWait,
		// Ping the standby transport often too, so both get an RTT
		// distribution over the run.
		StandbyPingInterval: 100 * time.Millisecond,
		Logger:              log,
	}
	for _, u := range o.iceServers {
		c.ICEServers = append(c.ICEServers, webrtc.ICEServer{URLs: []string{u}})
	}
	return c
}

// run is the whole command; main passes the process's arguments and
// streams.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.DiscardHandler)
	if o.verbose {
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if o.self {
		return runSelf(ctx, o, stdout, stderr, log)
	}
	s, err := connect(ctx, o, stderr, log)
	if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
		return fmt.Errorf("%w\nno signaling server answers at %s: start one there (go run ./cmd/signal, or a demo), pass -signal URL, or try netdiag alone on this machine with -self", err, o.signal)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintf(stderr, "connected as %v (room %s); measuring for %v…\n", s.Role(), s.Room(), o.duration)
	r, wait := measure(ctx, s, o, stderr)
	// Give the peer time to take its snapshot before our bye ends it.
	time.Sleep(300 * time.Millisecond)
	s.Close()
	wait()
	return printReports(stdout, o.jsonOut, []report{r})
}

func connect(ctx context.Context, o options, stderr io.Writer, log *slog.Logger) (*p2p.Session, error) {
	cfg := o.config(log)
	ctx, cancel := context.WithTimeout(ctx, o.wait)
	defer cancel()
	switch {
	case o.quick:
		fmt.Fprintf(stderr, "waiting for a quick-match partner on %s…\n", o.signal)
		s, err := p2p.Connect(ctx, o.signal, p2p.QuickMatch, cfg)
		return s, o.waitErr(ctx, "nobody paired by quick match", err)
	case o.room != "":
		s, err := p2p.Connect(ctx, o.signal, o.room, cfg)
		return s, o.waitErr(ctx, "nobody joined room "+strings.ToUpper(o.room), err)
	}
	room, err := p2p.CreateRoom(ctx, o.signal, cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(stderr, joinHint(o.signal, room.Code(), lanaddr.IPv4s()))
	s, err := room.Connect(ctx)
	return s, o.waitErr(ctx, "nobody joined room "+room.Code(), err)
}

// waitErr says what a run ran out of -wait for, instead of a bare context
// deadline error, when ctx (bounded by -wait) expired; other errors are
// returned as they are.
func (o options) waitErr(ctx context.Context, what string, err error) error {
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%s within %v (-wait): %w", what, o.wait, err)
}

// joinHint is what the host prints for the other machine: the command to
// run there, with a signaling address that machine can use. A loopback
// address (this machine's own) is no use to it: the command then names each
// of this machine's network addresses (ips) with the same port instead,
// and says what the server and this side need for it to work.
func joinHint(signal, code string, ips []net.IP) string {
	var b strings.Builder
	fmt.Fprintf(&b, "room %s created; on the other machine run:\n\n", code)
	u, err := url.Parse(signal)
	if err != nil || !isLoopback(u.Hostname()) {
		fmt.Fprintf(&b, "\tnetdiag -signal %s -room %s\n\n", signal, code)
		return b.String()
	}
	if len(ips) == 0 {
		fmt.Fprintf(&b, "\tnetdiag -signal %s -room %s\n\n", signal, code)
		fmt.Fprintf(&b, "(%s is this machine's loopback address, and this machine has no other network address: "+
			"only a run on this machine can join. Give -signal a server both machines reach.)\n\n", signal)
		return b.String()
	}
	for _, ip := range ips {
		v := *u
		v.Host = net.JoinHostPort(ip.String(), u.Port())
		if u.Port() == "" {
			v.Host = ip.String()
		}
		fmt.Fprintf(&b, "\tnetdiag -signal %s -room %s\n", v.String(), code)
	}
	fmt.Fprintf(&b, "\n(%s is this machine's loopback address, which the other machine cannot use; the line above names "+
		"this machine's network address instead. It works if the signaling server listens on it (go run ./cmd/signal -addr :%s), "+
		"and WebRTC reaches the other machine if this side runs with -interfaces all.)\n\n", signal, portOr(u, "8080"))
	return b.String()
}

func portOr(u *url.URL, def string) string {
	if p := u.Port(); p != "" {
		return p
	}
	return def
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// runSelf connects two sessions in this process and reports both.
func runSelf(ctx context.Context, o options, stdout, stderr io.Writer, log *slog.Logger) error {
	url := o.signal
	if !o.signalSet {
		u, stop, err := embeddedServer(log)
		if err != nil {
			return err
		}
		defer stop()
		url = u
		fmt.Fprintf(stderr, "embedded signaling server on %s\n", url)
	}
	o.signal = url
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	room, err := p2p.CreateRoom(cctx, url, o.config(log.With("peer", "host")))
	if err != nil {
		return err
	}
	var host *p2p.Session
	var hostErr error
	done := make(chan struct{})
	go func() { defer close(done); host, hostErr = room.Connect(cctx) }()
	guest, err := p2p.Connect(cctx, url, room.Code(), o.config(log.With("peer", "guest")))
	<-done
	if err == nil {
		err = hostErr
	}
	if err != nil {
		if host != nil {
			host.Close()
		}
		if guest != nil {
			guest.Close()
		}
		return err
	}
	defer host.Close()
	defer guest.Close()
	fmt.Fprintf(stderr, "both ends connected (room %s); measuring for %v…\n", room.Code(), o.duration)
	// Both ends measure, each until its own end, and close only when
	// both are done: neither cuts the other's measurement short.
	var wg sync.WaitGroup
	var rh, rg report
	var waitH, waitG func()
	wg.Add(2)
	go func() { defer wg.Done(); rh, waitH = measure(ctx, host, o, stderr) }()
	go func() { defer wg.Done(); rg, waitG = measure(ctx, guest, o, io.Discard) }()
	wg.Wait()
	host.Close()
	guest.Close()
	waitH()
	waitG()
	return printReports(stdout, o.jsonOut, []report{rh, rg})
}

// embeddedServer runs a signaling server on 127.0.0.1:0.
func embeddedServer(log *slog.Logger) (string, func(), error) {
	srv, err := server.Start("127.0.0.1:0", server.Config{Logger: log.With("component", "signaling")})
	if err != nil {
		return "", nil, err
	}
	return srv.URL(), func() { srv.Close() }, nil
}

// measure exchanges test messages at o.rate for o.duration and builds the
// report. Each message carries a sequence number (the session counts
// loss/duplicates/reordering from its own header; this checks integrity).
//
// It does not close the session: the caller does, once the peer has had
// time to finish its own measurement, then calls the returned wait for
// measure's event reader to end.
func measure(ctx context.Context, s *p2p.Session, o options, progress io.Writer) (report, func()) {
	start := time.Now()
	before := s.Stats()
	var evMu sync.Mutex
	var events []p2p.Event
	var evWG sync.WaitGroup
	evWG.Add(1)
	go func() {
		defer evWG.Done()
		for ev := range s.Events() {
			evMu.Lock()
			events = append(events, ev)
			evMu.Unlock()
		}
	}()

	msg := make([]byte, o.size)
	var sent, recv, bytesIn, corrupt uint64
	tick := time.NewTicker(time.Second / time.Duration(o.rate))
	defer tick.Stop()
	end := time.NewTimer(o.duration)
	defer end.Stop()
	nextProgress := time.Now().Add(time.Second)
	var seq uint64
	drain := func() {
		s.Poll(func(p []byte) {
			recv++
			bytesIn += uint64(len(p))
			if len(p) != o.size || binary.BigEndian.Uint64(p[len(p)-8:]) != ^binary.BigEndian.Uint64(p[:8]) {
				corrupt++
			}
		})
	}
	var stopped string
	// After -duration, the run goes on until every transport that is up
	// has a measured round trip (a report without one says nothing of
	// the link) and none is still connecting: a loaded machine can take
	// longer than -duration for either. The wait is bounded by attempts,
	// not time: at most maxUnmeasured more pings on a transport, and
	// maxExtraMessages × rate test messages in all.
	var ended bool       // -duration is over
	var extra int        // test messages sent since
	var evAtEnd int      // events up to the end of -duration
	var endedByPeer bool // the peer closed during the extension
	var pingsAtEnd [2]uint64
	settled := func() bool { return pingsSettled(s.Stats(), pingsAtEnd, extra, o.rate) }
loop:
	for {
		select {
		case <-ctx.Done():
			stopped = "interrupted by the user"
			break loop
		case <-s.Done():
			if ended {
				// The peer's own run ended first: what was measured
				// stands.
				endedByPeer = true
				break loop
			}
			stopped = fmt.Sprint(s.Err())
			break loop
		case <-end.C:
			ended = true
			st := s.Stats()
			pingsAtEnd = [2]uint64{st.WebRTC.PingsSent, st.TCP.PingsSent}
			evMu.Lock()
			evAtEnd = len(events)
			evMu.Unlock()
			if settled() {
				break loop
			}
			continue
		case <-tick.C:
		}
		binary.BigEndian.PutUint64(msg, seq)
		binary.BigEndian.PutUint64(msg[len(msg)-8:], ^seq)
		seq++
		if err := s.Send(msg); err == nil {
			sent++
		}
		drain()
		if now := time.Now(); now.After(nextProgress) {
			st := s.Stats()
			fmt.Fprintf(progress, "  %2.0fs  %-6v rtt %-8v loss %5.2f%%  %s\n", now.Sub(start).Seconds(), st.Transport,
				st.RTT.Last.Round(10*time.Microsecond), 100*st.LossRecent, st.State)
			nextProgress = nextProgress.Add(time.Second)
		}
		if ended {
			extra++
			if settled() {
				break loop
			}
		}
	}
	elapsed := time.Since(start)
	// Let the last messages arrive (and the peer finish its own run)
	// before taking the snapshot and closing.
	time.Sleep(200 * time.Millisecond)
	drain()
	st := s.Stats()
	evMu.Lock()
	evs := append([]p2p.Event(nil), events...)
	evMu.Unlock()
	if endedByPeer {
		evs = evs[:evAtEnd] // the peer's goodbye is not an interruption
	}
	r := buildReport(s, before, st, evs, elapsed, sent, recv, bytesIn, corrupt, o)
	r.Stopped = stopped
	if stopped != "" {
		r.Verdict, r.VerdictReason = "poor", "the measurement ended early: "+stopped
	}
	return r, evWG.Wait
}

// Bounds of the wait after -duration for measured round trips (see
// measure).
const (
	// maxUnmeasured: pings sent on a transport after -duration without
	// a measured round trip. A ping can be answered and still not be
	// measured: the session leaves out round trips that overlap a stall
	// of this process (a loaded machine stalls often).
	maxUnmeasured    = 100
	maxExtraMessages = 20 // seconds of test messages at -rate
)

// pingsSettled reports whether the measurement may end: every transport
// is up with a round trip measured in the last 10 s, or down, or
// disabled, or has had its attempts: maxUnmeasured pings after -duration
// (atEnd: each transport's PingsSent then, WebRTC first), or
// maxExtraMessages × rate test messages after -duration (extra so far).
func pingsSettled(st p2p.Stats, atEnd [2]uint64, extra, rate int) bool {
	if extra >= maxExtraMessages*rate {
		return true
	}
	for i, l := range []*p2p.LinkStats{&st.WebRTC, &st.TCP} {
		switch {
		case l.State == p2p.LinkConnecting:
			return false
		case l.State == p2p.LinkUp && l.RTT.Recent == 0 && l.PingsSent < atEnd[i]+maxUnmeasured:
			return false
		}
	}
	return true
}
