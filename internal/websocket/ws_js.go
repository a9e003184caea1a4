//go:build js

package websocket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"
)

// MessageType is the type of a message: text (UTF-8) or binary.
type MessageType int

// Message types.
const (
	MessageText MessageType = iota + 1
	MessageBinary
)

// StatusCode is a close status (RFC 6455, section 7.4).
type StatusCode int

// The close statuses used here. A browser may send only 1000 and
// 3000–4999: Close sends the others as 4000 + (code − 1000), so that
// StatusGoingAway (1001, "dropped" for the signaling server, which keeps
// a player's seat unless the close is normal) goes out as 4001, still
// not a normal closure.
const (
	StatusNormalClosure   StatusCode = 1000
	StatusGoingAway       StatusCode = 1001
	StatusProtocolError   StatusCode = 1002
	StatusUnsupportedData StatusCode = 1003
	StatusAbnormalClosure StatusCode = 1006 // the browser's: closed without a close frame
	StatusMessageTooBig   StatusCode = 1009
)

// CompressionDisabled is accepted for the API's sake: the browser
// negotiates compression itself.
const CompressionDisabled = 2

// CloseError is how the connection was closed: the status and reason of
// the close frame (the peer's, or the one Close sent).
type CloseError struct {
	Code   StatusCode
	Reason string
}

func (e CloseError) Error() string {
	return fmt.Sprintf("status = %d and reason = %q", int(e.Code), e.Reason)
}

// CloseStatus returns the status of the CloseError in err's chain, or -1.
func CloseStatus(err error) StatusCode {
	var ce CloseError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return -1
}

// DialOptions has no options in a browser: its WebSocket takes no HTTP
// client or headers (it sends its own, Origin included).
type DialOptions struct{}

// Response stands for the handshake's HTTP response, which a browser's
// WebSocket hides: Dial always returns nil.
type Response struct {
	Body io.ReadCloser
}

type message struct {
	typ  MessageType
	data []byte
}

// Conn is a browser WebSocket. Read, Write and Close may be called
// concurrently.
type Conn struct {
	ws    js.Value
	funcs []js.Func
	limit atomic.Int64

	mu       sync.Mutex
	queue    []message // received, not yet read
	closeErr error     // set once closed
	closing  bool      // Close was called

	signal chan struct{} // a message was queued (capacity 1)
	opened chan struct{}
	closed chan struct{}
}

// jsError turns a JavaScript exception into an error.
func jsError(err *error) {
	switch r := recover().(type) {
	case nil:
	case js.Error:
		*err = r
	default:
		panic(r)
	}
}

// Dial opens a WebSocket to url (ws:// or wss://) and waits until it is
// open, ctx is done or the browser gives up. The browser hides why a
// connection failed: the error says only that it closed.
func Dial(ctx context.Context, url string, _ *DialOptions) (c *Conn, _ *Response, err error) {
	defer jsError(&err)
	ws := js.Global().Get("WebSocket").New(url)
	ws.Set("binaryType", "arraybuffer")
	c = &Conn{ws: ws, signal: make(chan struct{}, 1), opened: make(chan struct{}), closed: make(chan struct{})}
	c.limit.Store(32768)
	c.on("open", func(js.Value) { close(c.opened) })
	c.on("message", c.onMessage)
	c.on("close", func(e js.Value) {
		c.setClosed(CloseError{Code: StatusCode(e.Get("code").Int()), Reason: e.Get("reason").String()})
	})
	select {
	case <-c.opened:
		return c, nil, nil
	case <-c.closed:
		c.release()
		return nil, nil, fmt.Errorf("websocket: dial %s: %w", url, c.err())
	case <-ctx.Done():
		c.CloseNow()
		return nil, nil, ctx.Err()
	}
}

// on adds a listener for the WebSocket's events of type typ. fn runs in
// the browser's event loop and must not block.
func (c *Conn) on(typ string, fn func(js.Value)) {
	f := js.FuncOf(func(_ js.Value, args []js.Value) any {
		fn(args[0])
		return nil
	})
	c.funcs = append(c.funcs, f)
	c.ws.Call("addEventListener", typ, f)
}

// release removes the listeners (once closed, none fires again).
func (c *Conn) release() {
	c.mu.Lock()
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	for _, f := range funcs {
		f.Release()
	}
}

