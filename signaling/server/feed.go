package server

// The spectator feed: GET /feed?v=1&room=CODE[&side=1|2] (WebSocket).
//
// A player of a paired room uploads its spectator feed frames (package
// internal/feed, built by ragsync.Match.AppendFeedFrame) once, with
// side=1 (the offerer) or side=2 (the answerer), whatever the audience;
// the server fans each frame out to every spectator of the room (no side
// in the query). The server has no world: it checks a frame only by its
// size (3..2048 bytes), its kind byte ('F'), its side byte (the
// uploader's) and its rate (at most feedRate a second, bursts of
// feedBurst; frames over it are dropped). Spectators validate frames.
//
// Messages, player to server:
//
//	text    {"type":"feed_player","spectators":false,"rival":true}
//	        optional, any time: spectators false refuses spectators for
//	        the room (those watching are closed with no_spectators);
//	        rival true asks for the other player's frames too (to
//	        record the whole match)
//	binary  one feed frame
//
// Server to spectator (and to a player: its status, and the rival's
// frames if it asked):
//
//	binary  one feed frame, as a player uploaded it
//	text    {"type":"feed_status","watchers":N,"players":P,"dropped":D}
//	        every second: the room's spectators, its players uploading,
//	        and the frames this connection's queue dropped
//	text    {"type":"feed_end"}: the room ended; then a normal close
//	text    an error message (signaling protocol) before a refusal close
//
// A spectator sends nothing; a data message from one closes it. Each
// connection has a queue of feedQueue frames: a spectator that reads
// slower than the feed loses frames (counted in dropped), never slowing the
// players or other spectators. Every feed connection counts against its
// address's MaxConnsPerAddr.
//
// An uploader must come from the client address of the room's player of
// that side (a stranger who knows the room code cannot feed it).
//
// Across cluster nodes the fan-out is one publish per frame (feedHub.
// publish) to the room's subscribers (feedHub.deliver): a NATS subject per
// room plugs in between the two.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/ragsync/ragsync/signaling"
)

const (
	feedQueue         = 128  // frames waiting per connection
	feedMaxWatchers   = 1000 // spectators per room
	feedMaxFrame      = 2048 // feed.MaxSize
	feedRate          = 120  // frames a second per uploader
	feedBurst         = 240
	feedStatusEvery   = time.Second
	feedKind          = 0x46 // feed.Kind
	errNoSpectators   = signaling.ErrorCode("no_spectators")
	errTooManyWatcher = signaling.ErrorCode("too_many_spectators")
)

// feedHub is the server's spectator feed rooms.
type feedHub struct {
	mu    sync.Mutex
	rooms map[signaling.RoomCode]*feedRoom
}

type feedRoom struct {
	players  [2]*feedConn
	refuse   bool
	watchers map[*feedConn]struct{}
}

// feedConn is one feed WebSocket: a spectator (side 0) or a player.
type feedConn struct {
	side    int
	q       chan []byte
	rival   atomic.Bool
	dropped atomic.Uint64
	kick    chan *signaling.Error // capacity 1
}

func (h *feedHub) room(code signaling.RoomCode) *feedRoom {
	if h.rooms == nil {
		h.rooms = make(map[signaling.RoomCode]*feedRoom)
	}
	fr := h.rooms[code]
	if fr == nil {
		fr = &feedRoom{watchers: make(map[*feedConn]struct{})}
		h.rooms[code] = fr
	}
	return fr
}

// gc forgets an empty room (h.mu held).
func (h *feedHub) gc(code signaling.RoomCode, fr *feedRoom) {
	if fr.players[0] == nil && fr.players[1] == nil && len(fr.watchers) == 0 {
		delete(h.rooms, code)
	}
}

// publish sends one frame of side to the room's subscribers: once per
// frame, whatever the audience (the place a cluster's per-room subject
// goes).
func (h *feedHub) publish(code signaling.RoomCode, side int, frame []byte) {
	h.deliver(code, side, frame)
}

// deliver queues frame for every spectator of the room and for the other
// player if it asked for it, never waiting: a full queue drops it.
func (h *feedHub) deliver(code signaling.RoomCode, side int, frame []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fr := h.rooms[code]
	if fr == nil {
		return
	}
	put := func(c *feedConn) {
		select {
		case c.q <- frame:
		default:
			c.dropped.Add(1)
		}
	}
	for c := range fr.watchers {
		put(c)
	}
	if o := fr.players[2-side]; o != nil && o.rival.Load() {
		put(o)
	}
}

