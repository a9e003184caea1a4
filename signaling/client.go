package signaling

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragsync/ragsync/internal/hedge"
	"github.com/ragsync/ragsync/internal/websocket"
	"github.com/ragsync/ragsync/signaling/internal/http"
	"github.com/ragsync/ragsync/signaling/internal/wire"
)

// ErrClosed is returned by a Client's methods after Close, and by Recv once
// the connection has ended without a more specific error.
var ErrClosed = errors.New("signaling: client closed")

// ErrServerUnresponsive ends a connection when the server has not answered
// keepalive pings for two ClientConfig.KeepAlive periods.
var ErrServerUnresponsive = errors.New("signaling: server not responding to keepalive")

// ClientConfig configures Dial. The zero value is ready to use.
type ClientConfig struct {
	// HTTPClient makes the WebSocket handshake. Nil means Go's default
	// HTTP client with TCP tuned for small messages on a lossy link
	// (short retransmission timeouts; see internal/thintcp).
	HTTPClient *http.Client
	// Header is added to the handshake request.
	Header http.Header
	// EventBuffer is how many events Recv can have pending before the client
	// stops reading from the server. Zero means 64.
	EventBuffer int
	// KeepAlive is the interval of the client's ping messages, which keep the
	// server's idle timeout from closing a player who is waiting for a peer,
	// and detect a dead server (no reply within two intervals ends the
	// connection with ErrServerUnresponsive). Zero means 15s; negative
	// disables keepalive.
	KeepAlive time.Duration
	// MaxMessageBytes bounds a message from the server. Zero means 1 MiB.
	MaxMessageBytes int64
	// Logger receives debug logs, and an Info line for each connection
	// Dial adds alongside a slow one (see DialHedge). Nil means no
	// logging.
	Logger *slog.Logger
	// FallbackURLs are other signaling servers of the same deployment
	// (sharing its secret: cmd/signal -secret), tried in order by Dial,
	// DialRelay and DialRelayWebSocket when the URL they are given cannot
	// be reached or refuses with shutting_down, server_full or
	// too_many_conns. A player whose server died reaches another this way
	// and takes its place back with Rejoin; its relay tokens are valid
	// there. Nil means none.
	FallbackURLs []string
	// DialHedge: while Dial's connection (TCP handshake, WebSocket
	// upgrade, the server's welcome) has not completed for this long,
	// Dial starts another alongside it, and again each DialHedge, up to
	// dialHedgeMost at once; the first to complete is used, the others
	// are closed. On a lossy link a lost SYN or request waits for TCP's
	// retransmission timer (1 s, doubling, and 3 s for the first data
	// after a retransmitted handshake), while a fresh connection gets
	// through at its first try; on a good link the first completes well
	// within DialHedge and nothing else is started (a dial is two round
	// trips: on a link slower than 150 ms each way a second connection
	// starts, and the loser is closed). Zero means 300ms;
	// negative, one connection at a time.
	DialHedge time.Duration
}

// dialHedgeMost bounds the connections Dial has under way at once (see
// ClientConfig.DialHedge).
const dialHedgeMost = 6

