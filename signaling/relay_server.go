package signaling

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// relayUpgrade is the Upgrade token of the relay endpoint.
const relayUpgrade = "ragsync-relay/1"

// relayPair is the relay of one pairing: two tokens, and once both players
// have attached, the stream between them.
type relayPair struct {
	s      *Server
	room   RoomCode
	tokens [2]RelayToken

	// s.mu
	state   [2]uint8 // sideIdle, sideWaiting, sideAttached
	matched bool
	revoked bool

	matchCh  chan struct{} // closed when both sides are attached
	revokeCh chan struct{} // closed when the pairing ended before matching

	connMu sync.Mutex
	conns  [2]net.Conn
	nconns int
	ready  chan struct{} // closed when both conns are set, or on failure
	failed bool

	running    atomic.Int32 // copy loops still running
	bytes      [2]atomic.Uint64
	lastActive atomic.Int64
}

const (
	sideIdle uint8 = iota
	sideWaiting
	sideAttached
)

type relayTicket struct {
	p    *relayPair
	side int
}

// newRelayPair issues two tokens. Called with s.mu held.
func (s *Server) newRelayPair(code RoomCode) *relayPair {
	p := &relayPair{
		s:        s,
		room:     code,
		matchCh:  make(chan struct{}),
		revokeCh: make(chan struct{}),
		ready:    make(chan struct{}),
	}
	for i := range p.tokens {
		p.tokens[i] = newRelayToken()
		s.tokens[p.tokens[i]] = relayTicket{p: p, side: i}
	}
	return p
}

// revokeRelayPair forgets p's tokens; a side still waiting is refused. An
// established stream is not affected. Called with s.mu held.
func (s *Server) revokeRelayPair(p *relayPair) {
	for _, t := range p.tokens {
		delete(s.tokens, t)
	}
	if !p.matched && !p.revoked {
		p.revoked = true
		close(p.revokeCh)
	}
}

func (s *Server) refuseRelay(w http.ResponseWriter, status int, e *Error) {
	s.relaysRefused.Add(1)
	s.log.Debug("signaling: relay refused", "code", e.Code, "msg", e.Message)
	writeHTTPError(w, status, e)
}

func (s *Server) handleRelay(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", relayUpgrade) {
		w.Header().Set("Upgrade", relayUpgrade)
		s.refuseRelay(w, http.StatusUpgradeRequired, &Error{Code: ErrBadMessage, Message: "relay needs GET with Connection: Upgrade and Upgrade: " + relayUpgrade})
		return
	}
	if v := r.URL.Query().Get("v"); v != fmt.Sprint(ProtocolVersion) {
		s.refuseRelay(w, http.StatusBadRequest, &Error{Code: ErrUnsupportedVersion, Message: fmt.Sprintf("protocol version %q not supported; this server speaks v=%d", truncate(v, 16), ProtocolVersion)})
		return
	}
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || len(tok) != relayTokenLen {
		s.refuseRelay(w, http.StatusForbidden, &Error{Code: ErrBadToken, Message: "missing or malformed relay token (Authorization: Bearer <token from paired>)"})
		return
	}
	token := RelayToken(tok)

	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.refuseRelay(w, http.StatusServiceUnavailable, &Error{Code: ErrShuttingDown, Message: "server is shutting down"})
		return
	}
	t, ok := s.tokens[token]
	if !ok {
		s.mu.Unlock()
		s.refuseRelay(w, http.StatusForbidden, &Error{Code: ErrBadToken, Message: fmt.Sprintf("relay token %s is unknown or its pairing has ended", token)})
		return
	}
	p, side := t.p, t.side
	if p.state[side] != sideIdle {
		s.mu.Unlock()
		s.refuseRelay(w, http.StatusConflict, &Error{Code: ErrTokenUsed, Message: fmt.Sprintf("relay token %s of room %s is already in use", token, p.room)})
		return
	}
	if p.state[1-side] == sideWaiting {
		if len(s.relays) >= s.cfg.MaxRelays {
			s.mu.Unlock()
			s.refuseRelay(w, http.StatusServiceUnavailable, &Error{Code: ErrTooManyRelays, Message: fmt.Sprintf("server has its maximum of %d relay streams; try again later", s.cfg.MaxRelays)})
			return
		}
		p.state = [2]uint8{sideAttached, sideAttached}
		p.matched = true
		p.running.Store(2)
		s.relays[p] = struct{}{}
		close(p.matchCh)
	} else {
		p.state[side] = sideWaiting
	}
	s.relayWG.Add(1)
	s.mu.Unlock()
	defer s.relayWG.Done()

	timer := time.NewTimer(s.cfg.RelayWaitTimeout)
	defer timer.Stop()
	var refuse *Error
	status := 0
	select {
	case <-p.matchCh:
	case <-p.revokeCh:
		refuse, status = &Error{Code: ErrBadToken, Message: fmt.Sprintf("the pairing in room %s ended while waiting for the peer", p.room)}, http.StatusForbidden
	case <-timer.C:
		refuse, status = &Error{Code: ErrPeerTimeout, Message: fmt.Sprintf("the other player of room %s did not attach to the relay within %v", p.room, s.cfg.RelayWaitTimeout)}, http.StatusGatewayTimeout
	case <-s.shutdownCh:
		refuse, status = &Error{Code: ErrShuttingDown, Message: "server is shutting down"}, http.StatusServiceUnavailable
	case <-r.Context().Done():
	}
	if refuse != nil || r.Context().Err() != nil {
		s.mu.Lock()
		if !p.matched {
			p.state[side] = sideIdle // the token may be used again
			s.mu.Unlock()
			if refuse != nil {
				s.refuseRelay(w, status, refuse)
			}
			return
		}
		s.mu.Unlock() // matched in the meantime: go on
	}
	s.runRelay(w, p, side)
}

