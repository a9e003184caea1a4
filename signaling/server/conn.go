package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/ragsync/ragsync/signaling"
)

// client is the server side of one WebSocket connection. Fields under "s.mu"
// are protected by the server's mutex; the rest belong to the read loop
// unless noted.
type client struct {
	s      *Server
	conn   *websocket.Conn
	id     uint64
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	addr       *addrState    // the client address's limits
	challenge  string        // this connection's rejoin challenge, sent in welcome
	out        chan outMsg   // encoded messages for the writer
	closeReq   chan closeReq // capacity 1; first fatal wins
	writerDone chan struct{}
	closing    atomic.Bool

	// s.mu
	room     *room
	queued   bool
	queuedAt time.Time
	offer    earlyOffer // from create, join or quick, or late (an offer while waiting), until the pairing

	closedNormally bool // the client closed its WebSocket with status 1000 (read loop)

	// remote, on the node holding a room, marks the proxy of another
	// node's client (it has no connection here).
	remote *remoteRef
	// away, on the client's own node, is the node holding its room or
	// queue place (s.mu): its messages go there. awayTok is its
	// pairing's relay token there, awayMsg the message that took it there.
	away    string
	awayTok signaling.RelayToken
	awayMsg *signaling.Message

	bucket         tokenBucket
	limitedRun     int
	addrLimitedRun int
	idle           *time.Timer
}

// outMsg is an encoded message for the writer; a non-zero t0 is the time
// of the request that caused it, for the pairing latency histogram.
type outMsg struct {
	b  []byte
	t0 time.Time
}

type closeReq struct {
	msg    []byte // error message to write first, may be nil
	status websocket.StatusCode
	reason string
}