func (c ClientConfig) withDefaults() ClientConfig {
	if c.EventBuffer <= 0 {
		c.EventBuffer = 64
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = 15 * time.Second
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = 1 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.DialHedge == 0 {
		c.DialHedge = 300 * time.Millisecond
	}
	return c
}

// Pairing is what a player learns when the room has two players.
type Pairing struct {
	Room  RoomCode
	Role  Role       // RoleOfferer sends the offer, RoleAnswerer answers
	Token RelayToken // this player's seat (token and key) for DialRelay and Rejoin; valid for re-attaching until the pairing ends
	// ICEServers are the STUN/TURN servers the signaling server offers
	// for this pairing (its embedded TURN server, with credentials valid
	// for Config.CredentialTTL); nil if it offers none. Give them to
	// WebRTC as they are.
	ICEServers []ICEServer
}

// EventKind says what an Event reports. The zero value is EventUnknown.
type EventKind uint8

// Event kinds.
const (
	EventUnknown   EventKind = iota
	EventPaired              // Pairing is set: the other player is in the room
	EventPeerLeft            // Room and Reason are set: "left" or "disconnected" (you are now the room's offerer, waiting), or "dropped" (its place is kept for a rejoin)
	EventOffer               // SDP is the peer's offer
	EventAnswer              // SDP is the peer's answer
	EventCandidate           // Candidate is the peer's ICE candidate
	EventError               // Err is an error the server reported about a message you sent
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case EventPaired:
		return "paired"
	case EventPeerLeft:
		return "peer_left"
	case EventOffer:
		return "offer"
	case EventAnswer:
		return "answer"
	case EventCandidate:
		return "candidate"
	case EventError:
		return "error"
	}
	return "unknown"
}

// Event is something the server told this client. Which fields are set
// depends on Kind.
type Event struct {
	Kind      EventKind
	Pairing   Pairing   // EventPaired
	Room      RoomCode  // EventPeerLeft
	Reason    string    // EventPeerLeft: "left", "disconnected" or "dropped"
	SDP       string    // EventOffer, EventAnswer
	Candidate Candidate // EventCandidate
	Err       *Error    // EventError
}

// Client is a connection to a signaling server. Its methods are safe for
// concurrent use. Room requests (CreateRoom, JoinRoom, QuickMatch, Leave)
// wait for the server's reply; pairing, the peer's messages and errors about
// sent messages arrive through Recv.
type Client struct {
	conn      *websocket.Conn
	cfg       ClientConfig
	limits    Limits
	challenge string // the welcome's, for rejoin proofs
	turn      bool   // the welcome's: paired carries TURN servers

	ctx    context.Context // canceled when the client is closing
	cancel context.CancelFunc
	events chan Event
	done   chan struct{} // closed when the reader has exited
	wg     sync.WaitGroup

	reqSem chan struct{} // one room request at a time

	mu       sync.Mutex
	pending  *pendingReq
	termErr  error
	closeErr error
	offer    string // for the next create, join or quick (SetOffer)
	spare    bool   // offer yields to the other player's (SetSpareOffer)

	lastRecv   atomic.Int64 // unix nanos of the last message received
	delivering atomic.Bool  // the reader waits for Recv to take an event
	closeOnce  sync.Once
}

type pendingReq struct {
	ref   MsgType
	reply chan Message // capacity 1
}

// Dial connects to the signaling server at rawURL and waits for its welcome.
// rawURL is a ws://, wss://, http:// or https:// URL; an empty path means
// "/ws", and the protocol version is added to the query. A server error
// (e.g. server_full) is returned as *Error.
func Dial(ctx context.Context, rawURL string, cfg ClientConfig) (*Client, error) {
	cfg = cfg.withDefaults()
	return withFallbacks(ctx, rawURL, &cfg, func(u string) (*Client, error) {
		return hedge.RaceNotify(ctx, cfg.DialHedge, dialHedgeMost, func(ctx context.Context) (*Client, error) {
			return dialOne(ctx, u, cfg)
		}, func(c *Client) { c.Close() }, func(running int) {
			cfg.Logger.Info("signaling: no answer yet; another connection alongside", "url", u, "connections", running)
		})
	})
}

// withFallbacks calls dial with rawURL, then with each of
// cfg.FallbackURLs while the error says another server may do better.
// It returns the first success or the last error.
func withFallbacks[T any](ctx context.Context, rawURL string, cfg *ClientConfig, dial func(string) (T, error)) (T, error) {
	v, err := dial(rawURL)
	for _, u := range cfg.FallbackURLs {
		if err == nil || !tryElsewhere(ctx, err) {
			break
		}
		cfg.Logger.Debug("signaling: trying a fallback server", "url", u, "err", err)
		v, err = dial(u)
	}
	return v, err
}