// runRelay hijacks the matched request, answers 101 and copies this side's
// bytes to the peer until either side ends.
func (s *Server) runRelay(w http.ResponseWriter, p *relayPair, side int) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.log.Warn("signaling: relay hijack failed", "room", p.room, "err", err)
		p.setConn(side, nil)
		p.finish(s)
		return
	}
	conn.SetDeadline(time.Time{})
	var early []byte
	if n := brw.Reader.Buffered(); n > 0 {
		early = make([]byte, n)
		io.ReadFull(brw.Reader, early)
	}
	conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	_, err = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+relayUpgrade+"\r\n\r\n")
	conn.SetWriteDeadline(time.Time{})
	if err != nil {
		conn.Close()
		conn = nil
	}
	if !p.setConn(side, conn) {
		p.finish(s)
		return
	}
	if side == 0 {
		s.relaysTotal.Add(1)
		s.log.Info("signaling: relay established", "room", p.room)
	}
	p.touch()
	src, dst := p.conns[side], p.conns[1-side]
	if len(early) > 0 {
		dst.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if _, err := dst.Write(early); err != nil {
			p.closeConns()
			p.finish(s)
			return
		}
		p.bytes[side].Add(uint64(len(early)))
		s.relayBytes.Add(uint64(len(early)))
	}
	s.pipe(p, side, src, dst)
	p.closeConns()
	p.finish(s)
}

var relayBufPool sync.Pool

// pipe copies src to dst through one bounded buffer, until an error, or
// until nothing has moved either way for RelayIdleTimeout.
func (s *Server) pipe(p *relayPair, side int, src, dst net.Conn) {
	bp, _ := relayBufPool.Get().(*[]byte)
	if bp == nil || len(*bp) != s.cfg.RelayBufferBytes {
		b := make([]byte, s.cfg.RelayBufferBytes)
		bp = &b
	}
	defer relayBufPool.Put(bp)
	buf := *bp
	idle := s.cfg.RelayIdleTimeout
	for {
		src.SetReadDeadline(time.Now().Add(idle))
		n, err := src.Read(buf)
		if n > 0 {
			p.touch()
			dst.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			p.bytes[side].Add(uint64(n))
			s.relayBytes.Add(uint64(n))
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, p.lastActive.Load())) < idle {
				continue // the other direction is active
			}
			if errors.As(err, &ne) && ne.Timeout() {
				s.log.Info("signaling: relay idle timeout", "room", p.room)
			}
			return
		}
	}
}

func (p *relayPair) touch() { p.lastActive.Store(time.Now().UnixNano()) }

// setConn records this side's connection (nil on failure) and waits for the
// other side's. It reports whether both are there.
func (p *relayPair) setConn(side int, c net.Conn) bool {
	p.connMu.Lock()
	p.conns[side] = c
	p.nconns++
	if c == nil {
		p.failed = true
	}
	if p.nconns == 2 {
		close(p.ready)
	}
	p.connMu.Unlock()
	t := time.NewTimer(p.s.cfg.WriteTimeout)
	defer t.Stop()
	select {
	case <-p.ready:
	case <-t.C:
		p.connMu.Lock()
		p.failed = true
		p.connMu.Unlock()
	}
	p.connMu.Lock()
	ok := !p.failed
	p.connMu.Unlock()
	if !ok {
		p.closeConns()
	}
	return ok
}

// closeConns closes both connections (those that exist).
func (p *relayPair) closeConns() {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	p.failed = true
	for _, c := range p.conns {
		if c != nil {
			c.Close()
		}
	}
}

// finish is called once by each side's handler; the last one unregisters.
func (p *relayPair) finish(s *Server) {
	if p.running.Add(-1) != 0 {
		return
	}
	s.mu.Lock()
	delete(s.relays, p)
	s.mu.Unlock()
	s.log.Info("signaling: relay closed", "room", p.room, "bytes_offerer", p.bytes[0].Load(), "bytes_answerer", p.bytes[1].Load())
}

// headerHasToken reports whether a comma-separated header contains token,
// case-insensitively.
func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
