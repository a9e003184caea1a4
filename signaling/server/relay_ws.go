package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/ragsync/ragsync/signaling"
	"github.com/ragsync/ragsync/signaling/internal/wire"
)

// The WebSocket relay: the relay for clients that cannot open a raw
// stream (browsers). GET /relay?v=1 with a WebSocket upgrade (the Origin
// check of /ws applies); then:
//
//  1. the server sends the text message
//     {"type":"relay_challenge","challenge":CHALLENGE}, a random nonce of
//     this connection; the client answers with one text message,
//     {"type":"relay","token":TOKEN,"proof":PROOF} (PROOF the seat's
//     proof of possession over CHALLENGE, see relaytoken.go), within
//     Config.HandshakeTimeout; a token without a matching proof is
//     refused (bad_token) before it touches the pairing's relay;
//  2. when the other player has attached too (raw or WebSocket), the
//     server sends the text message {"type":"relay_attached"}; a refusal
//     is an error message ({"type":"error","code":...}) followed by a
//     close;
//  3. from then on, binary messages carry the stream: their payloads,
//     concatenated, are the bytes of the raw relay. Message boundaries
//     mean nothing (the server splits and joins them as it copies). A
//     text message ends the stream.
//
// The two players' relay streams are copied to each other whatever their
// kind, so a browser on the WebSocket relay and a native peer on the raw
// one meet. Both kinds end alike: when either player closes, when no byte
// has moved in either direction for Config.RelayIdleTimeout (one direction
// may stay silent for any time while the other carries bytes), or when a
// write to a player that stopped reading takes Config.WriteTimeout.

// relayAttached is the server's text message once the stream runs.
const relayAttached = wire.RelayAttached

// relayHello is the client's first WebSocket relay message.
type relayHello = wire.RelayHello

func (s *Server) handleRelayWS(w http.ResponseWriter, r *http.Request) {
	originErr := s.checkOrigin(r)
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		OriginPatterns:     s.cfg.OriginPatterns,
		CompressionMode:    websocket.CompressionDisabled,
		InsecureSkipVerify: originErr != nil, // refused below, with a message
	})
	if err != nil {
		s.relaysRefused.Add(1)
		s.refusal(signaling.ErrBadMessage, reasonClient)
		s.log.Debug("signaling: websocket relay accept failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	if originErr != nil {
		s.refuseRelayWS(conn, originErr, reasonClient)
		return
	}
	if v := r.URL.Query().Get("v"); v != fmt.Sprint(signaling.ProtocolVersion) {
		s.refuseRelayWS(conn, &signaling.Error{Code: signaling.ErrUnsupportedVersion, Message: fmt.Sprintf("protocol version %q not supported; this server speaks v=%d", truncate(v, 16), signaling.ProtocolVersion)}, reasonClient)
		return
	}
	conn.SetReadLimit(1024)
	challenge := nonce()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.HandshakeTimeout)
	hello, _ := json.Marshal(wire.RelayChallenge{Type: "relay_challenge", Challenge: challenge})
	err = conn.Write(ctx, websocket.MessageText, hello)
	var typ websocket.MessageType
	var data []byte
	if err == nil {
		typ, data, err = conn.Read(ctx)
	}
	cancel()
	if err != nil {
		s.relaysRefused.Add(1)
		s.refusal(signaling.ErrBadMessage, reasonClient)
		conn.CloseNow()
		return
	}
	var h relayHello
	if typ != websocket.MessageText || json.Unmarshal(data, &h) != nil || h.Type != "relay" || h.Token == "" {
		s.refuseRelayWS(conn, &signaling.Error{Code: signaling.ErrBadToken, Message: `the first message must be {"type":"relay","token":"<token from paired>","proof":"<proof>"}`}, reasonClient)
		return
	}
	if perr := s.checkProof(signaling.RelayToken(h.Token), wire.ProofRelay, challenge, h.Proof); perr != nil {
		s.refuseRelayWS(conn, perr, reasonClient)
		return
	}
	j := s.joinRelay(r, r.Context(), string(h.Token))
	if j.st == nil {
		if j.err != nil {
			s.refuseRelayWS(conn, j.err, j.reason)
		} else {
			conn.CloseNow()
		}
		return
	}
	defer j.release()
	wctx, wcancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	err = conn.Write(wctx, websocket.MessageText, []byte(relayAttached))
	wcancel()
	var nc net.Conn
	if err == nil {
		nc = websocket.NetConn(context.Background(), conn, websocket.MessageBinary)
	} else {
		conn.CloseNow()
	}
	s.runStream(j.st, j.side, nc, nil)
}

// checkOrigin applies the WebSocket Origin check (as coder/websocket's
// Accept does: the request's own host, or Config.OriginPatterns) and
// returns the refusal for a page of another origin, nil otherwise
// (non-browser clients send no Origin).
func (s *Server) checkOrigin(r *http.Request) *signaling.Error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err == nil && u.Host != "" {
		if strings.EqualFold(r.Host, u.Host) {
			return nil
		}
		for _, p := range s.cfg.OriginPatterns {
			target := u.Host
			if strings.Contains(p, "://") {
				target = u.Scheme + "://" + u.Host
			}
			if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(target)); ok {
				return nil
			}
		}
	}
	return &signaling.Error{Code: signaling.ErrOriginNotAllowed, Message: fmt.Sprintf("pages from origin %q may not connect: this server accepts its own origin (%s) and the origins it was started with (-origins, Config.OriginPatterns: %q)", truncate(origin, 100), truncate(r.Host, 100), s.cfg.OriginPatterns)}
}

// refuseRelayWS sends the refusal as an error message and closes.
func (s *Server) refuseRelayWS(conn *websocket.Conn, e *signaling.Error, reason string) {
	s.relaysRefused.Add(1)
	s.refusal(e.Code, reason)
	s.log.Debug("signaling: websocket relay refused", "code", e.Code, "msg", e.Message)
	b, _ := signaling.AppendMessage(nil, errMessage(e))
	ctx, cancel := context.WithTimeout(context.Background(), min(s.cfg.WriteTimeout, 5*time.Second))
	err := conn.Write(ctx, websocket.MessageText, b)
	cancel()
	if err != nil {
		conn.CloseNow()
		return
	}
	conn.Close(websocket.StatusPolicyViolation, string(e.Code))
}
