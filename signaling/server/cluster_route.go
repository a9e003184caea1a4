package server

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/ragsync/ragsync/signaling"
	"github.com/ragsync/ragsync/signaling/internal/wire"
)

// Envelope kinds, the messages nodes send each other on
// ragsync.node.<node>.
const (
	kindPing  = "ping"  // liveness (a request; any answer will do)
	kindMsg   = "msg"   // a client's message, to the node owning its room
	kindGone  = "gone"  // a client's connection ended, to that node
	kindOut   = "out"   // a message to a client, from the node owning its room
	kindFatal = "fatal" // a fatal error to a client, from that node
	kindRelay = "relay" // relay stream bytes (relay_cluster.go)
)

// envelope is one message between nodes.
type envelope struct {
	K  string          `json:"k"`
	N  string          `json:"n,omitempty"`  // sending node
	ID uint64          `json:"id,omitempty"` // the client's id on its own node
	A  string          `json:"a,omitempty"`  // msg: the client's address key (for the limits)
	M  json.RawMessage `json:"m,omitempty"`  // a signaling message
	H  bool            `json:"h,omitempty"`  // out: the client is still in a room or queue there
	V  bool            `json:"v,omitempty"`  // msg: rejoin proof checked; gone: closed normally
	T  string          `json:"t,omitempty"`  // out: the relay token of a paired message
	S  int             `json:"s,omitempty"`  // fatal: close status
	R  string          `json:"r,omitempty"`  // fatal: close reason
	B  []byte          `json:"b,omitempty"`  // relay: bytes
}

// proxyKey names a client of another node, as its room's owner sees it.
type proxyKey struct {
	node string
	id   uint64
}

// remoteRef marks a client object as the proxy of a client of another
// node.
type remoteRef struct{ key proxyKey }

func (cl *cluster) publish(node string, e *envelope) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	cl.msgsOut.Add(1)
	if err := cl.bb.Publish(subjectRoot+node, b); err != nil {
		cl.s.log.Debug("signaling: publish failed", "node", node, "err", err)
	}
}

func unavailable(ref signaling.MsgType, err error) *signaling.Error {
	return &signaling.Error{Code: signaling.ErrUnavailable, Message: fmt.Sprintf("the cluster cannot take this now (%v); try again", err), Ref: ref}
}

// route sends a local client's message to the node holding its room or
// quick-match place, or takes the cluster's steps a create, join, quick
// or rejoin needs before it is handled here. It reports whether it dealt
// with the message; false: handle it locally.
func (s *Server) route(c *client, m *signaling.Message) bool {
	switch m.Type {
	case signaling.TypeCreate, signaling.TypeJoin, signaling.TypeQuick, signaling.TypeRejoin,
		signaling.TypeLeave, signaling.TypeOffer, signaling.TypeAnswer, signaling.TypeCandidate:
	default:
		return false
	}
	s.mu.Lock()
	away := c.away
	busy := c.room != nil || c.queued || s.closing
	s.mu.Unlock()
	if away != "" {
		s.cl.publish(away, s.cl.msgEnvelope(c, m, false))
		return true
	}
	if busy {
		return false
	}
	switch m.Type {
	case signaling.TypeCreate:
		return s.routeCreate(c, m)
	case signaling.TypeJoin:
		return s.routeJoin(c, m)
	case signaling.TypeQuick:
		return s.routeQuick(c, m)
	case signaling.TypeRejoin:
		return s.routeRejoin(c, m)
	}
	return false
}

func (cl *cluster) msgEnvelope(c *client, m *signaling.Message, verified bool) *envelope {
	b, _ := json.Marshal(m)
	a := ""
	if c.addr != nil {
		a = c.addr.key.String()
	}
	return &envelope{K: kindMsg, N: cl.id, ID: c.id, A: a, M: b, V: verified}
}