// tryElsewhere reports whether err, from a server that failed to connect
// or refused, leaves another server worth trying.
func tryElsewhere(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code == ErrShuttingDown || e.Code == ErrServerFull || e.Code == ErrTooManyConns
	}
	return true
}

func dialOne(ctx context.Context, rawURL string, cfg ClientConfig) (*Client, error) {
	u, err := endpointURL(rawURL, "/ws", true)
	if err != nil {
		return nil, err
	}
	conn, resp, err := websocket.Dial(ctx, u, dialOptions(&cfg))
	if err != nil {
		// A refusal before the upgrade (e.g. shutting_down) has a JSON body
		// (not visible to a browser, whose WebSocket hides the response).
		if resp != nil && resp.Body != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if m, derr := DecodeMessage(body); derr == nil && m.Type == TypeError {
				return nil, &Error{Code: m.Code, Message: m.Text, Ref: m.Ref}
			}
		}
		return nil, fmt.Errorf("signaling: dial %s: %w", u, err)
	}
	conn.SetReadLimit(cfg.MaxMessageBytes)
	_, data, err := conn.Read(ctx)
	if err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("signaling: waiting for welcome from %s: %w", u, err)
	}
	m, err := DecodeMessage(data)
	if err != nil {
		conn.Close(websocket.StatusProtocolError, "bad welcome")
		return nil, fmt.Errorf("signaling: bad welcome from %s: %w", u, err)
	}
	switch m.Type {
	case TypeWelcome:
	case TypeError:
		conn.CloseNow()
		return nil, &Error{Code: m.Code, Message: m.Text, Ref: m.Ref}
	default:
		conn.Close(websocket.StatusProtocolError, "expected welcome")
		return nil, fmt.Errorf("signaling: expected welcome from %s, got %q", u, m.Type)
	}
	if m.V != ProtocolVersion {
		conn.Close(websocket.StatusProtocolError, "unsupported version")
		return nil, &Error{Code: ErrUnsupportedVersion, Message: fmt.Sprintf("server speaks v%d, client v%d", m.V, ProtocolVersion)}
	}
	c := &Client{
		conn:   conn,
		cfg:    cfg,
		events: make(chan Event, cfg.EventBuffer),
		done:   make(chan struct{}),
		reqSem: make(chan struct{}, 1),
	}
	if m.Limits != nil {
		c.limits = *m.Limits
	}
	c.challenge = m.Challenge
	c.turn = m.TURN
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.lastRecv.Store(time.Now().UnixNano())
	c.wg.Add(1)
	go c.readLoop()
	if cfg.KeepAlive > 0 {
		c.wg.Add(1)
		go c.keepAlive()
	}
	return c, nil
}

// Limits returns the limits the server announced in its welcome.
func (c *Client) Limits() Limits { return c.limits }

// SetOffer gives this client's next CreateRoom, JoinOrCreateRoom or
// QuickMatch an early offer: a WebRTC offer made before the pairing. If
// this client becomes the offerer, the server sends it to the answerer
// right after paired, as if it had been sent then, and the offerer sends
// no other. A player with an early offer is the offerer, even if it joins
// a room or arrives second in quick match, unless the other player
// brought one too (see the package doc, Roles). A
// client slow to answer, such as a browser page, connects faster as the
// offerer with its offer ready. The offer is used by one request; ""
// clears it.
func (c *Client) SetOffer(sdp string) {
	c.mu.Lock()
	c.offer, c.spare = sdp, false
	c.mu.Unlock()
}

// SetSpareOffer is SetOffer for a spare early offer, for a client quick
// to answer: it makes this client the offerer only if it would be anyway
// (it created the room, or waited longer in quick match) or if the other
// player brings none; against an early offer that is not spare it yields,
// and this client answers (see the package doc, Roles). Spare or not,
// an early offer saves the pairing two messages through the server (the
// offerer's paired, then its offer). Send one only if the server hands
// out no TURN servers (TURN): an early offer cannot carry their
// candidates.
func (c *Client) SetSpareOffer(sdp string) {
	c.mu.Lock()
	c.offer, c.spare = sdp, sdp != ""
	c.mu.Unlock()
}

