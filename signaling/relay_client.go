package signaling

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/ragsync/ragsync/internal/websocket"
	"github.com/ragsync/ragsync/signaling/internal/wire"
)

// DialRelayWebSocket attaches to the server's relay over a WebSocket, as
// DialRelay does over a raw stream, for clients that cannot open one (a
// browser; in a js/wasm build it uses the browser's WebSocket). It
// returns once the other player has attached too (on either kind of
// relay), with the byte stream to that player; or ctx.Err(); or the
// server's refusal as *Error. baseURL is the URL given to Dial.
func DialRelayWebSocket(ctx context.Context, baseURL string, token RelayToken, cfg ClientConfig) (net.Conn, error) {
	cfg.Logger = cfg.withDefaults().Logger
	return withFallbacks(ctx, baseURL, &cfg, func(u string) (net.Conn, error) { return dialRelayWSOne(ctx, u, token, cfg) })
}

func dialRelayWSOne(ctx context.Context, baseURL string, token RelayToken, cfg ClientConfig) (net.Conn, error) {
	u, err := endpointURL(baseURL, "/relay", true)
	if err != nil {
		return nil, err
	}
	if u, err = relayPath(u); err != nil {
		return nil, err
	}
	conn, _, err := websocket.Dial(ctx, u, dialOptions(&cfg))
	if err != nil {
		return nil, fmt.Errorf("signaling: websocket relay dial %s: %w", u, err)
	}
	conn.SetReadLimit(4096)
	typ, data, err := conn.Read(ctx)
	var ch wire.RelayChallenge
	if err == nil && (typ != websocket.MessageText || json.Unmarshal(data, &ch) != nil || ch.Type != "relay_challenge") {
		// A refusal before the challenge (e.g. origin_not_allowed).
		conn.CloseNow()
		if m, derr := DecodeMessage(data); derr == nil && m.Type == TypeError {
			return nil, &Error{Code: m.Code, Message: m.Text}
		}
		return nil, fmt.Errorf("signaling: websocket relay %s: expected a challenge, got %q", u, truncate(string(data), 100))
	}
	if err == nil {
		tok, key := token.seat()
		if key == "" {
			conn.CloseNow()
			return nil, &Error{Code: ErrBadToken, Message: "relay token " + token.String() + " has no seat key (use the Token of the Pairing, which carries it)"}
		}
		hello, _ := json.Marshal(wire.RelayHello{Type: "relay", Token: string(tok), Proof: wire.Proof(key, wire.ProofRelay, ch.Challenge, string(tok))})
		err = conn.Write(ctx, websocket.MessageText, hello)
	}
	if err == nil {
		typ, data, err = conn.Read(ctx)
	}
	if err != nil {
		conn.CloseNow()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("signaling: websocket relay %s: waiting for the peer: %w", u, err)
	}
	if typ == websocket.MessageText && string(data) == wire.RelayAttached {
		return websocket.NetConn(context.Background(), conn, websocket.MessageBinary), nil
	}
	conn.CloseNow()
	if m, derr := DecodeMessage(data); derr == nil && m.Type == TypeError {
		return nil, &Error{Code: m.Code, Message: m.Text}
	}
	return nil, fmt.Errorf("signaling: websocket relay %s: unexpected reply %q", u, truncate(string(data), 100))
}

// relayPath swaps the last path element of a ws(s) URL made by
// endpointURL for "relay" (a URL whose path was empty already has it).
func relayPath(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Path != "/relay" {
		if i := strings.LastIndexByte(u.Path, '/'); i >= 0 {
			u.Path = u.Path[:i] + "/relay"
		}
	}
	return u.String(), nil
}