// attach hands c's message m to node, which then holds c's room or queue
// place: c's messages go there until it says c holds nothing there. It
// reports false when node is gone.
func (s *Server) attach(c *client, node string, m *signaling.Message, verified bool) bool {
	s.mu.Lock()
	c.away, c.awayTok, c.awayMsg = node, "", m
	s.mu.Unlock()
	b, _ := json.Marshal(s.cl.msgEnvelope(c, m, verified))
	s.cl.msgsOut.Add(1)
	_, err := s.cl.bb.Request(subjectRoot+node, b, reqTimeout)
	if err == nil {
		return true
	}
	s.mu.Lock()
	if c.away == node {
		c.away, c.awayMsg = "", nil
	}
	s.mu.Unlock()
	if !errors.Is(err, errNoResponders) {
		s.log.Info("signaling: node did not answer", "node", node, "err", err)
		c.sendError(unavailable(m.Type, err))
		return true
	}
	return false
}

// routeTries bounds the steps of a create, join, quick or rejoin through
// the buckets: a key may change hands, or the buckets be unavailable
// while JetStream elects a new leader after a node died (backoff spaces
// the tries: 0.1 s, 0.2 s, ... up to 1 s each, about 30 s in all). With
// 20 tries (15 s), a join right after a node was killed ran out of tries
// once, in the race-enabled CI run on a loaded 2-core machine
// (TestClusterWaitingNodeKill: "changed hands too often" instead of
// room_not_found). The client waits for the answer meanwhile, and only
// its own request does.
const routeTries = 35

// tryTimeout bounds a route's read of the store at try: 1 s for the
// first tries, then kvTimeout. A read answers in milliseconds, or not at
// all while the bucket's stream has no leader (its node was killed, and
// JetStream elects another in a few seconds): waiting 5 s for each such
// read made a join after a node's kill take 10 s where the election took
// less.
func tryTimeout(try int) time.Duration {
	if try < 10 {
		return time.Second
	}
	return kvTimeout
}

func backoff(try int) {
	if try > 0 {
		time.Sleep(min(time.Duration(try)*100*time.Millisecond, time.Second))
	}
}

func (s *Server) routeCreate(c *client, m *signaling.Message) bool {
	for range 8 {
		code := newRoomCode()
		_, ok, err := s.cl.claim(&s.cl.rooms, string(code), owner{})
		if err != nil {
			c.sendError(unavailable(m.Type, err))
			return true
		}
		if ok {
			s.mu.Lock()
			if !s.busy(c, m.Type) {
				s.createRoom(c, m.Type, code, earlyOffer{m.SDP, m.Spare})
			}
			s.mu.Unlock()
			return true
		}
	}
	c.sendError(unavailable(m.Type, fmt.Errorf("no free room code")))
	return true
}

func (s *Server) routeJoin(c *client, m *signaling.Message) bool {
	s.mu.Lock()
	local := s.rooms[m.Room] != nil
	s.mu.Unlock()
	if local {
		return false
	}
	if ok, _ := s.lim.canGuess(c.addr); !ok {
		return false // refused here
	}
	var last error // the store's latest error, if any
	for try := range routeTries {
		backoff(try)
		o, err := s.cl.getOwnerWithin(&s.cl.rooms, string(m.Room), tryTimeout(try))
		if err != nil {
			last = err
			continue
		}
		switch o.node {
		case "":
			if !m.Create {
				return false // room_not_found, here
			}
			_, ok, err := s.cl.claim(&s.cl.rooms, string(m.Room), owner{})
			last = cmp.Or(err, last)
			if ok {
				return false // creates it here
			}
		case s.cl.id:
			// Ours, but not here: a room that just closed (its key's
			// release is queued) or one of a previous run.
			s.mu.Lock()
			local = s.rooms[m.Room] != nil
			s.mu.Unlock()
			if local {
				return false
			}
			if !m.Create {
				s.cl.releaseNow(&s.cl.rooms, string(m.Room))
				return false
			}
			_, ok, err := s.cl.claim(&s.cl.rooms, string(m.Room), o)
			last = cmp.Or(err, last)
			if ok {
				return false
			}
		default:
			if s.attach(c, o.node, m, false) {
				return true
			}
			// Its node is gone: so is the room.
			_, ok, err := s.cl.claim(&s.cl.rooms, string(m.Room), o)
			last = cmp.Or(err, last)
			if ok && m.Create {
				return false
			}
			if !m.Create {
				s.cl.releaseNow(&s.cl.rooms, string(m.Room))
				return false
			}
		}
	}
	c.sendError(unavailable(m.Type, exhausted("room "+string(m.Room), last)))
	return true
}

