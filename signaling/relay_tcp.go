//go:build !js

package signaling

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ragsync/ragsync/internal/hedge"
	"github.com/ragsync/ragsync/internal/thintcp"
	"github.com/ragsync/ragsync/signaling/internal/wire"
)

// DialRelay attaches to the TCP relay of the server at baseURL (the same
// URL given to Dial; http(s):// or ws(s)://) with this player's token from
// its Pairing. It returns once the other player has attached too, with a
// raw byte stream to that player; or ctx.Err(); or the server's refusal as
// *Error (ErrBadToken, ErrTokenUsed, ErrPeerTimeout, ErrTooManyRelays,
// ErrShuttingDown).
//
// It reaches the server the way the signaling client does: when
// cfg.HTTPClient's Transport is an *http.Transport, with its DialContext
// and TLSClientConfig (so a network injected for the WebSocket serves the
// relay too); otherwise with a plain net.Dialer and a default TLS
// configuration for https:// and wss://.
func DialRelay(ctx context.Context, baseURL string, token RelayToken, cfg ClientConfig) (net.Conn, error) {
	cfg.Logger = cfg.withDefaults().Logger
	return withFallbacks(ctx, baseURL, &cfg, func(u string) (net.Conn, error) { return dialRelayOne(ctx, u, token, cfg) })
}

// relayConnectHedge: a relay's TCP connect not up within this long gets
// another alongside it, up to relayConnectHedgeMost at once (see
// internal/hedge): on a lossy link a lost SYN or SYN-ACK waits 1 s, then
// 2, 4 s, and a relay dial then failed on its 10 s deadline, while a
// fresh SYN gets through at its first try more often than not.
const (
	relayConnectHedge     = 300 * time.Millisecond
	relayConnectHedgeMost = 4
)

func dialRelayOne(ctx context.Context, baseURL string, token RelayToken, cfg ClientConfig) (net.Conn, error) {
	raw, err := endpointURL(baseURL, "/relay", false)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(raw)
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			host = net.JoinHostPort(u.Hostname(), "443")
		} else {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	dial := (&net.Dialer{Control: thintcp.Control}).DialContext
	var tlsConfig *tls.Config
	if cfg.HTTPClient != nil {
		if tr, ok := cfg.HTTPClient.Transport.(*http.Transport); ok {
			if tr.DialContext != nil {
				dial = tr.DialContext
			}
			tlsConfig = tr.TLSClientConfig
		}
	}
	// The TCP connect is hedged (see relayConnectHedge); TLS and the
	// relay request go over the first connection up, the others are
	// closed before they send anything.
	conn, err := hedge.Race(ctx, relayConnectHedge, relayConnectHedgeMost, func(ctx context.Context) (net.Conn, error) {
		return dial(ctx, "tcp", host)
	}, func(c net.Conn) { c.Close() })
	if err != nil {
		return nil, fmt.Errorf("signaling: relay dial %s: %w", host, err)
	}
	if u.Scheme == "https" {
		c := &tls.Config{}
		if tlsConfig != nil {
			c = tlsConfig.Clone()
		}
		if c.ServerName == "" {
			c.ServerName = u.Hostname()
		}
		tc := tls.Client(conn, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("signaling: relay TLS handshake with %s: %w", host, err)
		}
		conn = tc
	}
	// Make blocking I/O below give up when ctx ends.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	tok, key := token.seat()
	c, err := relayHandshake(conn, u, tok, key)
	if !stop() {
		conn.Close()
		return nil, ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return c, nil
}

// relayHandshake asks for the relay with token, answers the server's
// challenge with the seat's proof (made with key) on the same connection,
// and returns the stream once the server switches protocols.
func relayHandshake(conn net.Conn, u *url.URL, token RelayToken, key string) (net.Conn, error) {
	br := bufio.NewReaderSize(conn, 1024)
	proof := ""
	for attempt := 0; ; attempt++ {
		req := "GET " + u.RequestURI() + " HTTP/1.1\r\n" +
			"Host: " + u.Host + "\r\n" +
			"Connection: Upgrade\r\n" +
			"Upgrade: " + wire.RelayUpgrade + "\r\n" +
			"Authorization: Bearer " + string(token) + "\r\n"
		if proof != "" {
			req += wire.ProofHeader + ": " + proof + "\r\n"
		}
		req += "User-Agent: ragsync-signaling\r\n\r\n"
		if _, err := io.WriteString(conn, req); err != nil {
			return nil, fmt.Errorf("signaling: relay request: %w", err)
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		if err != nil {
			return nil, fmt.Errorf("signaling: relay response: %w", err)
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			if !strings.EqualFold(resp.Header.Get("Upgrade"), wire.RelayUpgrade) {
				return nil, fmt.Errorf("signaling: relay: server upgraded to %q, want %q", resp.Header.Get("Upgrade"), wire.RelayUpgrade)
			}
			if n := br.Buffered(); n > 0 {
				early, _ := br.Peek(n)
				return &prefixConn{Conn: conn, prefix: append([]byte(nil), early...)}, nil
			}
			return conn, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if ch := resp.Header.Get(wire.ChallengeHeader); resp.StatusCode == http.StatusUnauthorized && ch != "" && attempt == 0 {
			if key == "" {
				return nil, &Error{Code: ErrBadToken, Message: "relay token " + token.String() + " has no seat key (use the Token of the Pairing, which carries it)"}
			}
			proof = ch + "." + wire.Proof(key, wire.ProofRelay, ch, string(token))
			continue
		}
		var m Message
		if json.Unmarshal(body, &m) == nil && m.Type == TypeError && m.Code != "" {
			return nil, &Error{Code: m.Code, Message: m.Text}
		}
		return nil, fmt.Errorf("signaling: relay refused: %s: %s", resp.Status, truncate(strings.TrimSpace(string(body)), 200))
	}
}

// prefixConn returns bytes read ahead during the handshake before reading
// from the connection.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