func (s *Server) newClient(conn *websocket.Conn, remote string, as *addrState) *client {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.mu.Unlock()
	c := &client{
		s:          s,
		conn:       conn,
		id:         id,
		log:        s.log.With("client", id),
		addr:       as,
		out:        make(chan outMsg, s.cfg.SendQueue),
		closeReq:   make(chan closeReq, 1),
		writerDone: make(chan struct{}),
		bucket:     newTokenBucket(s.cfg.RatePerSec, s.cfg.RateBurst, s.cfg.Now()),
		challenge:  nonce(),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	// Our own limit (below) answers with an error message first; the
	// library's limit is only a backstop one byte above it.
	conn.SetReadLimit(int64(s.cfg.MaxMessageBytes) + 1)
	c.log.Debug("signaling: connection opened", "remote", remote, "addr", as.key)
	return c
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// run is the read loop; it returns when the connection has ended and
// everything about it is cleaned up.
func (c *client) run() {
	s := c.s
	go c.writeLoop()
	c.send(&signaling.Message{Type: signaling.TypeWelcome, V: signaling.ProtocolVersion, Challenge: c.challenge, TURN: s.trn != nil, Limits: &signaling.Limits{
		MaxMessageBytes: s.cfg.MaxMessageBytes,
		RatePerSec:      s.cfg.RatePerSec,
		RateBurst:       s.cfg.RateBurst,
		IdleTimeoutMS:   s.cfg.IdleTimeout.Milliseconds(),
	}})
	c.idle = time.AfterFunc(s.cfg.IdleTimeout, func() {
		c.fatal(&signaling.Error{Code: signaling.ErrIdleTimeout, Message: fmt.Sprintf("nothing received for %v; closing (send ping to stay connected)", s.cfg.IdleTimeout)}, websocket.StatusPolicyViolation, "idle timeout")
	})
	reason := "closed"
	for {
		typ, rd, err := c.conn.Reader(c.ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != -1 {
				reason = "close " + st.String()
				// A client that closes normally (Client.Close) leaves;
				// one whose connection just ends may rejoin.
				c.closedNormally = st == websocket.StatusNormalClosure
			} else if !c.closing.Load() {
				reason = "read error"
				c.log.Debug("signaling: read failed", "err", err)
			}
			break
		}
		buf := bufPool.Get().(*bytes.Buffer)
		buf.Reset()
		_, err = buf.ReadFrom(io.LimitReader(rd, int64(s.cfg.MaxMessageBytes)+1))
		if err != nil {
			bufPool.Put(buf)
			reason = "read error"
			break
		}
		if buf.Len() > s.cfg.MaxMessageBytes {
			bufPool.Put(buf)
			c.fatal(&signaling.Error{Code: signaling.ErrMessageTooBig, Message: fmt.Sprintf("message exceeds the limit of %d bytes", s.cfg.MaxMessageBytes)}, websocket.StatusMessageTooBig, "message too big")
			reason = "message too big"
			<-c.writerDone // the writer's close handshake reads the rest
			break
		}
		c.idle.Reset(s.cfg.IdleTimeout)
		ok := c.process(typ, buf.Bytes(), time.Now())
		if buf.Cap() <= 64<<10 {
			bufPool.Put(buf)
		}
		if !ok {
			reason = "rate limit"
			<-c.writerDone
			break
		}
	}
	c.idle.Stop()
	s.removeClient(c)
	c.cancel()
	<-c.writerDone
	c.conn.CloseNow()
	c.log.Debug("signaling: connection closed", "reason", reason)
}

// process handles one received message, read at t0; false means the
// connection is being closed for flooding.
func (c *client) process(typ websocket.MessageType, data []byte, t0 time.Time) bool {
	s := c.s
	if !c.bucket.allow(s.cfg.Now()) {
		c.limitedRun++
		s.rateLimited.Add(1)
		switch {
		case c.limitedRun == 1:
			c.sendError(&signaling.Error{Code: signaling.ErrRateLimited, Message: fmt.Sprintf("more than %d messages in a burst or %.3g/s sustained; messages are dropped until you slow down", s.cfg.RateBurst, s.cfg.RatePerSec)})
		case c.limitedRun > s.cfg.RateBurst:
			c.fatal(&signaling.Error{Code: signaling.ErrRateLimited, Message: "kept sending while rate limited; closing"}, websocket.StatusPolicyViolation, "rate limit")
			return false
		}
		return true
	}
	c.limitedRun = 0
	if wait, ok := s.lim.reserveMsg(c.addr); !ok {
		// Far over the address's rate: drop, tell once per run.
		c.addrLimitedRun++
		s.rateLimited.Add(1)
		if c.addrLimitedRun == 1 {
			c.sendLimit(&signaling.Error{Code: signaling.ErrRateLimited, Message: fmt.Sprintf("your address sends more than %d messages in a burst or %.3g/s sustained over all its connections; messages are dropped until it slows down", s.cfg.AddrRateBurst, s.cfg.AddrRatePerSec)}, reasonPerAddress)
		}
		return true
	} else if wait > 0 {
		// Over the address's rate: this message waits its turn, and the
		// connection is not read meanwhile.
		s.delayed.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return true
		}
	}
	c.addrLimitedRun = 0
	if typ != websocket.MessageText {
		c.sendError(&signaling.Error{Code: signaling.ErrBadMessage, Message: "binary messages are not accepted; send JSON text messages"})
		return true
	}
	m, err := signaling.DecodeMessage(data)
	if err != nil {
		e := err.(*signaling.Error)
		c.sendError(e)
		return true
	}
	if !fromClient(m.Type) {
		c.sendError(&signaling.Error{Code: signaling.ErrBadMessage, Message: fmt.Sprintf("%q is sent by the server, not by clients", m.Type), Ref: m.Type})
		return true
	}
	s.handle(c, &m, t0)
	return true
}

// send queues m for the writer. It never blocks: a client whose queue is
// full is not reading and is disconnected. Safe with or without s.mu.
func (c *client) send(m *signaling.Message) { c.sendTimed(m, time.Time{}) }

// sendTimed is send for a paired message caused by a request read at t0.
func (c *client) sendTimed(m *signaling.Message, t0 time.Time) {
	if c.remote != nil {
		c.s.sendRemote(c, m)
		return
	}
	if c.closing.Load() {
		return
	}
	b, err := signaling.AppendMessage(nil, m)
	if err != nil {
		c.log.Error("signaling: encode failed", "type", m.Type, "err", err)
		return
	}
	c.queueOut(b, t0)
}

// sendRaw queues an encoded message (from the node holding the client's
// room).
func (c *client) sendRaw(b []byte) {
	if c.closing.Load() {
		return
	}
	c.queueOut(b, time.Time{})
}

func (c *client) queueOut(b []byte, t0 time.Time) {
	select {
	case c.out <- outMsg{b: b, t0: t0}:
	default:
		if c.closing.CompareAndSwap(false, true) {
			c.s.limitViolations.Add(1)
			c.s.refusal(signaling.ErrSlowConsumer, reasonPerConnection)
			c.log.Info("signaling: closing slow consumer", "queued", len(c.out))
			c.conn.CloseNow()
		}
	}
}

func (c *client) sendError(e *signaling.Error) { c.sendLimit(e, defaultReason(e.Code)) }

// sendLimit sends a non-fatal error, counted as a refusal for reason.
func (c *client) sendLimit(e *signaling.Error, reason string) {
	c.s.errorsSent.Add(1)
	c.s.refusal(e.Code, reason)
	c.log.Debug("signaling: client error", "code", e.Code, "ref", e.Ref, "msg", e.Message)
	c.send(errMessage(e))
}

// fatal sends e, then closes the connection with status. Only the first
// call has an effect. Safe from any goroutine.
func (c *client) fatal(e *signaling.Error, status websocket.StatusCode, reason string) {
	if c.remote != nil {
		c.s.fatalRemote(c, e, status, reason)
		return
	}
	if !c.closing.CompareAndSwap(false, true) {
		return
	}
	s := c.s
	s.errorsSent.Add(1)
	s.refusal(e.Code, defaultReason(e.Code))
	switch e.Code {
	case signaling.ErrIdleTimeout:
		s.idleTimeouts.Add(1)
	case signaling.ErrMessageTooBig, signaling.ErrRateLimited:
		s.limitViolations.Add(1)
	}
	c.log.Info("signaling: closing connection", "code", e.Code, "msg", e.Message)
	b, _ := signaling.AppendMessage(nil, errMessage(e))
	c.closeReq <- closeReq{msg: b, status: status, reason: reason}
}

func (c *client) writeLoop() {
	defer close(c.writerDone)
	wt := c.s.cfg.WriteTimeout
	for {
		select {
		case m := <-c.out:
			ctx, cancel := context.WithTimeout(c.ctx, wt)
			err := c.conn.Write(ctx, websocket.MessageText, m.b)
			cancel()
			if err != nil {
				c.conn.CloseNow()
				return
			}
			if !m.t0.IsZero() {
				c.s.met.pairingLatency.Observe(time.Since(m.t0).Seconds())
			}
		case r := <-c.closeReq:
			// Flush what was queued before the fatal error, then the error.
			ctx, cancel := context.WithTimeout(context.Background(), wt)
			var err error
		drain:
			for err == nil {
				select {
				case m := <-c.out:
					err = c.conn.Write(ctx, websocket.MessageText, m.b)
				default:
					break drain
				}
			}
			if err == nil {
				err = c.conn.Write(ctx, websocket.MessageText, r.msg)
			}
			cancel()
			if err != nil {
				c.conn.CloseNow()
				return
			}
			c.conn.Close(r.status, r.reason)
			return
		case <-c.ctx.Done():
			return
		}
	}
}

// tokenBucket is a classic token bucket: tokens(t) = min(burst, tokens(t0) +
// rate·(t−t0)); a message needs one token.
type tokenBucket struct {
	rate, burst, tokens float64
	last                time.Time
}

func newTokenBucket(rate float64, burst int, now time.Time) tokenBucket {
	return tokenBucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now}
}

func (b *tokenBucket) refill(now time.Time) {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens += dt * b.rate
		if b.tokens > b.burst {
			b.tokens = b.burst
		}
		b.last = now
	}
}

func (b *tokenBucket) allow(now time.Time) bool {
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// errMessage is the error message that carries e to a client.
func errMessage(e *signaling.Error) *signaling.Message {
	return &signaling.Message{Type: signaling.TypeError, Code: e.Code, Text: e.Message, Ref: e.Ref}
}

// fromClient reports whether clients may send t.
func fromClient(t signaling.MsgType) bool {
	switch t {
	case signaling.TypeCreate, signaling.TypeJoin, signaling.TypeQuick, signaling.TypeLeave, signaling.TypeRejoin,
		signaling.TypePing, signaling.TypeOffer, signaling.TypeAnswer, signaling.TypeCandidate, signaling.TypeICEServers:
		return true
	}
	return false
}