// exhausted is why a route ran out of tries: the store's latest error,
// or else a key that kept changing hands.
func exhausted(what string, last error) error {
	if last != nil {
		return fmt.Errorf("%s: the store failed %d tries, lastly: %w", what, routeTries, last)
	}
	return fmt.Errorf("%s changed hands too often", what)
}

func (s *Server) routeQuick(c *client, m *signaling.Message) bool {
	var last error
	for try := range routeTries {
		backoff(try)
		o, err := s.cl.getOwnerWithin(&s.cl.quick, quickKey, tryTimeout(try))
		if err != nil {
			last = err
			continue
		}
		switch o.node {
		case s.cl.id:
			return false
		case "":
		default:
			if s.attach(c, o.node, m, false) {
				return true
			}
		}
		// No queue, or its node is gone: this node holds it.
		_, ok, err := s.cl.claim(&s.cl.quick, quickKey, o)
		last = cmp.Or(err, last)
		if ok {
			return false
		}
	}
	c.sendError(unavailable(m.Type, exhausted("the quick-match queue", last)))
	return true
}

func (s *Server) routeRejoin(c *client, m *signaling.Message) bool {
	// The proof is checked here, where the connection's challenge is;
	// errors are reported by the local handling.
	if s.checkProof(m.Token, wire.ProofRejoin, c.challenge, m.Proof) != nil {
		return false
	}
	cl, terr := verifyRelayToken(s.tokenKey, m.Token, s.cfg.Now())
	if terr != nil {
		return false
	}
	return s.rejoinAt(c, m, cl.room)
}

// rejoinAt takes c, whose rejoin m (proof checked) names room code, to
// the node holding that room, or makes it here.
func (s *Server) rejoinAt(c *client, m *signaling.Message, code signaling.RoomCode) bool {
	local := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.busy(c, signaling.TypeRejoin) {
			s.handleRejoin(c, m.Token, m.Proof, true)
		}
		return true
	}
	s.mu.Lock()
	here := s.rooms[code] != nil
	s.mu.Unlock()
	if here {
		return local()
	}
	var last error
	for try := range routeTries {
		backoff(try)
		o, err := s.cl.getOwnerWithin(&s.cl.rooms, string(code), tryTimeout(try))
		if err != nil {
			last = err
			continue
		}
		if o.node != "" && o.node != s.cl.id && s.attach(c, o.node, m, true) {
			return true
		}
		if o.node == s.cl.id {
			return local()
		}
		_, ok, err := s.cl.claim(&s.cl.rooms, string(code), o)
		last = cmp.Or(err, last)
		if ok {
			return local()
		}
	}
	c.sendError(unavailable(m.Type, exhausted("room "+string(code), last)))
	return true
}

// releaseNow deletes key of bucket p whatever its revision.
func (cl *cluster) releaseNow(p *atomic.Pointer[kvHandle], key string) {
	h := p.Load()
	if h == nil {
		return
	}
	ctx, cancel := kvctx()
	defer cancel()
	h.Delete(ctx, key, 0)
}