// status returns the room's watchers and uploading players.
func (h *feedHub) status(code signaling.RoomCode) (watchers, players int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if fr := h.rooms[code]; fr != nil {
		watchers = len(fr.watchers)
		for _, p := range fr.players {
			if p != nil {
				players++
			}
		}
	}
	return
}

type feedStatus struct {
	Type     string `json:"type"`
	Watchers int    `json:"watchers,omitempty"`
	Players  int    `json:"players,omitempty"`
	Dropped  uint64 `json:"dropped,omitempty"`
}

type feedHello struct {
	Type       string `json:"type"`
	Spectators *bool  `json:"spectators,omitempty"`
	Rival      bool   `json:"rival,omitempty"`
}

func (s *Server) handleFeed(w http.ResponseWriter, r *http.Request) {
	addr, aerr := s.clientAddr(r)
	if aerr != nil {
		writeHTTPError(w, http.StatusBadRequest, aerr)
		return
	}
	originErr := s.checkOrigin(r)
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		OriginPatterns:     s.cfg.OriginPatterns,
		CompressionMode:    websocket.CompressionDisabled,
		InsecureSkipVerify: originErr != nil, // refused below, with a message
	})
	if err != nil {
		s.log.Debug("signaling: feed accept failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.rejectConn(conn, &signaling.Error{Code: signaling.ErrShuttingDown, Message: "server is shutting down; reconnect later"}, websocket.StatusGoingAway, r.RemoteAddr)
		return
	}
	s.wsWG.Add(1)
	s.mu.Unlock()
	defer s.wsWG.Done()
	refuse := func(e *signaling.Error) { s.rejectConn(conn, e, websocket.StatusPolicyViolation, r.RemoteAddr) }
	q := r.URL.Query()
	if originErr != nil {
		refuse(originErr)
		return
	}
	if v := q.Get("v"); v != strconv.Itoa(signaling.ProtocolVersion) {
		refuse(&signaling.Error{Code: signaling.ErrUnsupportedVersion, Message: fmt.Sprintf("protocol version %q not supported; this server speaks v=%d", truncate(v, 16), signaling.ProtocolVersion)})
		return
	}
	code, cerr := signaling.ParseRoomCode(q.Get("room"))
	if cerr != nil {
		refuse(&signaling.Error{Code: signaling.ErrBadRoomCode, Message: "feed: " + cerr.Error()})
		return
	}
	side := 0
	switch q.Get("side") {
	case "":
	case "1", "2":
		side = int(q.Get("side")[0] - '0')
	default:
		refuse(&signaling.Error{Code: signaling.ErrBadMessage, Message: "feed: side must be 1 or 2 (a player) or absent (a spectator)"})
		return
	}
	as, ok := s.lim.reserveConn(addr)
	if !ok {
		refuse(&signaling.Error{Code: signaling.ErrTooManyConns, Message: fmt.Sprintf("your address %s has its maximum of %d connections; close some first", addr, s.cfg.MaxConnsPerAddr)})
		return
	}
	defer s.lim.releaseConn(as)
	establishedConn(r) // counted as a connection of its address from here
	s.mu.Lock()
	rm := s.rooms[code]
	isPlayer := false
	if rm != nil && side != 0 {
		p := rm.players[side-1]
		isPlayer = rm.pairing != 0 && p != nil && p.addr != nil && p.addr.key == addr
	}
	s.mu.Unlock()
	if rm == nil {
		refuse(&signaling.Error{Code: signaling.ErrRoomNotFound, Message: "feed: no room " + string(code) + " on this server"})
		return
	}
	if side != 0 && !isPlayer {
		refuse(&signaling.Error{Code: signaling.ErrBadToken, Message: "feed: only the room's paired player of side " + strconv.Itoa(side) + " uploads its feed"})
		return
	}
	fc := &feedConn{side: side, q: make(chan []byte, feedQueue), kick: make(chan *signaling.Error, 1)}
	h := &s.feeds
	h.mu.Lock()
	fr := h.room(code)
	var e *signaling.Error
	switch {
	case side != 0 && fr.players[side-1] != nil:
		e = &signaling.Error{Code: signaling.ErrRoomFull, Message: "feed: side " + strconv.Itoa(side) + " already uploads"}
	case side == 0 && fr.refuse:
		e = &signaling.Error{Code: errNoSpectators, Message: "feed: room " + string(code) + " refuses spectators"}
	case side == 0 && len(fr.watchers) >= feedMaxWatchers:
		e = &signaling.Error{Code: errTooManyWatcher, Message: fmt.Sprintf("feed: room %s has its maximum of %d spectators", code, feedMaxWatchers)}
	case side == 0:
		fr.watchers[fc] = struct{}{}
	default:
		fr.players[side-1] = fc
	}
	if e != nil {
		h.gc(code, fr)
	}
	h.mu.Unlock()
	if e != nil {
		refuse(e)
		return
	}
	defer func() {
		h.mu.Lock()
		if side == 0 {
			delete(fr.watchers, fc)
		} else {
			fr.players[side-1] = nil
		}
		h.gc(code, fr)
		h.mu.Unlock()
	}()
	s.log.Debug("signaling: feed attached", "room", code, "side", side, "remote", r.RemoteAddr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if side == 0 {
		ctx = conn.CloseRead(ctx) // a spectator sends nothing
	} else {
		conn.SetReadLimit(feedMaxFrame)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer cancel()
			s.readFeed(ctx, conn, code, fc)
		}()
		defer func() { <-done }()
		defer conn.CloseNow()
	}
	s.writeFeed(ctx, conn, code, fc)
}

