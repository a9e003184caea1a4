package p2p

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragsync/ragsync/signaling"
)

// QuickMatch as the room of Connect pairs with the next player who is also
// looking for a quick match.
const QuickMatch = ""

// Connect pairs with a peer through the signaling server at signalingURL
// (http://, https://, ws:// or wss://) and returns a connected session. room
// is QuickMatch, or a room code: the room is joined if it exists (created by
// the other player, with CreateRoom or with Connect and the same code) and
// created with that code otherwise, so two players who agreed on a code can
// both Connect with it, in either order (the creator is the offerer, but
// in a browser Connect brings an early offer, which makes it the offerer
// against a Go player; see In a browser). It returns when the session has
// chosen its first transport:
// the offerer after probing, the answerer when the offerer's choice arrives.
// ctx bounds the whole of it; the session itself lives until Close or a
// disconnect.
//
// Nothing gives up while time remains: a failed dial of the signaling
// server, or a signaling connection lost before the pairing, is tried
// again with backoff until ctx ends (30 s without a connection if ctx has
// no deadline), and once paired the session waits for a transport that
// is slow to open, and the offerer probes the open transports again when
// every probe was lost, until twice its longest transport timeout after
// the pairing (20 s), or until a second before ctx ends if that is later. A peer that gives up before the match starts (it left the
// signaling server) ends this Connect at once with ErrDisconnected.
//
// Errors: ErrBadConfig, the signaling client's errors (an unreachable
// server, signaling.ErrBadRoomCode, ErrRoomFull, ...), ErrNoTransport when
// neither transport reached the peer, ErrDisconnected when the peer gave
// up, or ctx.Err().
//
// With Config.Resume (a seat token from Session.SeatToken), Connect takes
// back this player's seat in the match the token names instead of joining
// room (see Resuming a match).
func Connect(ctx context.Context, signalingURL, room string, cfg Config) (*Session, error) {
	kind := earlyOffers
	if cfg.Resume != "" {
		kind = offerNone
	}
	return connect(ctx, signalingURL, room, cfg, defaultPlan(kind))
}

// offerKind is the early offer Connect and CreateRoom send with the join
// (see earlyOffers).
type offerKind uint8

const (
	offerNone  offerKind = iota
	offerSpare           // signaling.Client.SetSpareOffer, unless the server has TURN
	offerFull            // signaling.Client.SetOffer
)

// connect is Connect, with an early offer of kind sent with the join
// (see earlyOffers). A failed dial of the signaling server, or a
// signaling connection lost before the pairing (a lossy link, a server
// restarting), is retried with backoff (dialRetryMin doubling to
// dialRetryMax) until ctx ends, or, if ctx has no deadline, until
// dialRetryFor has passed without a connection; what the server refuses
// (a *signaling.Error: a full room, a bad code, ...) is not retried.
func connect(ctx context.Context, signalingURL, room string, cfg Config, early earlyPlan) (*Session, error) {
	c, err := cfg.withDefaults(signalingURL)
	if err != nil {
		return nil, err
	}
	backoff, failingSince := dialRetryMin, time.Time{}
	for attempt := 1; ; attempt++ {
		cl, id, po, err := dialOffering(ctx, signalingURL, c, early)
		if err == nil {
			nudge := startNudging(cl)
			po.withJoin(cl) // if it came meanwhile
			switch {
			case c.Resume != "":
				err = rejoinSeat(ctx, cl, c.Resume)
			case room == QuickMatch:
				err = cl.QuickMatch(ctx)
			default:
				_, err = cl.JoinOrCreateRoom(ctx, room)
			}
			var pairing signaling.Pairing
			var pre []signaling.Event
			if err == nil {
				failingSince, backoff = time.Time{}, dialRetryMin
				po.sendLate(ctx, cl, c.Logger)
				pairing, pre, err = waitPairing(ctx, cl, c, po)
			}
			if err == nil {
				nudge.setPaired()
				s, err := newPairedSession(ctx, cl, signalingURL, c, id, po, pairing, pre)
				nudge.stop()
				return s, err
			}
			nudge.stop()
			po.discard()
			cl.Close()
		}
		if failingSince.IsZero() {
			failingSince = time.Now()
		}
		if !retrySignaling(ctx, err, failingSince) {
			return nil, err
		}
		c.Logger.Info("p2p: signaling failed before the pairing; trying again", "err", err, "attempt", attempt, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, dialRetryMax)
	}
}

