package game

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragsync/ragsync/internal/feed"
	"github.com/ragsync/ragsync/internal/websocket"
	"github.com/ragsync/ragsync/signaling"
)

// feedConn is the demo's end of the signaling server's spectator feed
// (GET /feed, see signaling/server/feed.go): a player uploads its feed
// frames once (side 1 or 2), a spectator (side 0) receives both players'.
// Its goroutines never block the game loop: frames to send wait in a
// bounded queue (the oldest is dropped when full), frames received in
// another one, polled by the loop.
type feedConn struct {
	out  chan []byte // frames to upload (players)
	free chan []byte // spare buffers for out
	in   chan []byte // frames received
	ctl  chan []byte // a player's text messages to send

	watchers atomic.Int32
	players  atomic.Int32
	sent     atomic.Uint64 // bytes uploaded
	recv     atomic.Uint64 // frames received
	dropped  atomic.Uint64 // frames dropped here (queues full)
	ended    atomic.Bool   // the server said the room ended
	mu       sync.Mutex
	err      error
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

const feedQueue = 128

// feedURL is the feed endpoint of the signaling server at signal.
func feedURL(signal, room string, side int) (string, error) {
	u, err := url.Parse(signal)
	if err != nil {
		return "", fmt.Errorf("feed: signaling URL %q: %w", signal, err)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("feed: signaling URL %q: want http(s) or ws(s)", signal)
	}
	u.Path = strings.TrimSuffix(u.Path, "/ws")
	u.Path = strings.TrimSuffix(u.Path, "/") + "/feed"
	q := url.Values{"v": {strconv.Itoa(signaling.ProtocolVersion)}, "room": {room}}
	if side != 0 {
		q.Set("side", strconv.Itoa(side))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// dialFeed connects to the feed in the background: a player of side 1 or
// 2 (hello is its first text message), or a spectator (side 0).
func dialFeed(signal, room string, side int, hello []byte) *feedConn {
	ctx, cancel := context.WithCancel(context.Background())
	f := &feedConn{out: make(chan []byte, feedQueue), free: make(chan []byte, feedQueue), in: make(chan []byte, feedQueue),
		ctl: make(chan []byte, 4), cancel: cancel}
	for range feedQueue {
		f.free <- make([]byte, 0, feed.MaxSize)
	}
	if hello != nil {
		f.ctl <- hello
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.fail(f.run(ctx, signal, room, side))
	}()
	return f
}

func (f *feedConn) fail(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

// Err is why the feed stopped (nil while it runs or after Close).
func (f *feedConn) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *feedConn) run(ctx context.Context, signal, room string, side int) error {
	u, err := feedURL(signal, room, side)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, _, err := websocket.Dial(dctx, u, nil)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("feed: %w", err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 10)
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	rerr := make(chan error, 1)
	go func() { rerr <- f.read(rctx, conn) }()
	for {
		select {
		case <-ctx.Done():
			conn.Close(websocket.StatusNormalClosure, "")
			<-rerr
			return nil
		case err := <-rerr:
			return err
		case b := <-f.ctl:
			if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
				return nil // the reader reports why
			}
		case b := <-f.out:
			err := conn.Write(ctx, websocket.MessageBinary, b)
			f.sent.Add(uint64(len(b)))
			f.free <- b[:0]
			if err != nil {
				return nil
			}
		}
	}
}

type feedMsg struct {
	Type     string              `json:"type"`
	Watchers int32               `json:"watchers"`
	Players  int32               `json:"players"`
	Code     signaling.ErrorCode `json:"code"`
	Text     string              `json:"text"`
}

func (f *feedConn) read(ctx context.Context, conn *websocket.Conn) error {
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil || f.ended.Load() {
				return nil
			}
			return fmt.Errorf("feed: %w", err)
		}
		if typ == websocket.MessageBinary {
			f.recv.Add(1)
			select {
			case f.in <- b:
			default:
				f.dropped.Add(1)
			}
			continue
		}
		var m feedMsg
		if json.Unmarshal(b, &m) != nil {
			return fmt.Errorf("feed: bad message %q", truncateStr(string(b), 80))
		}
		switch m.Type {
		case "feed_status":
			f.watchers.Store(m.Watchers)
			f.players.Store(m.Players)
		case "feed_end":
			f.ended.Store(true)
		case string(signaling.TypeError):
			return fmt.Errorf("feed: %s: %s", m.Code, m.Text)
		}
	}
}

func truncateStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Send queues a copy of frame for upload; when the queue is full the frame
// is dropped (the feed is live: a late frame is worth little). No
// allocation.
func (f *feedConn) Send(frame []byte) {
	select {
	case b := <-f.free:
		f.out <- append(b, frame...)
	default:
		f.dropped.Add(1)
	}
}

// Recv returns a received frame, or false when none waits.
func (f *feedConn) Recv() ([]byte, bool) {
	select {
	case b := <-f.in:
		return b, true
	default:
		return nil, false
	}
}

// Close stops the feed and waits for its goroutines.
func (f *feedConn) Close() {
	f.cancel()
	f.wg.Wait()
}

// playerHello is a player's first feed message.
func playerHello(spectators, rival bool) []byte {
	b, _ := json.Marshal(map[string]any{"type": "feed_player", "spectators": spectators, "rival": rival})
	return b
}
