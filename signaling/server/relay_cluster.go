package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// A relay stream whose two players' requests reached different nodes is
// joined through the backbone (NATS: a single server has no other node):
// each node runs the stream between its player's connection and a
// natsConn, whose bytes go to the other node on the subject of the other
// side (relaySubject) and come from the subject of its own. The relay
// bucket says which node holds each side's waiting request; the node
// that finds the other side there sends that node a hello (a request),
// and both then run their half. The bytes are the
// players' own (TLS, with the pinned certificate, end to end): the
// nodes neither read nor change them.

func relaySubject(key relayKey, side int) string {
	return fmt.Sprintf("ragsync.relay.%x.%x.%d", key.instance, key.pairing, side)
}

func relayBucketKey(key relayKey, side int) string {
	return fmt.Sprintf("%x_%x_%d", key.instance, key.pairing, side)
}

// natsConn is one node's end of a cross-node relay stream.
type natsConn struct {
	cl      *cluster
	out     string // the other side's subject
	unsub   func()
	in      chan []byte
	buf     []byte
	closeMu sync.Mutex
	closed  bool
	done    chan struct{}
}

func (cl *cluster) newNatsConn(key relayKey, side int) (*natsConn, error) {
	c := &natsConn{cl: cl, out: relaySubject(key, 1-side), in: make(chan []byte, 1024), done: make(chan struct{})}
	// A reader slower than the other side's writes holds the messages
	// up in the subscription's queue (up to its limit), not here.
	unsub, err := cl.bb.Subscribe(relaySubject(key, side), 64<<20, func(m *busMsg) {
		select {
		case c.in <- m.Data:
		case <-c.done:
		}
	})
	if err != nil {
		return nil, err
	}
	c.unsub = unsub
	return c, nil
}

func (c *natsConn) Read(b []byte) (int, error) {
	for len(c.buf) == 0 {
		select {
		case data := <-c.in:
			if len(data) == 0 {
				return 0, io.EOF // the other node closed its end
			}
			c.buf = data
		case <-c.done:
			return 0, net.ErrClosed
		}
	}
	n := copy(b, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

func (c *natsConn) Write(b []byte) (int, error) {
	select {
	case <-c.done:
		return 0, net.ErrClosed
	default:
	}
	for off := 0; off < len(b); off += 32 << 10 {
		end := min(len(b), off+32<<10)
		if err := c.cl.bb.Publish(c.out, append([]byte(nil), b[off:end]...)); err != nil {
			return off, err
		}
	}
	return len(b), nil
}

func (c *natsConn) Close() error {
	if c.drop() {
		c.cl.bb.Publish(c.out, nil) // the end, for the other node
	}
	return nil
}

// drop ends the subscription, reporting whether it was still on.
func (c *natsConn) drop() bool {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return false
	}
	c.closed = true
	close(c.done)
	c.unsub()
	return true
}

type natsAddr struct{}

func (natsAddr) Network() string { return "nats" }
func (natsAddr) String() string  { return "nats" }

func (c *natsConn) LocalAddr() net.Addr  { return natsAddr{} }
func (c *natsConn) RemoteAddr() net.Addr { return natsAddr{} }

// Deadlines: a publish does not block, and the pipe sets no read
// deadline.
func (c *natsConn) SetDeadline(t time.Time) error      { return nil }
func (c *natsConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *natsConn) SetWriteDeadline(t time.Time) error { return nil }

var _ net.Conn = (*natsConn)(nil)

// relayCrossNode is called when side's request of rendezvous rv waits
// (wt) on this node: until the wait is over, it keeps the request in the
// relay bucket and looks for the other side's request on another node,
// joining them when it is there (tries repeat while JetStream elects new
// leaders after a node died). It returns a function to call when the
// wait is over.
func (s *Server) relayCrossNode(rv *relayRendezvous, side int, wt *relayWaiter) func() {
	stop := make(chan struct{})
	finished := make(chan struct{})
	bk := relayBucketKey(rv.key, side)
	waiting := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return rv.waiting[side] == wt
	}
	go func() {
		defer close(finished)
		put := false
		for try := 0; ; try++ {
			if try > 0 {
				select {
				case <-stop:
					return
				case <-s.cl.stop:
					return
				case <-time.After(min(time.Duration(try)*200*time.Millisecond, time.Second)):
				}
			}
			if !waiting() {
				return
			}
			kv, err := s.cl.kv(&s.cl.relay)
			if err != nil {
				continue
			}
			ctx, cancel := kvctx()
			if !put {
				_, err := kv.Put(ctx, bk, []byte(s.cl.id))
				put = err == nil
			}
			e, err := kv.Get(ctx, relayBucketKey(rv.key, 1-side))
			cancel()
			if !put || err != nil || string(e.Value) == s.cl.id {
				continue
			}
			// Subscribed before the hello: the other node's bytes may
			// come as soon as it has answered.
			nc, err := s.cl.newNatsConn(rv.key, side)
			if err != nil {
				continue
			}
			b, _ := json.Marshal(&envelope{K: kindRelay, N: s.cl.id, ID: rv.key.pairing, T: strconv.FormatUint(rv.key.instance, 16), S: side})
			s.cl.msgsOut.Add(1)
			reply, err := s.cl.bb.Request(subjectRoot+string(e.Value), b, reqTimeout)
			if err == nil && string(reply) == "ok" && s.joinCrossNode(rv.key, side, nc) {
				return
			}
			nc.drop()
		}
	}()
	return func() {
		close(stop)
		<-finished
		s.cl.later(func() {
			kv, err := s.cl.kv(&s.cl.relay)
			if err != nil {
				return
			}
			ctx, cancel := kvctx()
			defer cancel()
			if e, err := kv.Get(ctx, bk); err == nil && string(e.Value) == s.cl.id {
				kv.Delete(ctx, bk, e.Revision)
			}
		})
	}
}

// joinCrossNode turns side's waiting request of the pairing key into a
// stream whose other side is on another node. It reports whether there
// was such a request (or such a stream already).
func (s *Server) joinCrossNode(key relayKey, side int, nc *natsConn) bool {
	s.mu.Lock()
	rv := s.rendezvous[key]
	if rv == nil {
		s.mu.Unlock()
		return false
	}
	wt := rv.waiting[side]
	if wt == nil {
		s.mu.Unlock()
		return false
	}
	if nc == nil {
		var err error
		if nc, err = s.cl.newNatsConn(key, side); err != nil {
			s.mu.Unlock()
			return false
		}
	}
	rv.waiting[side] = nil
	st := &relayStream{s: s, rv: rv, room: rv.room, ready: make(chan struct{}), epoch: time.Now()}
	st.running.Store(2)
	rv.stream = st
	s.relays[st] = struct{}{}
	s.relayWG.Add(1)
	s.mu.Unlock()
	wt.ch <- relayOutcome{stream: st}
	go func() {
		defer s.relayWG.Done()
		s.runStream(st, 1-side, nc, nil)
	}()
	s.log.Info("signaling: relay joined across nodes", "room", rv.room, "side", side)
	return true
}

// relayIn answers another node's hello: its side S's request of the
// pairing found this node's request of the other side waiting.
func (s *Server) relayIn(e *envelope, msg *busMsg) {
	inst, err := strconv.ParseUint(e.T, 16, 64)
	if err == nil && s.joinCrossNode(relayKey{inst, e.ID}, 1-e.S, nil) {
		msg.Respond([]byte("ok"))
	} else {
		msg.Respond([]byte("no"))
	}
}