// Retries of the signaling server before the pairing (see connect).
const (
	dialRetryMin = 250 * time.Millisecond
	dialRetryMax = 2 * time.Second
	dialRetryFor = 30 * time.Second
)

// retrySignaling reports whether err, a failure to reach the signaling
// server or to stay connected to it before the pairing, is worth another
// try: not a refusal by the server, not the end of ctx, not a URL that
// can never work, and time remains.
func retrySignaling(ctx context.Context, err error, failingSince time.Time) bool {
	var se *signaling.Error
	var ue *url.Error
	switch {
	case ctx.Err() != nil, errors.As(err, &se), errors.Is(err, signaling.ErrBadRoomCode), errors.Is(err, ErrSeatLost):
		return false
	case errors.As(err, &ue) && ue.Op == "parse":
		return false
	}
	if _, ok := ctx.Deadline(); ok {
		return true
	}
	return time.Since(failingSince) < dialRetryFor
}

// Room is a private room created with CreateRoom, waiting for the second
// player.
type Room struct {
	code  signaling.RoomCode
	url   string
	cfg   Config
	cl    *signaling.Client
	id    func() (*identity, error)
	early *pendingOffer // the early offer (nil: none)

	mu   sync.Mutex
	used bool
}

// CreateRoom creates a private room on the signaling server and returns
// it; give Code to the other player, who passes it to Connect. Then call
// Room.Connect to wait for them. The creator is the offerer, unless only
// the joiner brings an early offer (a browser against a Go creator; see
// In a browser).
func CreateRoom(ctx context.Context, signalingURL string, cfg Config) (*Room, error) {
	c, err := cfg.withDefaults(signalingURL)
	if err != nil {
		return nil, err
	}
	cl, id, early, err := dialOffering(ctx, signalingURL, c, defaultPlan(earlyOffers))
	if err != nil {
		return nil, err
	}
	early.withJoin(cl)
	code, err := cl.CreateRoom(ctx)
	if err != nil {
		early.discard()
		cl.Close()
		return nil, err
	}
	early.sendLate(context.Background(), cl, c.Logger)
	return &Room{code: code, url: signalingURL, cfg: c, cl: cl, id: id, early: early}, nil
}

// Code returns the room code.
func (r *Room) Code() string { return string(r.code) }

// Connect waits for the other player to join, then connects as Connect
// does. It can be called once; the Room is consumed whether it succeeds or
// not.
func (r *Room) Connect(ctx context.Context) (*Session, error) {
	r.mu.Lock()
	if r.used {
		r.mu.Unlock()
		return nil, fmt.Errorf("p2p: room %s: Connect called twice or after Close", r.code)
	}
	r.used = true
	r.mu.Unlock()
	return connectPaired(ctx, r.cl, r.url, r.cfg, r.id, r.early)
}

// Close gives up the room if Connect was not called.
func (r *Room) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.used {
		return nil
	}
	r.used = true
	r.early.discard()
	return r.cl.Close()
}

// connectPaired waits for the pairing on cl, then builds the session. It
// owns cl and offer (the early offer, made or being made, or nil): on
// error it closes them, on success the session does.
func connectPaired(ctx context.Context, cl *signaling.Client, url string, cfg Config, id func() (*identity, error), offer *pendingOffer) (*Session, error) {
	nudge := startNudging(cl)
	defer nudge.stop()
	pairing, early, err := waitPairing(ctx, cl, cfg, offer)
	if err != nil {
		offer.discard()
		cl.Close()
		return nil, err
	}
	nudge.setPaired()
	return newPairedSession(ctx, cl, url, cfg, id, offer, pairing, early)
}