// register records a room made here in the rooms bucket (a room of a
// fresh random code, or one whose code's key this node claimed), keeping
// its revision for the release.
func (s *Server) register(r *room) {
	code := string(r.code)
	s.cl.later(func() {
		kv, err := s.cl.kv(&s.cl.rooms)
		if err != nil {
			return
		}
		ctx, cancel := kvctx()
		defer cancel()
		rev, err := kv.Create(ctx, code, []byte(s.cl.id))
		if err != nil {
			e, gerr := kv.Get(ctx, code)
			if gerr != nil || string(e.Value) != s.cl.id {
				s.log.Info("signaling: room code held by another node", "room", code, "err", err)
				return
			}
			rev = e.Revision
		}
		s.mu.Lock()
		if s.rooms[r.code] == r {
			r.rev = rev
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		kv.Delete(ctx, code, rev)
	})
}

// roomClosed releases a closed room's key. Called with s.mu held.
func (s *Server) roomClosed(r *room) {
	if r.rev != 0 {
		s.cl.release(&s.cl.rooms, string(r.code), r.rev)
		r.rev = 0
	}
}

// receive handles what other nodes send this one.
func (cl *cluster) receive(msg *busMsg) {
	cl.msgsIn.Add(1)
	var e envelope
	if err := json.Unmarshal(msg.Data, &e); err != nil {
		return
	}
	s := cl.s
	if e.K == kindRelay {
		s.relayIn(&e, msg)
		return
	}
	msg.Respond(nil)
	switch e.K {
	case kindMsg:
		s.proxyMsg(&e)
	case kindGone:
		s.proxyGone(&e)
	case kindOut:
		s.deliver(&e)
	case kindFatal:
		s.deliverFatal(&e)
	}
}

// proxyMsg handles the message of another node's client as this node's
// own, through the client's proxy here.
func (s *Server) proxyMsg(e *envelope) {
	var m signaling.Message
	if json.Unmarshal(e.M, &m) != nil {
		return
	}
	key := proxyKey{e.N, e.ID}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.cl.publish(e.N, &envelope{K: kindOut, N: s.cl.id, ID: e.ID, M: mustEncode(errMessage(&signaling.Error{Code: signaling.ErrUnavailable, Message: "the server holding your room is shutting down; try again", Ref: m.Type}))})
		return
	}
	p := s.proxies[key]
	if p == nil {
		a, _ := netip.ParseAddr(e.A)
		s.nextID++
		p = &client{s: s, id: s.nextID, remote: &remoteRef{key: key}, log: s.log.With("client", s.nextID, "node", e.N, "remote_client", e.ID)}
		p.addr = s.lim.state(a)
		s.proxies[key] = p
	}
	s.dispatch(p, &m, time.Now(), e.V)
	if p.room == nil && !p.queued && s.proxies[key] == p {
		delete(s.proxies, key)
	}
	s.mu.Unlock()
}

// proxyGone ends the place of another node's client whose connection
// ended.
func (s *Server) proxyGone(e *envelope) {
	key := proxyKey{e.N, e.ID}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proxies[key]
	if p == nil {
		return
	}
	delete(s.proxies, key)
	p.closedNormally = e.V
	s.leaveAll(p)
}

// sendRemote sends m to a proxy's client, on its node. Called with s.mu
// held.
func (s *Server) sendRemote(c *client, m *signaling.Message) {
	e := &envelope{K: kindOut, N: s.cl.id, ID: c.remote.key.id, M: mustEncode(m), H: c.room != nil || c.queued}
	if m.Type == signaling.TypePaired {
		e.T = string(m.Token)
	}
	s.cl.publish(c.remote.key.node, e)
}

// fatalRemote closes a proxy's client, on its node, with e. Called with
// s.mu held.
func (s *Server) fatalRemote(c *client, e *signaling.Error, status websocket.StatusCode, reason string) {
	if s.proxies[c.remote.key] == c {
		delete(s.proxies, c.remote.key)
	}
	s.cl.publish(c.remote.key.node, &envelope{K: kindFatal, N: s.cl.id, ID: c.remote.key.id, M: mustEncode(errMessage(e)), S: int(status), R: reason})
}

func mustEncode(m *signaling.Message) json.RawMessage {
	b, _ := signaling.AppendMessage(nil, m)
	return b
}

// deliver passes a message from the node holding a local client's room to
// the client.
func (s *Server) deliver(e *envelope) {
	s.mu.Lock()
	c := s.byID[e.ID]
	if c == nil || c.away != e.N {
		s.mu.Unlock()
		return
	}
	if !e.H {
		c.away, c.awayTok, c.awayMsg = "", "", nil
	} else if e.T != "" {
		c.awayTok = signaling.RelayToken(e.T)
	}
	s.mu.Unlock()
	c.sendRaw(e.M)
}

