package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragsync/ragsync/signaling"
	"github.com/ragsync/ragsync/signaling/internal/wire"
)

// relayUpgrade is the Upgrade token of the relay endpoint.
const relayUpgrade = wire.RelayUpgrade

// relayRendezvous is the relay of one pairing: the request of a player
// waiting for the other's, and the stream once both came. It exists while
// it has a waiting request or a stream.
type relayRendezvous struct {
	key     relayKey
	room    signaling.RoomCode
	waiting [2]*relayWaiter // s.mu
	stream  *relayStream    // s.mu
}

// relayWaiter is a request waiting for the other player's. Whoever ends
// the wait removes it from its rendezvous and sends the outcome, under s.mu.
type relayWaiter struct {
	ch chan relayOutcome // capacity 1
}

type relayOutcome struct {
	stream *relayStream     // matched: run it
	err    *signaling.Error // refused
	status int
}

// relayStream is one established stream between the two players.
type relayStream struct {
	s    *Server
	rv   *relayRendezvous
	room signaling.RoomCode

	connMu sync.Mutex
	conns  [2]net.Conn
	nconns int
	ready  chan struct{} // closed when both conns are set, or on failure
	failed bool          // set when the conns are (to be) closed
	idle   *time.Timer   // the idle watchdog, from when both conns are set

	running atomic.Int32 // copy loops still running
	bytes   [2]atomic.Uint64
	// lastActive is when a byte last moved either way, as the monotonic
	// time since epoch (a wall-clock step neither ends nor prolongs an
	// idle stream).
	epoch      time.Time
	lastActive atomic.Int64
}

// dropRendezvous forgets rv if it holds nothing. Called with s.mu held.
func (s *Server) dropRendezvous(rv *relayRendezvous) {
	if rv.waiting[0] == nil && rv.waiting[1] == nil && rv.stream == nil && s.rendezvous[rv.key] == rv {
		delete(s.rendezvous, rv.key)
	}
}

// endPairing refuses the relay requests of a pairing that ended. An
// established stream is not affected. Called with s.mu held.
func (s *Server) endPairing(key relayKey) {
	rv := s.rendezvous[key]
	if rv == nil {
		return
	}
	for i, w := range rv.waiting {
		if w != nil {
			rv.waiting[i] = nil
			w.ch <- relayOutcome{err: &signaling.Error{Code: signaling.ErrBadToken, Message: fmt.Sprintf("the pairing in room %s ended while waiting for the peer", rv.room)}, status: http.StatusForbidden}
		}
	}
	s.dropRendezvous(rv)
}

func (s *Server) refuseRelay(w http.ResponseWriter, status int, e *signaling.Error, reason string) {
	s.relaysRefused.Add(1)
	s.refusal(e.Code, reason)
	s.log.Debug("signaling: relay refused", "code", e.Code, "msg", e.Message)
	w.Header().Set("Connection", "close")
	writeHTTPError(w, status, e)
}

func (s *Server) handleRelay(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && headerHasToken(r.Header, "Upgrade", "websocket") {
		s.handleRelayWS(w, r)
		return
	}
	if r.Method != http.MethodGet || !headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", relayUpgrade) {
		w.Header().Set("Upgrade", relayUpgrade)
		s.refuseRelay(w, http.StatusUpgradeRequired, &signaling.Error{Code: signaling.ErrBadMessage, Message: "relay needs GET with Connection: Upgrade and Upgrade: " + relayUpgrade + " (or a WebSocket)"}, reasonClient)
		return
	}
	if v := r.URL.Query().Get("v"); v != fmt.Sprint(signaling.ProtocolVersion) {
		s.refuseRelay(w, http.StatusBadRequest, &signaling.Error{Code: signaling.ErrUnsupportedVersion, Message: fmt.Sprintf("protocol version %q not supported; this server speaks v=%d", truncate(v, 16), signaling.ProtocolVersion)}, reasonClient)
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		s.refuseRelay(w, http.StatusForbidden, &signaling.Error{Code: signaling.ErrBadToken, Message: "missing relay token (Authorization: Bearer <token from paired>)"}, reasonClient)
		return
	}
	pv := r.Header.Get(wire.ProofHeader)
	if pv == "" {
		// The first request: answer with a challenge, keeping the
		// connection for the second.
		w.Header().Set(wire.ChallengeHeader, s.newChallenge())
		writeHTTPError(w, http.StatusUnauthorized, &signaling.Error{Code: signaling.ErrBadToken, Message: "the relay needs a proof of possession of the seat key: ask again with " + wire.ProofHeader + ": <challenge>.<proof> for the challenge in " + wire.ChallengeHeader})
		return
	}
	challenge, proof, _ := strings.Cut(pv, ".")
	perr := s.checkChallenge(challenge)
	if perr == nil {
		perr = s.checkProof(signaling.RelayToken(tok), wire.ProofRelay, challenge, proof)
	}
	if perr == nil {
		perr = s.useChallenge(challenge)
	}
	if perr != nil {
		s.refuseRelay(w, http.StatusForbidden, perr, reasonClient)
		return
	}
	j := s.joinRelay(r, r.Context(), tok)
	if j.st == nil {
		if j.err != nil {
			s.refuseRelay(w, j.status, j.err, j.reason)
		}
		return
	}
	defer j.release()
	s.runRelay(w, j.st, j.side)
}