// waitPairing waits for the pairing on cl; it returns the negotiation
// that raced ahead of it too (none expected). An error about offer
// before it is the refusal of offer's late early offer.
func waitPairing(ctx context.Context, cl *signaling.Client, cfg Config, offer *pendingOffer) (signaling.Pairing, []signaling.Event, error) {
	var pairing signaling.Pairing
	var early []signaling.Event
	for pairing.Role == signaling.RoleUnknown {
		ev, err := cl.Recv(ctx)
		if err != nil {
			return pairing, nil, err
		}
		switch ev.Kind {
		case signaling.EventPaired:
			pairing = ev.Pairing
		case signaling.EventError:
			cfg.Logger.Debug("p2p: signaling error while waiting for a peer", "err", ev.Err)
			if ev.Err.Ref == signaling.TypeOffer {
				offer.refusedLate()
			}
		case signaling.EventOffer, signaling.EventCandidate:
			early = append(early, ev)
		case signaling.EventPeerLeft:
			if cfg.Resume != "" && ev.Reason != "dropped" {
				// The rival's seat expired (or it left) while we waited
				// for it to come back: the match is over.
				// (The caller closes the client and the early offer.)
				return pairing, nil, fmt.Errorf("%w: the rival did not come back (%s)", ErrSeatLost, ev.Reason)
			}
		}
	}
	return pairing, early, nil
}