func (s *Server) deliverFatal(e *envelope) {
	s.mu.Lock()
	c := s.byID[e.ID]
	if c == nil || c.away != e.N {
		s.mu.Unlock()
		return
	}
	c.away, c.awayTok, c.awayMsg = "", "", nil
	s.mu.Unlock()
	var m signaling.Message
	json.Unmarshal(e.M, &m)
	c.fatal(&signaling.Error{Code: m.Code, Message: m.Text}, websocket.StatusCode(e.S), e.R)
}

// watch finds the nodes holding local clients' rooms that have died, and
// keeps this node's keys from expiring.
func (cl *cluster) watch() {
	defer cl.wg.Done()
	s := cl.s
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastRefresh := time.Now()
	for {
		select {
		case <-cl.stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		nodes := map[string]bool{}
		for c := range s.clients {
			if c.away != "" {
				nodes[c.away] = true
			}
		}
		s.mu.Unlock()
		for n := range nodes {
			if !cl.aliveNoCount(n) {
				s.ownerGone(n)
			}
		}
		if time.Since(lastRefresh) >= refreshEach {
			lastRefresh = time.Now()
			s.refreshKeys()
		}
	}
}

func (cl *cluster) aliveNoCount(node string) bool {
	b, _ := json.Marshal(envelope{K: kindPing, N: cl.id})
	_, err := cl.bb.Request(subjectRoot+node, b, reqTimeout)
	return !errors.Is(err, errNoResponders)
}

// ownerGone takes the local clients whose room or queue place was on the
// dead node back: a paired player rejoins its pairing (on this node, or
// wherever the room's key now points), a queued player queues again, and
// a player waiting in a room is told the room is lost.
func (s *Server) ownerGone(node string) {
	type lost struct {
		c   *client
		tok signaling.RelayToken
		m   *signaling.Message
	}
	var ls []lost
	s.mu.Lock()
	for c := range s.clients {
		if c.away == node {
			ls = append(ls, lost{c, c.awayTok, c.awayMsg})
			c.away, c.awayTok, c.awayMsg = "", "", nil
		}
	}
	s.mu.Unlock()
	s.log.Info("signaling: node gone; taking back its players", "node", node, "players", len(ls))
	for _, l := range ls {
		go func() {
			switch {
			case l.tok != "":
				cl, terr := verifyRelayToken(s.tokenKey, l.tok, s.cfg.Now())
				if terr != nil {
					return
				}
				l.c.send(&signaling.Message{Type: signaling.TypePeerLeft, Room: cl.room, Reason: "dropped"})
				s.rejoinAt(l.c, &signaling.Message{Type: signaling.TypeRejoin, Token: l.tok}, cl.room)
			case l.m != nil && l.m.Type == signaling.TypeQuick:
				s.handle(l.c, l.m, time.Now())
			default:
				l.c.sendError(&signaling.Error{Code: signaling.ErrRoomNotFound, Message: "the server holding your room stopped; create or join a room again"})
			}
		}()
	}
}

// refreshKeys renews this node's keys before their TTL runs out.
func (s *Server) refreshKeys() {
	type item struct {
		r   *room
		rev uint64
	}
	var items []item
	s.mu.Lock()
	for _, r := range s.rooms {
		if r.rev != 0 {
			items = append(items, item{r, r.rev})
		}
	}
	s.mu.Unlock()
	kv, err := s.cl.kv(&s.cl.rooms)
	if err != nil {
		return
	}
	for _, it := range items {
		ctx, cancel := kvctx()
		rev, err := kv.Update(ctx, string(it.r.code), []byte(s.cl.id), it.rev)
		cancel()
		if err == nil {
			s.mu.Lock()
			if it.r.rev == it.rev {
				it.r.rev = rev
			}
			s.mu.Unlock()
		}
	}
	if o, err := s.cl.getOwner(&s.cl.quick, quickKey); err == nil && o.node == s.cl.id {
		if q, err := s.cl.kv(&s.cl.quick); err == nil {
			ctx, cancel := kvctx()
			q.Update(ctx, quickKey, []byte(s.cl.id), o.rev)
			cancel()
		}
	}
}