// relayJoin is the outcome of a relay request: the stream to run as
// side, or a refusal, or neither (the client went away while waiting).
type relayJoin struct {
	st      *relayStream
	side    int
	release func() // when the stream has ended (or was not run)

	err    *signaling.Error
	status int // HTTP status of the refusal
	reason string
}

func refused(status int, e *signaling.Error, reason string) relayJoin {
	return relayJoin{err: e, status: status, reason: reason}
}

// joinRelay checks a relay request's token and limits and waits, within
// ctx, for the other player's request: the common part of the raw and
// the WebSocket relay, which then run the stream (their bytes are
// copied to each other, so a raw stream and a WebSocket meet).
func (s *Server) joinRelay(r *http.Request, ctx context.Context, tok string) relayJoin {
	claims, terr := verifyRelayToken(s.tokenKey, signaling.RelayToken(tok), s.cfg.Now())
	if terr != nil {
		return refused(http.StatusForbidden, terr, reasonClient)
	}
	addr, aerr := s.clientAddr(r)
	if aerr != nil {
		return refused(http.StatusBadRequest, aerr, reasonClient)
	}
	side, key := claims.side, claims.key()

	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return refused(http.StatusServiceUnavailable, &signaling.Error{Code: signaling.ErrShuttingDown, Message: "server is shutting down"}, reasonShutdown)
	}
	// A pairing this process made is checked against its room; one it
	// did not (before a restart, or on another instance with the same
	// secret) is taken on the token's word.
	if claims.instance == s.instance {
		if rm := s.rooms[claims.room]; rm == nil || rm.pairing != claims.pairing {
			s.mu.Unlock()
			return refused(http.StatusForbidden, &signaling.Error{Code: signaling.ErrBadToken, Message: fmt.Sprintf("relay token %s: the pairing in room %s has ended", signaling.RelayToken(tok), claims.room)}, reasonClient)
		}
	}
	as, ok := s.lim.reserveConn(addr)
	if !ok {
		s.mu.Unlock()
		return refused(http.StatusTooManyRequests, &signaling.Error{Code: signaling.ErrTooManyConns, Message: fmt.Sprintf("%s has its maximum of %d connections; close some first", as, as.limit(s.cfg.MaxConnsPerAddr))}, reasonPerAddress)
	}
	rv := s.rendezvous[key]
	if rv == nil {
		rv = &relayRendezvous{key: key, room: claims.room}
		s.rendezvous[key] = rv
	}
	// One request and one stream per player: a newer request with the same
	// token replaces an older one still waiting, and a live stream (a
	// player re-attaching after its connection dropped, maybe before the
	// server noticed).
	if old := rv.waiting[side]; old != nil {
		rv.waiting[side] = nil
		old.ch <- relayOutcome{err: &signaling.Error{Code: signaling.ErrTokenUsed, Message: fmt.Sprintf("relay token %s of room %s: replaced by a newer request with the same token", signaling.RelayToken(tok), rv.room)}, status: http.StatusConflict}
	}
	if old := rv.stream; old != nil {
		rv.stream = nil
		delete(s.relays, old)
		old.closeConns()
		s.log.Info("signaling: relay re-attached; previous stream closed", "room", rv.room, "side", side)
	}
	var st *relayStream
	var wt *relayWaiter
	if other := rv.waiting[1-side]; other != nil {
		if len(s.relays) >= s.cfg.MaxRelays {
			s.dropRendezvous(rv)
			s.mu.Unlock()
			s.lim.releaseConn(as)
			return refused(http.StatusServiceUnavailable, &signaling.Error{Code: signaling.ErrTooManyRelays, Message: fmt.Sprintf("server has its maximum of %d relay streams; try again later", s.cfg.MaxRelays)}, reasonGlobal)
		}
		rv.waiting[1-side] = nil
		st = &relayStream{s: s, rv: rv, room: rv.room, ready: make(chan struct{}), epoch: time.Now()}
		st.running.Store(2)
		rv.stream = st
		s.relays[st] = struct{}{}
		other.ch <- relayOutcome{stream: st}
	} else {
		wt = &relayWaiter{ch: make(chan relayOutcome, 1)}
		rv.waiting[side] = wt
	}
	s.relayWG.Add(1)
	s.mu.Unlock()
	release := func() {
		s.relayWG.Done()
		s.lim.releaseConn(as)
	}
	establishedConn(r)

	if wt != nil {
		// The other side's request may be waiting on another node.
		defer s.relayCrossNode(rv, side, wt)()
		timer := time.NewTimer(s.cfg.RelayWaitTimeout)
		defer timer.Stop()
		var o relayOutcome
		got := false
		select {
		case o = <-wt.ch:
			got = true
		case <-timer.C:
			o = relayOutcome{err: &signaling.Error{Code: signaling.ErrPeerTimeout, Message: fmt.Sprintf("the other player of room %s did not attach to the relay within %v", rv.room, s.cfg.RelayWaitTimeout)}, status: http.StatusGatewayTimeout}
		case <-s.shutdownCh:
			o = relayOutcome{err: &signaling.Error{Code: signaling.ErrShuttingDown, Message: "server is shutting down"}, status: http.StatusServiceUnavailable}
		case <-ctx.Done():
		}
		if !got {
			s.mu.Lock()
			if rv.waiting[side] == wt {
				// Still waiting: give up; the token may be used again.
				rv.waiting[side] = nil
				s.dropRendezvous(rv)
				s.mu.Unlock()
				release()
				if o.err != nil {
					return refused(o.status, o.err, defaultReason(o.err.Code))
				}
				return relayJoin{} // the client went away
			}
			s.mu.Unlock()
			o = <-wt.ch // decided in the meantime
		}
		if o.err != nil {
			release()
			return refused(o.status, o.err, defaultReason(o.err.Code))
		}
		st = o.stream
	}
	return relayJoin{st: st, side: side, release: release}
}

