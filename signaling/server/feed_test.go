package server

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
)

func dialFeed(t testing.TB, f *from, base, query string) *websocket.Conn {
	t.Helper()
	u := strings.Replace(base, "http://", "ws://", 1) + "/feed?" + query
	var opts websocket.DialOptions
	if f != nil {
		opts.HTTPClient = f.hc
	}
	conn, _, err := websocket.Dial(ctxT(t), u, &opts)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(1 << 16)
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

// readFeedMsg returns the next message, skipping feed_status ones.
func readFeedMsg(t testing.TB, c *websocket.Conn) (websocket.MessageType, []byte, error) {
	for {
		typ, b, err := c.Read(ctxT(t))
		if err != nil || typ == websocket.MessageBinary || !bytes.Contains(b, []byte(`"feed_status"`)) {
			return typ, b, err
		}
	}
}

func expectFeedError(t testing.TB, c *websocket.Conn, code signaling.ErrorCode) {
	t.Helper()
	_, b, err := readFeedMsg(t, c)
	if err != nil {
		t.Fatalf("want error %s, got %v", code, err)
	}
	var m signaling.Message
	if json.Unmarshal(b, &m) != nil || m.Type != signaling.TypeError || m.Code != code {
		t.Fatalf("want error %s, got %s", code, b)
	}
}

func feedFrame(side byte, i int) []byte {
	b := make([]byte, 80)
	b[0], b[1], b[2] = feedKind, 1, side
	b[3], b[4] = byte(i), byte(i>>8)
	return b
}

// TestFeedFanOut: each player uploads once and 100 spectators (bounded
// queues, loopback) get every frame of both sides in order; the players'
// uploads are the same bytes whatever the audience; a stranger cannot
// upload; Shutdown closes everything.
func TestFeedFanOut(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{MaxConnsPerAddr: 500, RatePerSec: 1000, RateBurst: 1000})
	a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	pa, _ := pairByCode(t, a, b)
	code := string(pa.Room)

	stranger := dialFeed(t, newFrom(t, "127.0.0.2"), url, "v=1&side=1&room="+code)
	expectFeedError(t, stranger, signaling.ErrBadToken)
	missing := dialFeed(t, nil, url, "v=1&room=ZZZZZZ")
	expectFeedError(t, missing, signaling.ErrRoomNotFound)

	const watchers, frames = 100, 60
	specs := make([]*websocket.Conn, watchers)
	for i := range specs {
		specs[i] = dialFeed(t, nil, url, "v=1&room="+code)
		if _, _, err := specs[i].Read(ctxT(t)); err != nil { // its first status: registered
			t.Fatal(err)
		}
	}
	up := [2]*websocket.Conn{dialFeed(t, nil, url, "v=1&side=1&room="+code), dialFeed(t, nil, url, "v=1&side=2&room="+code)}
	for _, u := range up {
		if _, _, err := u.Read(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	dup := dialFeed(t, nil, url, "v=1&side=1&room="+code)
	expectFeedError(t, dup, signaling.ErrRoomFull)
	if w, p := s.feeds.status(signaling.RoomCode(code)); w != watchers || p != 2 {
		t.Fatalf("status: %d watchers, %d players; want %d, 2", w, p, watchers)
	}

	var wg sync.WaitGroup
	got := make([][2]int, watchers)
	errs := make(chan error, watchers)
	for i, c := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for got[i][0]+got[i][1] < 2*frames {
				typ, b, err := readFeedMsg(t, c)
				if err != nil {
					errs <- err
					return
				}
				if typ != websocket.MessageBinary {
					continue
				}
				k := int(b[2]) - 1
				if !bytes.Equal(b, feedFrame(b[2], got[i][k])) {
					errs <- &signaling.Error{Message: "frame out of order or damaged"}
					return
				}
				got[i][k]++
			}
		}()
	}
	uploaded := 0
	for n := range frames {
		for k, u := range up {
			f := feedFrame(byte(k+1), n)
			uploaded += len(f)
			if err := u.Write(ctxT(t), websocket.MessageBinary, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("FIGURE feed fan-out: %d spectators got %d frames each; the players uploaded %d bytes (%d frames of 80 bytes each, once)", watchers, 2*frames, uploaded, 2*frames)

	// A room option: a player refuses spectators; those watching are closed.
	if err := up[0].Write(ctxT(t), websocket.MessageText, []byte(`{"type":"feed_player","spectators":false}`)); err != nil {
		t.Fatal(err)
	}
	expectFeedError(t, specs[0], errNoSpectators)
	late := dialFeed(t, nil, url, "v=1&room="+code)
	expectFeedError(t, late, errNoSpectators)

	// A frame of the wrong side closes the uploader.
	if err := up[1].Write(ctxT(t), websocket.MessageBinary, feedFrame(1, 0)); err != nil {
		t.Fatal(err)
	}
	expectFeedError(t, up[1], signaling.ErrBadMessage)

	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	expectFeedError(t, up[0], signaling.ErrShuttingDown)
	if _, _, err := readFeedMsg(t, up[0]); err == nil {
		t.Fatal("uploader still open after Shutdown")
	}
}

// TestFeedSlowSpectator: a spectator that never reads loses frames from
// its bounded queue; the others get them all.
func TestFeedSlowSpectator(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{})
	a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	pa, _ := pairByCode(t, a, b)
	code := string(pa.Room)
	slow := dialFeed(t, nil, url, "v=1&room="+code)
	fast := dialFeed(t, nil, url, "v=1&room="+code)
	for _, c := range []*websocket.Conn{slow, fast} {
		if _, _, err := c.Read(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	up := dialFeed(t, nil, url, "v=1&side=1&room="+code)
	if _, _, err := up.Read(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// Big frames, more than the socket buffers hold, under the rate.
	const n = feedBurst
	go func() {
		for i := range n {
			f := feedFrame(1, i)
			f = append(f, make([]byte, feedMaxFrame-len(f))...)
			if up.Write(ctxT(t), websocket.MessageBinary, f) != nil {
				return
			}
		}
	}()
	// The fast spectator gets the frames in order, at least a queue's
	// worth of them whatever the slow one does: n is twice feedQueue, so
	// a fast spectator that itself falls behind on a loaded machine loses
	// some (dropped from its own queue, as designed: its writer may not
	// run while the uploader's 240 frames are read and fanned out), but is
	// never held back by the slow one. A dropped frame is counted in the
	// connection's feed_status (dropped), so the spectator is done when the
	// last frame arrives or when every frame either arrived or was dropped
	// (the last ones may be among the dropped: then waiting for the last
	// one would wait forever, the statuses keeping the connection busy).
	got, last, dropped := 0, -1, 0
	for last < n-1 && got+dropped < n {
		typ, b, err := fast.Read(ctxT(t))
		if err != nil {
			t.Fatalf("the fast spectator, %d frames (the last %d) and %d dropped of %d: %v", got, last, dropped, n, err)
		}
		if typ != websocket.MessageBinary {
			var st feedStatus
			if err := json.Unmarshal(b, &st); err != nil || st.Type != "feed_status" {
				t.Fatalf("the fast spectator got %s", b)
			}
			dropped = int(st.Dropped)
			continue
		}
		i := int(b[3]) | int(b[4])<<8
		if i <= last {
			t.Fatalf("frame %d after frame %d", i, last)
		}
		got, last = got+1, i
	}
	t.Logf("the fast spectator got %d of %d frames, the last %d; its last status counted %d dropped from its queue", got, n, last, dropped)
	if got < feedQueue {
		t.Fatalf("the fast spectator got %d of %d frames beside a spectator that reads nothing: under a queue's worth (%d)", got, n, feedQueue)
	}
	var q int
	s.feeds.mu.Lock()
	for c := range s.feeds.rooms[signaling.RoomCode(code)].watchers {
		q = max(q, len(c.q))
	}
	s.feeds.mu.Unlock()
	if q > feedQueue {
		t.Fatalf("a queue holds %d frames, over %d", q, feedQueue)
	}
}