// newPairedSession builds the session of pairing on cl and waits until it
// runs. It owns cl and po as connectPaired does.
func newPairedSession(ctx context.Context, cl *signaling.Client, url string, cfg Config, id func() (*identity, error), po *pendingOffer, pairing signaling.Pairing, early []signaling.Event) (*Session, error) {
	delivered := po.setPaired()
	var offer *earlyOffer
	if pairing.Role != signaling.RoleOfferer {
		// The peer offers (its own early offer, or one it makes now).
		po.discard()
	} else if po != nil {
		// The early offer is this session's PeerConnection, even one
		// still being made: a second one would only compete with it.
		offer = po.wait(ctx, earlyOfferFor)
		if offer == nil {
			po.discard()
		} else {
			offer.delivered = delivered
		}
	}
	// The STUN/TURN servers the signaling server offers for this pairing
	// (its embedded TURN), unless the configuration names its own. An
	// early offer was made without them: they serve if WebRTC is
	// renegotiated.
	if cfg.ICEServers == nil {
		cfg.ICEServers = append(cfg.ICEServers, pairing.ICEServers...)
	}
	cfg.Logger.Debug("p2p: paired", "room", pairing.Room, "role", pairing.Role.String(), "early_offer", offer != nil, "delivered", offer != nil && delivered)
	ident, err := id()
	if err != nil {
		offer.close()
		cl.Close()
		return nil, err
	}
	sig := &sigLink{url: url, cfg: cfg.Signaling, token: pairing.Token, room: pairing.Room, role: pairing.Role}
	sig.cl.Store(cl)
	var s *Session
	p := sessionParams{
		cfg:  cfg,
		role: pairing.Role,
		room: string(pairing.Room),
		sig:  sig,
		dialTCP: func(ctx context.Context) (net.Conn, error) {
			if cfg.RelayWebSocket {
				return signaling.DialRelayWebSocket(ctx, url, pairing.Token, relayClientConfig(cfg))
			}
			return signaling.DialRelay(ctx, url, pairing.Token, relayClientConfig(cfg))
		},
		// A session that ended because the peer is away leaves its seat
		// as a dropped connection does, so both can take theirs back.
		closeSig: func() { sig.close(s != nil && errors.Is(s.life.endErr, ErrPeerAway)) },
		id:       ident,
		early:    offer,
	}
	if cfg.Net == nil && !cfg.DisableWebRTC {
		p.localAddrs = net.InterfaceAddrs
	}
	if d, ok := ctx.Deadline(); ok {
		p.connectFor = time.Until(d)
	}
	s, err = newSession(p)
	if err != nil {
		offer.close()
		cl.Close()
		return nil, err
	}
	s.seat, s.resumed = string(pairing.Token), cfg.Resume != ""
	cfg.Logger.Debug("p2p: session made")
	s.life.wg.Add(1)
	go s.pumpSignaling(sig, early)
	if err := s.life.waitReady(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// prepareIdentity makes the session's key and certificate in the
// background while the player waits for a peer, and returns the function
// that waits for them. In a browser the first key costs a few hundred
// milliseconds (the P-256 tables are built then), which would otherwise
// delay the answer to the peer's offer.
func prepareIdentity() func() (*identity, error) {
	type result struct {
		id  *identity
		err error
	}
	ch := make(chan result, 1)
	go func() {
		id, err := newIdentity()
		ch <- result{id, err}
	}()
	return sync.OnceValues(func() (*identity, error) {
		r := <-ch
		return r.id, r.err
	})
}

// dialOffering connects to the signaling server while the session's key,
// and an early offer of kind early (see earlyOffers), are made, and waits
// for the offer at most early.wait since it started; the caller hands
// it to the join (pendingOffer.withJoin), or sends it late. A spare offer
// is dropped if the server hands out TURN servers, which it could not
// carry.
func dialOffering(ctx context.Context, url string, cfg Config, early earlyPlan) (*signaling.Client, func() (*identity, error), *pendingOffer, error) {
	id := prepareIdentity()
	start := time.Now()
	po := startEarlyOffer(ctx, cfg, id, early)
	cl, err := signaling.Dial(ctx, url, cfg.Signaling)
	if err != nil {
		po.discard()
		return nil, nil, nil, err
	}
	if early.kind == offerSpare && cl.TURN() {
		// The pairing brings TURN servers the offer could not carry: the
		// offerer makes its offer with them after paired.
		po.discard()
		po = nil
	}
	if po.wait(ctx, early.wait-time.Since(start)); po != nil && !po.made() {
		cfg.Logger.Info("p2p: joining before the early offer is ready: it follows when it is", "waited", time.Since(start))
	}
	return cl, id, po, nil
}

// sigLink is the session's signaling connection. It stays open for the
// whole match (the peers renegotiate WebRTC over it) and, when it drops
// (a network blip, a server restart), the session connects again and
// takes its place back in the pairing with its relay token
// (signaling.Client.Rejoin).
type sigLink struct {
	url   string
	cfg   signaling.ClientConfig
	token signaling.RelayToken
	room  signaling.RoomCode
	role  signaling.Role

	cl     atomic.Pointer[signaling.Client]
	mu     sync.Mutex
	closed bool
}

func (l *sigLink) sendOffer(ctx context.Context, sdp string) error {
	return l.cl.Load().SendOffer(ctx, sdp)
}

func (l *sigLink) sendAnswer(ctx context.Context, sdp string) error {
	return l.cl.Load().SendAnswer(ctx, sdp)
}

func (l *sigLink) sendCandidate(ctx context.Context, ci iceCandidate) error {
	return l.cl.Load().SendCandidate(ctx, signaling.Candidate{
		Candidate:        ci.Candidate,
		SDPMid:           ci.SDPMid,
		SDPMLineIndex:    ci.SDPMLineIndex,
		UsernameFragment: ci.UsernameFragment,
	})
}

// swap makes cl the connection in use and closes the previous one; false
// if the link is closed (cl is closed too).
func (l *sigLink) swap(cl *signaling.Client) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		cl.Close()
		return false
	}
	old := l.cl.Swap(cl)
	l.mu.Unlock()
	old.Close()
	return true
}

// close closes the connection: as a dropped one if away (the server keeps
// the seat; see signaling.Client.Drop).
func (l *sigLink) close(away bool) {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	if away {
		l.cl.Load().Drop()
		return
	}
	l.cl.Load().Close()
}
