package game

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// DefaultSignal is the signaling server the demo looks for first.
const DefaultSignal = "http://127.0.0.1:8080"

// healthy reports whether a signaling server answers GET /healthz at base.
// It uses its own client without keep-alives, so it leaves no connection
// (or goroutine) behind.
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
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Timeout: timeout, Transport: tr}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answers %s", u, resp.Status)
	}
	return nil
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