// TURN reports whether the server said in its welcome that paired will
// carry TURN servers, which an early offer made before it cannot use.
func (c *Client) TURN() bool { return c.turn }

// withOffer puts the early offer (and whether it is spare) in m, a
// create, join or quick, and clears it.
func (c *Client) withOffer(m Message) Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	m.SDP, m.Spare = c.offer, c.spare && c.offer != ""
	c.offer, c.spare = "", false
	return m
}

// CreateRoom creates a private room with this client as its first player
// (the offerer, unless only the joiner brings an early offer: SetOffer)
// and returns the code to give to the other player. The pairing arrives
// later as EventPaired, with the role.
func (c *Client) CreateRoom(ctx context.Context) (RoomCode, error) {
	m, err := c.request(ctx, c.withOffer(Message{Type: TypeCreate}), TypeJoined)
	if err != nil {
		return "", err
	}
	return m.Room, nil
}

// JoinRoom joins the room with the given code as its second player (the
// answerer, unless only this client brings an early offer: SetOffer). It
// returns once the server has accepted; the pairing arrives as
// EventPaired right after. A malformed code fails without a round trip
// (ErrBadRoomCode); ErrRoomNotFound and ErrRoomFull come from the server.
func (c *Client) JoinRoom(ctx context.Context, code string) error {
	rc, err := ParseRoomCode(code)
	if err != nil {
		return err
	}
	_, err = c.request(ctx, c.withOffer(Message{Type: TypeJoin, Room: rc}), TypeJoined)
	return err
}

// JoinOrCreateRoom joins the room with the given code, or creates it with
// that code if there is none, so two players who agreed on a code can both
// call it, in either order. It returns the role this client got: the
// creator is the offerer and waits for EventPaired; the joiner is the
// answerer and EventPaired follows at once; but a joiner that alone
// brings an early offer (SetOffer) is the offerer, and the role in
// EventPaired is the one that counts. A malformed code fails without
// a round trip (ErrBadRoomCode); ErrRoomFull and ErrTooManyRooms come from
// the server.
func (c *Client) JoinOrCreateRoom(ctx context.Context, code string) (Role, error) {
	rc, err := ParseRoomCode(code)
	if err != nil {
		return RoleUnknown, err
	}
	m, err := c.request(ctx, c.withOffer(Message{Type: TypeJoin, Room: rc, Create: true}), TypeJoined)
	if err != nil {
		return RoleUnknown, err
	}
	return m.Role, nil
}

// QuickMatch puts this client in the quick-match queue and returns once the
// server has queued it. When another player is waiting or arrives, both get
// EventPaired; the one who waited longer is the offerer, unless only the
// other brought an early offer (SetOffer).
func (c *Client) QuickMatch(ctx context.Context) error {
	_, err := c.request(ctx, c.withOffer(Message{Type: TypeQuick}), TypeQueued)
	return err
}

// Rejoin takes this player's place back in its pairing after its
// connection dropped, or after the server restarted (with the same
// secret), with the relay token of its Pairing. It returns the player's
// role; EventPaired follows, with the same room and role, once the other
// player is there too (at once if it still is). ErrBadToken: the pairing
// has ended (the other player left, or did not come back within the
// server's Config.RejoinGrace) or the token is not valid.
func (c *Client) Rejoin(ctx context.Context, token RelayToken) (Role, error) {
	tok, key := token.seat()
	proof := ""
	if key != "" {
		proof = wire.Proof(key, wire.ProofRejoin, c.challenge, string(tok))
	}
	m, err := c.request(ctx, Message{Type: TypeRejoin, Token: tok, Proof: proof}, TypeJoined)
	if err != nil {
		return RoleUnknown, err
	}
	return m.Role, nil
}

