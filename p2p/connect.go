package p2p

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/pion/webrtc/v4"

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
// both Connect with it, in either order (the creator is the offerer). It returns when the session has chosen its first transport:
// the offerer after probing, the answerer when the offerer's choice arrives.
// ctx bounds the whole of it; the session itself lives until Close or a
// disconnect.
//
// Errors: ErrBadConfig, the signaling client's errors (an unreachable
// server, signaling.ErrBadRoomCode, ErrRoomFull, ...), ErrNoTransport when
// neither transport reached the peer, or ctx.Err().
func Connect(ctx context.Context, signalingURL, room string, cfg Config) (*Session, error) {
	c, err := cfg.withDefaults(signalingURL)
	if err != nil {
		return nil, err
	}
	cl, err := signaling.Dial(ctx, signalingURL, c.Signaling)
	if err != nil {
		return nil, err
	}
	if room == QuickMatch {
		err = cl.QuickMatch(ctx)
	} else {
		_, err = cl.JoinOrCreateRoom(ctx, room)
	}
	if err != nil {
		cl.Close()
		return nil, err
	}
	return connectPaired(ctx, cl, signalingURL, c)
}

// Room is a private room created with CreateRoom, waiting for the second
// player.
type Room struct {
	code signaling.RoomCode
	url  string
	cfg  Config
	cl   *signaling.Client

	mu   sync.Mutex
	used bool
}

// CreateRoom creates a private room on the signaling server and returns
// it; give Code to the other player, who passes it to Connect. Then call
// Room.Connect to wait for them. The creator is the offerer.
func CreateRoom(ctx context.Context, signalingURL string, cfg Config) (*Room, error) {
	c, err := cfg.withDefaults(signalingURL)
	if err != nil {
		return nil, err
	}
	cl, err := signaling.Dial(ctx, signalingURL, c.Signaling)
	if err != nil {
		return nil, err
	}
	code, err := cl.CreateRoom(ctx)
	if err != nil {
		cl.Close()
		return nil, err
	}
	return &Room{code: code, url: signalingURL, cfg: c, cl: cl}, nil
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
	return connectPaired(ctx, r.cl, r.url, r.cfg)
}

// Close gives up the room if Connect was not called.
func (r *Room) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.used {
		return nil
	}
	r.used = true
	return r.cl.Close()
}

// connectPaired waits for the pairing on cl, then builds the session. It
// owns cl: on error it closes it, on success the session does.
func connectPaired(ctx context.Context, cl *signaling.Client, url string, cfg Config) (*Session, error) {
	var pairing signaling.Pairing
	var early []signaling.Event // negotiation that raced ahead of us (none expected)
	for pairing.Role == signaling.RoleUnknown {
		ev, err := cl.Recv(ctx)
		if err != nil {
			cl.Close()
			return nil, err
		}
		switch ev.Kind {
		case signaling.EventPaired:
			pairing = ev.Pairing
		case signaling.EventError:
			cfg.Logger.Debug("p2p: signaling error while waiting for a peer", "err", ev.Err)
		case signaling.EventOffer, signaling.EventCandidate:
			early = append(early, ev)
		}
	}
	sig := &clientSignaler{cl: cl}
	p := sessionParams{
		cfg:  cfg,
		role: pairing.Role,
		room: string(pairing.Room),
		sig:  sig,
		dialTCP: func(ctx context.Context) (net.Conn, error) {
			return signaling.DialRelay(ctx, url, pairing.Token, relayClientConfig(cfg))
		},
		closeSig: func() { cl.Close() },
	}
	s, err := newSession(p)
	if err != nil {
		cl.Close()
		return nil, err
	}
	s.wg.Add(1)
	go s.pumpSignaling(cl, early)
	if err := s.waitReady(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// relayClientConfig is the signaling client configuration DialRelay gets:
// with Config.RelayDialer, an HTTP client whose transport dials with it
// (keeping the TLS configuration of Config.Signaling's).
func relayClientConfig(cfg Config) signaling.ClientConfig {
	cc := cfg.Signaling
	if cfg.RelayDialer == nil {
		return cc
	}
	tr := &http.Transport{DialContext: cfg.RelayDialer}
	if cc.HTTPClient != nil {
		if t, ok := cc.HTTPClient.Transport.(*http.Transport); ok {
			tr.TLSClientConfig = t.TLSClientConfig
		}
	}
	cc.HTTPClient = &http.Client{Transport: tr}
	return cc
}

// clientSignaler sends WebRTC negotiation through the signaling client.
type clientSignaler struct{ cl *signaling.Client }

func (c *clientSignaler) sendOffer(ctx context.Context, sdp string) error {
	return c.cl.SendOffer(ctx, sdp)
}

func (c *clientSignaler) sendAnswer(ctx context.Context, sdp string) error {
	return c.cl.SendAnswer(ctx, sdp)
}

func (c *clientSignaler) sendCandidate(ctx context.Context, ci webrtc.ICECandidateInit) error {
	return c.cl.SendCandidate(ctx, signaling.Candidate{
		Candidate:        ci.Candidate,
		SDPMid:           ci.SDPMid,
		SDPMLineIndex:    ci.SDPMLineIndex,
		UsernameFragment: ci.UsernameFragment,
	})
}

// pumpSignaling feeds the peer's negotiation messages to the WebRTC
// transport until the signaling connection ends (the session closes it on
// teardown). The signaling server going away does not end the session:
// the transports do not need it once connected.
func (s *Session) pumpSignaling(cl *signaling.Client, early []signaling.Event) {
	defer s.wg.Done()
	for _, ev := range early {
		s.signalEvent(cl, ev)
	}
	for {
		ev, err := cl.Recv(s.ctx)
		if err != nil {
			if s.ctx.Err() == nil && !errors.Is(err, signaling.ErrClosed) {
				s.log.Info("p2p: signaling connection ended; the session goes on", "err", err)
			}
			return
		}
		s.signalEvent(cl, ev)
	}
}

func (s *Session) signalEvent(cl *signaling.Client, ev signaling.Event) {
	switch ev.Kind {
	case signaling.EventOffer:
		ctx, cancel := context.WithTimeout(s.ctx, signalTimeout)
		if err := s.handleOffer(ctx, ev.SDP); err != nil {
			s.log.Warn("p2p: the peer's offer", "err", err)
		}
		cancel()
	case signaling.EventAnswer:
		if err := s.handleAnswer(ev.SDP); err != nil {
			s.log.Warn("p2p: the peer's answer", "err", err)
		}
	case signaling.EventCandidate:
		c := ev.Candidate
		s.handleCandidate(webrtc.ICECandidateInit{
			Candidate:        c.Candidate,
			SDPMid:           c.SDPMid,
			SDPMLineIndex:    c.SDPMLineIndex,
			UsernameFragment: c.UsernameFragment,
		})
	case signaling.EventPeerLeft:
		// The peer's signaling connection ended. Its transports may well
		// still work (the liveness timeout decides), but leave the room so
		// the server does not pair us with a stranger.
		s.log.Info("p2p: peer left the signaling server", "reason", ev.Reason)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.TCPTimeout)
			defer cancel()
			_ = cl.Leave(ctx)
		}()
	case signaling.EventPaired:
		// A new player in our room after the peer left: not ours.
		s.log.Info("p2p: ignoring a new pairing during the session")
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.TCPTimeout)
			defer cancel()
			_ = cl.Leave(ctx)
		}()
	case signaling.EventError:
		s.log.Debug("p2p: signaling error", "err", ev.Err)
	}
}