// readFeed reads a player's frames and publishes them.
func (s *Server) readFeed(ctx context.Context, conn *websocket.Conn, code signaling.RoomCode, fc *feedConn) {
	bucket := newTokenBucket(feedRate, feedBurst, s.cfg.Now())
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageText {
			var hl feedHello
			if json.Unmarshal(b, &hl) != nil || hl.Type != "feed_player" {
				fc.fail(&signaling.Error{Code: signaling.ErrBadMessage, Message: `feed: a player's text message is {"type":"feed_player",...}`})
				return
			}
			fc.rival.Store(hl.Rival)
			if hl.Spectators != nil && !*hl.Spectators {
				s.refuseSpectators(code)
			}
			continue
		}
		if len(b) < 3 || b[0] != feedKind || int(b[2]) != fc.side {
			fc.fail(&signaling.Error{Code: signaling.ErrBadMessage, Message: fmt.Sprintf("feed: a %d-byte message is not a side %d feed frame", len(b), fc.side)})
			return
		}
		if !bucket.allow(s.cfg.Now()) {
			fc.dropped.Add(1)
			continue
		}
		s.feeds.publish(code, fc.side, b)
	}
}

// refuseSpectators closes the room's feed to spectators.
func (s *Server) refuseSpectators(code signaling.RoomCode) {
	h := &s.feeds
	h.mu.Lock()
	defer h.mu.Unlock()
	fr := h.room(code)
	fr.refuse = true
	for c := range fr.watchers {
		c.fail(&signaling.Error{Code: errNoSpectators, Message: "feed: the players of room " + string(code) + " refuse spectators"})
	}
}

// fail asks the connection's writer to close it with e (first one wins).
func (fc *feedConn) fail(e *signaling.Error) {
	select {
	case fc.kick <- e:
	default:
	}
}

// writeFeed writes the connection's queue and status until ctx ends, the
// server shuts down or the room ends.
func (s *Server) writeFeed(ctx context.Context, conn *websocket.Conn, code signaling.RoomCode, fc *feedConn) {
	tick := time.NewTicker(feedStatusEvery)
	defer tick.Stop()
	write := func(typ websocket.MessageType, b []byte) bool {
		wctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
		defer cancel()
		return conn.Write(wctx, typ, b) == nil
	}
	status := func() bool {
		w, p := s.feeds.status(code)
		b, _ := json.Marshal(feedStatus{Type: "feed_status", Watchers: w, Players: p, Dropped: fc.dropped.Load()})
		return write(websocket.MessageText, b)
	}
	if !status() {
		conn.CloseNow()
		return
	}
	for {
		select {
		case b := <-fc.q:
			if !write(websocket.MessageBinary, b) {
				conn.CloseNow()
				return
			}
		case <-tick.C:
			s.mu.Lock()
			live := s.rooms[code] != nil
			s.mu.Unlock()
			if !live {
				b, _ := json.Marshal(feedStatus{Type: "feed_end"})
				if write(websocket.MessageText, b) {
					conn.Close(websocket.StatusNormalClosure, "room ended")
				}
				conn.CloseNow()
				return
			}
			if !status() {
				conn.CloseNow()
				return
			}
		case e := <-fc.kick:
			s.rejectConn(conn, e, websocket.StatusPolicyViolation, "")
			return
		case <-s.shutdownCh:
			s.rejectConn(conn, &signaling.Error{Code: signaling.ErrShuttingDown, Message: "server is shutting down; reconnect later"}, websocket.StatusGoingAway, "")
			return
		case <-ctx.Done():
			conn.CloseNow()
			return
		}
	}
}