// RenewICEServers asks the server, while paired, for fresh ICE servers:
// TURN credentials for the pairing with a new expiry (they are valid
// while the pairing lasts on the server that issued them, and for its
// TURNConfig.CredentialTTL after). Nil if the server runs no TURN;
// ErrWrongState when not paired.
func (c *Client) RenewICEServers(ctx context.Context) ([]ICEServer, error) {
	m, err := c.request(ctx, Message{Type: TypeICEServers}, TypeICEServers)
	if err != nil {
		return nil, err
	}
	return m.ICE, nil
}

// Leave leaves the current room or the quick-match queue. The other player
// gets EventPeerLeft. Leaving when in neither is ErrWrongState.
func (c *Client) Leave(ctx context.Context) error {
	_, err := c.request(ctx, Message{Type: TypeLeave}, TypeLeft)
	return err
}

// SendOffer sends an SDP offer to the peer (offerer only). An offer over
// the server's message size limit is refused here with ErrMessageTooBig
// (the connection stays open); server-side refusals arrive as EventError
// with Ref TypeOffer.
func (c *Client) SendOffer(ctx context.Context, sdp string) error {
	return c.send(ctx, &Message{Type: TypeOffer, SDP: sdp})
}

// SendAnswer sends an SDP answer to the peer (answerer only).
func (c *Client) SendAnswer(ctx context.Context, sdp string) error {
	return c.send(ctx, &Message{Type: TypeAnswer, SDP: sdp})
}

// SendCandidate sends a trickled ICE candidate to the peer. A Candidate
// with an empty Candidate string signals the end of candidates.
func (c *Client) SendCandidate(ctx context.Context, cand Candidate) error {
	return c.send(ctx, &Message{Type: TypeCandidate, Candidate: &cand})
}

// Recv returns the next event. It blocks until one arrives, ctx is done
// (ctx.Err()), or the connection ends: then it returns the reason, e.g.
// ErrClosed after Close, or an *Error such as ErrIdleTimeout or
// ErrShuttingDown the server sent before closing. Events are buffered
// (ClientConfig.EventBuffer); while the buffer is full the client stops
// reading from the server, so call Recv steadily.
func (c *Client) Recv(ctx context.Context) (Event, error) {
	select {
	case ev, ok := <-c.events:
		if !ok {
			return Event{}, c.terminalErr()
		}
		return ev, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// Ping sends a ping message, which the server answers with a pong (Recv
// returns neither). The client pings by itself every
// ClientConfig.KeepAlive; a client may ping more often while a message
// from the server matters: on a lossy link a lost TCP segment on an
// otherwise idle connection waits for the retransmission timer, which
// backs off to seconds, while one followed by more traffic either way is
// recovered by fast retransmit within a round trip or so.
func (c *Client) Ping(ctx context.Context) error {
	return c.send(ctx, &Message{Type: TypePing})
}

// Done is closed when the connection has ended; Recv then drains the
// remaining events and returns the reason.
func (c *Client) Done() <-chan struct{} { return c.done }

// Drop closes the connection as a dropped one (status 1001, going away):
// the server keeps a paired player's place for its RejoinGrace, as after a
// network failure, so the player can take it back with Rejoin on a new
// connection. p2p uses it when the peer is away, to rejoin the pairing
// with its seat token while the peer comes back. It is idempotent, and a
// no-op after Close.
func (c *Client) Drop() error {
	c.closeOnce.Do(func() {
		c.setTerm(ErrClosed)
		_ = c.conn.Close(websocket.StatusGoingAway, "dropped")
		c.cancel()
		c.wg.Wait()
	})
	return nil
}

// Close closes the connection (normal closure; the server treats it as
// leaving the room) and waits for the client's goroutines to exit. It is
// idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.setTerm(ErrClosed)
		err := c.conn.Close(websocket.StatusNormalClosure, "client closed")
		c.cancel()
		c.wg.Wait()
		if err != nil && !errors.Is(err, ErrClosed) && websocket.CloseStatus(err) == -1 {
			c.closeErr = err
		}
	})
	return c.closeErr
}

