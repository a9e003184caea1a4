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
	dial := (&net.Dialer{}).DialContext
	var tlsConfig *tls.Config
	if cfg.HTTPClient != nil {
		if tr, ok := cfg.HTTPClient.Transport.(*http.Transport); ok {
			if tr.DialContext != nil {
				dial = tr.DialContext
			}
			tlsConfig = tr.TLSClientConfig
		}
	}
	conn, err := dial(ctx, "tcp", host)
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
	c, err := relayHandshake(conn, u, token)
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

func relayHandshake(conn net.Conn, u *url.URL, token RelayToken) (net.Conn, error) {
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\n" +
		"Host: " + u.Host + "\r\n" +
		"Connection: Upgrade\r\n" +
		"Upgrade: " + relayUpgrade + "\r\n" +
		"Authorization: Bearer " + string(token) + "\r\n" +
		"User-Agent: ragsync-signaling\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return nil, fmt.Errorf("signaling: relay request: %w", err)
	}
	br := bufio.NewReaderSize(conn, 1024)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		return nil, fmt.Errorf("signaling: relay response: %w", err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if !strings.EqualFold(resp.Header.Get("Upgrade"), relayUpgrade) {
			return nil, fmt.Errorf("signaling: relay: server upgraded to %q, want %q", resp.Header.Get("Upgrade"), relayUpgrade)
		}
		if n := br.Buffered(); n > 0 {
			early, _ := br.Peek(n)
			return &prefixConn{Conn: conn, prefix: append([]byte(nil), early...)}, nil
		}
		return conn, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	var m Message
	if json.Unmarshal(body, &m) == nil && m.Type == TypeError && m.Code != "" {
		return nil, &Error{Code: m.Code, Message: m.Text}
	}
	return nil, fmt.Errorf("signaling: relay refused: %s: %s", resp.Status, truncate(strings.TrimSpace(string(body)), 200))
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