func (c *Conn) onMessage(e js.Value) {
	d := e.Get("data")
	var m message
	if d.Type() == js.TypeString {
		m = message{MessageText, []byte(d.String())}
	} else {
		a := js.Global().Get("Uint8Array").New(d)
		m = message{MessageBinary, make([]byte, a.Length())}
		js.CopyBytesToGo(m.data, a)
	}
	c.mu.Lock()
	c.queue = append(c.queue, m)
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// setClosed records that the connection has closed, with err (the first
// reason counts).
func (c *Conn) setClosed(err error) {
	c.mu.Lock()
	first := c.closeErr == nil
	if first {
		c.closeErr = err
	}
	c.mu.Unlock()
	if first {
		close(c.closed)
		// Removing the listeners from inside one is allowed; do it after
		// this event has been handled all the same.
		go c.release()
	}
}

func (c *Conn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// SetReadLimit bounds the size of a message Read accepts (32 KiB at
// first); a larger one closes the connection with StatusMessageTooBig.
// Negative: no limit.
func (c *Conn) SetReadLimit(n int64) { c.limit.Store(n) }

// Read returns the next message; once the connection has closed and every
// message received has been read, the close's error (see CloseStatus).
func (c *Conn) Read(ctx context.Context) (MessageType, []byte, error) {
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue[0] = message{}
			c.queue = c.queue[1:]
			c.mu.Unlock()
			if lim := c.limit.Load(); lim >= 0 && int64(len(m.data)) > lim {
				err := fmt.Errorf("websocket: message of %d bytes over the read limit (%d)", len(m.data), lim)
				c.Close(StatusMessageTooBig, "message too big")
				return 0, nil, err
			}
			return m.typ, m.data, nil
		}
		err := c.closeErr
		c.mu.Unlock()
		if err != nil {
			return 0, nil, fmt.Errorf("websocket: read: %w", err)
		}
		select {
		case <-c.signal:
		case <-c.closed:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
}

// Write sends a message. It does not block: the browser buffers it.
func (c *Conn) Write(_ context.Context, typ MessageType, p []byte) (err error) {
	if err := c.err(); err != nil {
		return fmt.Errorf("websocket: write: %w", err)
	}
	defer jsError(&err)
	switch typ {
	case MessageText:
		c.ws.Call("send", string(p))
	case MessageBinary:
		a := js.Global().Get("Uint8Array").New(len(p))
		js.CopyBytesToJS(a, p)
		c.ws.Call("send", a)
	default:
		return fmt.Errorf("websocket: write: message type %d", typ)
	}
	return nil
}

// closeWait bounds how long Close waits for the browser's close handshake.
const closeWait = 2 * time.Second

// Close closes the connection with code and reason (see the status codes
// for what a browser sends instead of a code it may not send) and waits
// for the close handshake, for at most 2 s. Closing a closed connection
// does nothing.
func (c *Conn) Close(code StatusCode, reason string) error {
	if !c.startClose(code, reason) {
		return nil
	}
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-c.closed:
	case <-t.C:
		c.setClosed(CloseError{Code: code, Reason: reason})
	}
	return nil
}

// CloseNow closes the connection (StatusGoingAway) without waiting.
func (c *Conn) CloseNow() error {
	if c.startClose(StatusGoingAway, "") {
		c.setClosed(CloseError{Code: StatusGoingAway})
	}
	return nil
}

// startClose asks the browser to close; false if closing already.
func (c *Conn) startClose(code StatusCode, reason string) (ok bool) {
	c.mu.Lock()
	if c.closing || c.closeErr != nil {
		c.mu.Unlock()
		return false
	}
	c.closing = true
	c.mu.Unlock()
	if code != StatusNormalClosure && (code < 3000 || code > 4999) {
		code = 4000 + code - 1000
	}
	if len(reason) > 123 { // the limit of a close frame's reason
		reason = reason[:123]
	}
	func() {
		var err error
		defer jsError(&err)
		c.ws.Call("close", int(code), reason)
	}()
	return true
}

// NetConn is a net.Conn over c's messages of type typ: what it writes
// goes as one message per Write; what it reads is the bytes of the
// messages received. Closing it closes c (normal closure); a close by the
// peer reads as io.EOF. ctx bounds nothing here (it is for the API's
// sake); deadlines work.
func NetConn(_ context.Context, c *Conn, typ MessageType) net.Conn {
	c.SetReadLimit(-1)
	return &netConn{c: c, typ: typ, rd: newDeadline(), wd: newDeadline()}
}

type netConn struct {
	c   *Conn
	typ MessageType

	rmu    sync.Mutex
	rest   []byte // of the message being read
	eof    bool
	rd, wd *deadline
}

func (nc *netConn) Read(p []byte) (int, error) {
	nc.rmu.Lock()
	defer nc.rmu.Unlock()
	for len(nc.rest) == 0 {
		if nc.eof {
			return 0, io.EOF
		}
		ctx, cancel := nc.rd.context()
		typ, b, err := nc.c.Read(ctx)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil && nc.c.err() == nil:
			return 0, os.ErrDeadlineExceeded
		case err != nil:
			if st := CloseStatus(err); st == StatusNormalClosure || st == StatusGoingAway {
				nc.eof = true
				return 0, io.EOF
			}
			return 0, err
		case typ != nc.typ:
			nc.c.Close(StatusUnsupportedData, "unexpected message type")
			return 0, fmt.Errorf("websocket: read a message of type %d, want %d", typ, nc.typ)
		}
		nc.rest = b
	}
	n := copy(p, nc.rest)
	nc.rest = nc.rest[n:]
	return n, nil
}

func (nc *netConn) Write(p []byte) (int, error) {
	if nc.wd.expired() {
		return 0, os.ErrDeadlineExceeded
	}
	if err := nc.c.Write(context.Background(), nc.typ, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (nc *netConn) Close() error {
	return nc.c.Close(StatusNormalClosure, "")
}

type addr struct{}

func (addr) Network() string { return "websocket" }
func (addr) String() string  { return "websocket/unknown-addr" }

func (nc *netConn) LocalAddr() net.Addr  { return addr{} }
func (nc *netConn) RemoteAddr() net.Addr { return addr{} }

func (nc *netConn) SetDeadline(t time.Time) error {
	nc.rd.set(t)
	nc.wd.set(t)
	return nil
}

func (nc *netConn) SetReadDeadline(t time.Time) error  { nc.rd.set(t); return nil }
func (nc *netConn) SetWriteDeadline(t time.Time) error { nc.wd.set(t); return nil }

// deadline is a net.Conn deadline.
type deadline struct {
	mu sync.Mutex
	t  time.Time // zero: none
}

func newDeadline() *deadline { return &deadline{} }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	d.t = t
	d.mu.Unlock()
}

func (d *deadline) expired() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.t.IsZero() && !time.Now().Before(d.t)
}

// context is a context that ends at the deadline (as it is now: a
// deadline set during a Read applies to the next one).
func (d *deadline) context() (context.Context, context.CancelFunc) {
	d.mu.Lock()
	t := d.t
	d.mu.Unlock()
	if t.IsZero() {
		return context.Background(), func() {}
	}
	return context.WithDeadline(context.Background(), t)
}
