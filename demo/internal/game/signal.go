package game

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/ragsync/ragsync/internal/hedge"
)

// DefaultSignal is the signaling server the demo looks for first.
const DefaultSignal = "http://127.0.0.1:8080"

// healthy reports whether a signaling server answers GET /healthz at base.
func healthy(ctx context.Context, base string, timeout time.Duration) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("signaling URL %q: %w", base, err)
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	}
	u.Path, u.RawQuery = "/healthz", ""
	return getOK(ctx, u.String(), timeout)
}

// healthRetryFor is how long the demo keeps checking a signaling server
// given with -signal before it says none answers: on a lossy link one
// check (its TCP handshake, its request) easily takes longer than its
// timeout, and a server restarting refuses connections for a moment.
const healthRetryFor = 30 * time.Second

// healthyRetry checks the server at base until one check succeeds or
// within has passed, with backoff (250 ms doubling to 2 s); each check
// (hedged: see healthHedge) is
// bounded by timeout at first, doubling to 4× (a lossy link loses TCP
// handshakes, whose retransmissions wait 1, 2, 4 s). It returns the last
// check's error.
func healthyRetry(ctx context.Context, base string, timeout, within time.Duration) error {
	deadline := time.Now().Add(within)
	backoff, limit := 250*time.Millisecond, 4*timeout
	for {
		err := healthyHedged(ctx, base, min(timeout, max(time.Until(deadline), time.Second)))
		if err == nil || ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			return err
		}
		if _, perr := url.Parse(base); perr != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		timeout = min(2*timeout, limit)
		backoff = min(2*backoff, 2*time.Second)
	}
}

// healthHedge: a check that has not answered within this long gets
// another alongside it, up to healthHedgeMost at once (see hedge.Race):
// on a lossy link a lost SYN or request waits for TCP's retransmission
// timer (1 s, doubling), a fresh connection does not.
const (
	healthHedge     = 500 * time.Millisecond
	healthHedgeMost = 4
)

// healthyHedged is healthy with staggered parallel checks (see
// healthHedge); each is bounded by timeout.
func healthyHedged(ctx context.Context, base string, timeout time.Duration) error {
	_, err := hedge.Race(ctx, healthHedge, healthHedgeMost, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, healthy(ctx, base, timeout)
	}, nil)
	return err
}

// IsLoopbackURL reports whether u's host is a loopback address or
// "localhost".
func IsLoopbackURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	h := p.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