func (c *Client) terminalErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.termErr == nil {
		return ErrClosed
	}
	return c.termErr
}

// setTerm records why the connection ended, keeping the first reason.
func (c *Client) setTerm(err error) {
	c.mu.Lock()
	if c.termErr == nil {
		c.termErr = err
	}
	c.mu.Unlock()
}

func (c *Client) send(ctx context.Context, m *Message) error {
	select {
	case <-c.done:
		return c.terminalErr()
	default:
	}
	b, err := AppendMessage(nil, m)
	if err != nil {
		return err
	}
	// The server closes the connection on a message over its limit: refuse
	// it here instead, and keep the connection.
	if lim := c.limits.MaxMessageBytes; lim > 0 && len(b) > lim {
		return &Error{Code: ErrMessageTooBig, Message: fmt.Sprintf("%s message is %d bytes; the server accepts at most %d", m.Type, len(b), lim), Ref: m.Type}
	}
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		select {
		case <-c.done:
			return c.terminalErr()
		default:
		}
		return fmt.Errorf("signaling: send %s: %w", m.Type, err)
	}
	c.cfg.Logger.Debug("signaling client: sent", "type", m.Type)
	return nil
}

// request sends m and waits for a reply of type want, or an error message
// that refers to m.Type.
func (c *Client) request(ctx context.Context, m Message, want MsgType) (Message, error) {
	select {
	case c.reqSem <- struct{}{}:
	case <-ctx.Done():
		return Message{}, ctx.Err()
	case <-c.done:
		return Message{}, c.terminalErr()
	}
	defer func() { <-c.reqSem }()
	p := &pendingReq{ref: m.Type, reply: make(chan Message, 1)}
	c.mu.Lock()
	c.pending = p
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.pending == p {
			c.pending = nil
		}
		c.mu.Unlock()
	}()
	if err := c.send(ctx, &m); err != nil {
		return Message{}, err
	}
	select {
	case r := <-p.reply:
		if r.Type == TypeError {
			return Message{}, &Error{Code: r.Code, Message: r.Text, Ref: r.Ref}
		}
		if r.Type != want {
			return Message{}, fmt.Errorf("signaling: %s: unexpected reply %q", m.Type, r.Type)
		}
		return r, nil
	case <-ctx.Done():
		return Message{}, ctx.Err()
	case <-c.done:
		return Message{}, c.terminalErr()
	}
}

// fatalCodes are the error codes after which the server closes the
// connection.
func fatalCode(code ErrorCode) bool {
	switch code {
	case ErrMessageTooBig, ErrIdleTimeout, ErrUnsupportedVersion, ErrServerFull, ErrShuttingDown, ErrSlowConsumer, ErrTooManyConns, ErrOriginNotAllowed:
		return true
	}
	return false
}

func (c *Client) readLoop() {
	defer c.wg.Done()
	defer close(c.done)
	defer close(c.events)
	for {
		_, data, err := c.conn.Read(c.ctx)
		if err != nil {
			switch {
			case websocket.CloseStatus(err) == websocket.StatusNormalClosure:
				c.setTerm(ErrClosed)
			case errors.Is(err, io.EOF):
				c.setTerm(fmt.Errorf("signaling: server closed the connection: %w", err))
			default:
				c.setTerm(fmt.Errorf("signaling: connection lost: %w", err))
			}
			c.conn.CloseNow()
			return
		}
		c.lastRecv.Store(time.Now().UnixNano())
		m, err := DecodeMessage(data)
		if err != nil {
			c.cfg.Logger.Debug("signaling client: bad message from server", "err", err)
			continue
		}
		c.cfg.Logger.Debug("signaling client: received", "type", m.Type)
		if !c.dispatch(m) {
			return
		}
	}
}

