// Command signal runs the ragsync signaling server: rooms by code, quick
// match, SDP/ICE relay over WebSocket, and the TCP fallback relay, all on
// one HTTP address.
//
//	go run ./cmd/signal                       # listens on 127.0.0.1:8080 (this machine only)
//	go run ./cmd/signal -addr :8080           # listens on every interface: reachable by other machines
//	go run ./cmd/signal -log-format json -log-level debug
//
// Endpoints: ws://ADDR/ws?v=1 (signaling), http://ADDR/relay?v=1 (TCP relay),
// http://ADDR/healthz (JSON counters). Every limit of signaling.Config has
// a flag; 0 means the library default, shown in -help. SIGINT or SIGTERM
// shuts down gracefully: clients get a shutting_down error and a going-away
// close, relay streams get -shutdown-timeout to finish.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ragsync/ragsync/signaling"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr, func(string) {
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

// run serves until ctx is done, then shuts down gracefully. onShutdown is
// called when shutdown starts; ready, if not nil, gets the listen address.
func run(ctx context.Context, args []string, stderr io.Writer, onShutdown func(string), ready func(addr string)) error {
	fs := flag.NewFlagSet("signal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg signaling.Config
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
	origins := fs.String("origins", "", "comma-separated browser origin patterns allowed to connect (default: same origin only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
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
	if *origins != "" {
		cfg.OriginPatterns = strings.Split(*origins, ",")
	}

	srv, err := signaling.NewServer(cfg)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	log := cfg.Logger
	if host, _, err := net.SplitHostPort(l.Addr().String()); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
			log.Warn("listening on a non-loopback address: other machines can connect", "addr", l.Addr().String())
		}
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	if ready != nil {
		ready(l.Addr().String())
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if onShutdown != nil {
		onShutdown(context.Cause(ctx).Error())
	}
	log.Info("shutting down", "cause", context.Cause(ctx).Error(), "timeout", shutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
