package p2p

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// Relay re-dial backoff: the first retry after relayRetryMin, doubling up
// to relayRetryMax, so a relay that drops, or a signaling server that
// restarts, is back within about relayRetryMax of answering again.
const (
	relayRetryMin = 100 * time.Millisecond
	relayRetryMax = time.Second
)

// relayLoop dials the relay, runs the session over it until it ends, and
// dials again (with backoff) until the session ends or the peer turns out
// to have no relay. Each attempt is bounded by Config.TCPTimeout.
func (s *Session) relayLoop(ctx context.Context, dial func(context.Context) (net.Conn, error)) {
	defer s.life.wg.Done()
	backoff := relayRetryMin
	for ctx.Err() == nil {
		t, err := s.dialRelay(ctx, dial)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.onDown(TransportTCP, err)
			s.log.Debug("p2p: relay dial failed", "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, relayRetryMax)
			continue
		}
		backoff = relayRetryMin
		s.mu.Lock()
		if s.phase == phaseEnded {
			s.mu.Unlock()
			_ = t.close()
			return
		}
		s.tr.tcp.Store(t)
		s.mu.Unlock()
		s.onUp(TransportTCP) // before reading, so that replies have a link
		t.start()
		select {
		case <-t.done:
		case <-ctx.Done():
			return // teardown closes it
		}
		_ = t.close()
		select {
		case <-ctx.Done():
			return
		case <-time.After(relayRetryMin):
		}
	}
}

// dialRelay dials the relay and runs its TLS handshake, once the peer's
// fingerprint is known.
func (s *Session) dialRelay(ctx context.Context, dial func(context.Context) (net.Conn, error)) (*tcpTransport, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TCPTimeout)
	defer cancel()
	raw, err := dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("p2p: tcp relay: %w", err)
	}
	select {
	case <-s.sig.pinned:
	case <-ctx.Done():
		raw.Close()
		return nil, fmt.Errorf("p2p: tcp relay: the peer's fingerprint did not arrive: %w", ctx.Err())
	}
	if relayTLSDefer > 0 {
		t := time.NewTimer(relayTLSDefer)
		var setup <-chan struct{}
		if rtc := s.tr.rtc.Load(); rtc != nil {
			setup = rtc.setupDone()
		}
		select {
		case <-s.life.ready:
		case <-t.C:
		case <-setup:
			after := time.NewTimer(relayTLSAfterSetup)
			select {
			case <-s.life.ready:
			case <-after.C:
			case <-t.C:
			case <-ctx.Done():
			}
			after.Stop()
		case <-ctx.Done():
		}
		t.Stop()
	}
	peerFP := s.sig.fingerprint()
	tc, err := relayTLS(ctx, raw, s.pol.leader(), s.sig.id, peerFP)
	if err != nil {
		raw.Close()
		if isTLSFailure(err) || errors.Is(err, errPeerCertificate) {
			err = fmt.Errorf("%w: %w", errRelayRejected, err)
		}
		return nil, err
	}
	return newTCPTransport(tc, raw, s.cfg.MaxMessageSize, s), nil
}