// dispatch routes one server message; false means the client is closing.
func (c *Client) dispatch(m Message) bool {
	var ev Event
	switch m.Type {
	case TypePong, TypeWelcome:
		return true
	case TypeJoined, TypeQueued, TypeLeft, TypeICEServers, TypeError:
		c.mu.Lock()
		p := c.pending
		if p != nil && (m.Type != TypeError || m.Ref == p.ref) {
			c.pending = nil
			c.mu.Unlock()
			p.reply <- m
			return true
		}
		c.mu.Unlock()
		if m.Type != TypeError {
			return true // a late reply to a canceled request
		}
		e := &Error{Code: m.Code, Message: m.Text, Ref: m.Ref}
		if fatalCode(m.Code) {
			c.setTerm(e)
		}
		ev = Event{Kind: EventError, Err: e}
	case TypePaired:
		tok := m.Token
		if m.Key != "" {
			tok += RelayToken("." + m.Key)
		}
		ev = Event{Kind: EventPaired, Pairing: Pairing{Room: m.Room, Role: m.Role, Token: tok, ICEServers: m.ICE}}
	case TypePeerLeft:
		ev = Event{Kind: EventPeerLeft, Room: m.Room, Reason: m.Reason}
	case TypeOffer:
		ev = Event{Kind: EventOffer, SDP: m.SDP}
	case TypeAnswer:
		ev = Event{Kind: EventAnswer, SDP: m.SDP}
	case TypeCandidate:
		ev = Event{Kind: EventCandidate, Candidate: *m.Candidate}
	default:
		c.cfg.Logger.Debug("signaling client: ignoring message", "type", m.Type)
		return true
	}
	select {
	case c.events <- ev:
		return true
	default:
	}
	// The buffer is full: wait for Recv. Meanwhile nothing is read, so the
	// keepalive must not take missing pongs for a dead server.
	c.delivering.Store(true)
	defer func() {
		c.lastRecv.Store(time.Now().UnixNano())
		c.delivering.Store(false)
	}()
	select {
	case c.events <- ev:
		return true
	case <-c.ctx.Done():
		return false
	}
}

func (c *Client) keepAlive() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.KeepAlive)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.done:
			return
		case <-t.C:
		}
		if !c.delivering.Load() && time.Since(time.Unix(0, c.lastRecv.Load())) > 2*c.cfg.KeepAlive {
			c.setTerm(ErrServerUnresponsive)
			c.conn.CloseNow()
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.KeepAlive)
		err := c.send(ctx, &Message{Type: TypePing})
		cancel()
		if err != nil {
			c.cfg.Logger.Debug("signaling client: keepalive failed", "err", err)
		}
	}
}

// endpointURL turns a base URL into the URL of an endpoint. ws=true gives a
// ws/wss URL with the protocol version in the query, otherwise http/https.
func endpointURL(raw, defPath string, ws bool) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("signaling: bad server URL %q: %w", raw, err)
	}
	secure := false
	switch strings.ToLower(u.Scheme) {
	case "ws", "http":
	case "wss", "https":
		secure = true
	default:
		return "", fmt.Errorf("signaling: bad server URL %q: scheme must be ws, wss, http or https", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("signaling: bad server URL %q: no host", raw)
	}
	switch {
	case ws && secure:
		u.Scheme = "wss"
	case ws:
		u.Scheme = "ws"
	case secure:
		u.Scheme = "https"
	default:
		u.Scheme = "http"
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = defPath
	} else if !ws {
		// A relay URL derived from a WebSocket URL: swap the last element.
		if i := strings.LastIndexByte(u.Path, '/'); i >= 0 {
			u.Path = u.Path[:i] + defPath
		}
	}
	q := u.Query()
	q.Set("v", strconv.Itoa(ProtocolVersion))
	u.RawQuery = q.Encode()
	return u.String(), nil
}