// runRelay hijacks the matched request, answers 101 and runs the stream.
func (s *Server) runRelay(w http.ResponseWriter, p *relayStream, side int) {
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
	s.runStream(p, side, conn, early)
}

// runStream copies this side's bytes (early, read ahead, first) to the
// other side's connection until either ends; conn is nil if this side
// failed before it was set up.
func (s *Server) runStream(p *relayStream, side int, conn net.Conn, early []byte) {
	if conn == nil {
		p.setConn(side, nil)
		p.finish(s)
		return
	}
	if !p.setConn(side, conn) {
		p.finish(s)
		return
	}
	if side == 0 {
		s.relaysTotal.Add(1)
		s.log.Info("signaling: relay established", "room", p.room)
	}
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

// pipe copies src to dst through one bounded buffer until an error: the
// end of src, a write to dst that took WriteTimeout (a peer that stopped
// reading), or the close of both streams by the other direction, a
// re-attachment, shutdown or the idle watchdog (watchIdle).
//
// It sets no read deadline: the idle rule belongs to the stream, not to a
// direction (one may be silent while the other is busy), and an expired
// read deadline is not recoverable on every stream (it closes a
// WebSocket's NetConn).
func (s *Server) pipe(p *relayStream, side int, src, dst net.Conn) {
	bp, _ := relayBufPool.Get().(*[]byte)
	if bp == nil || len(*bp) != s.cfg.RelayBufferBytes {
		b := make([]byte, s.cfg.RelayBufferBytes)
		bp = &b
	}
	defer relayBufPool.Put(bp)
	buf := *bp
	for {
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
			return
		}
	}
}

// touch records that a byte moved.
func (p *relayStream) touch() { p.lastActive.Store(int64(time.Since(p.epoch))) }

// quiet returns how long nothing has moved either way.
func (p *relayStream) quiet() time.Duration {
	return time.Since(p.epoch) - time.Duration(p.lastActive.Load())
}

// watchIdle is the stream's idle watchdog, run by its timer: it closes
// both streams once nothing has moved either way for RelayIdleTimeout,
// and otherwise sets itself for when that would be. closeConns stops it.
func (p *relayStream) watchIdle() {
	idle := p.s.cfg.RelayIdleTimeout
	p.connMu.Lock()
	if p.failed {
		p.connMu.Unlock()
		return
	}
	if q := p.quiet(); q < idle {
		p.idle.Reset(idle - q)
		p.connMu.Unlock()
		return
	}
	p.connMu.Unlock()
	p.s.log.Info("signaling: relay idle timeout", "room", p.room)
	p.closeConns()
}

// setConn records this side's connection (nil on failure) and waits for the
// other side's. It reports whether both are there.
func (p *relayStream) setConn(side int, c net.Conn) bool {
	p.connMu.Lock()
	p.conns[side] = c
	p.nconns++
	if c == nil {
		p.failed = true
	}
	if p.nconns == 2 {
		close(p.ready)
		if !p.failed {
			p.touch()
			p.idle = time.AfterFunc(p.s.cfg.RelayIdleTimeout, p.watchIdle)
		}
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

// closeConns closes both connections (those that exist) and stops the
// idle watchdog. It closes them outside connMu: closing a WebSocket waits
// for its closing handshake (seconds, from a peer that does not answer).
func (p *relayStream) closeConns() {
	p.connMu.Lock()
	p.failed = true
	if p.idle != nil {
		p.idle.Stop()
	}
	conns := p.conns
	p.connMu.Unlock()
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// finish is called once by each side's handler; the last one unregisters.
func (p *relayStream) finish(s *Server) {
	if p.running.Add(-1) != 0 {
		return
	}
	s.mu.Lock()
	delete(s.relays, p)
	if p.rv.stream == p {
		p.rv.stream = nil
		s.dropRendezvous(p.rv)
	}
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
