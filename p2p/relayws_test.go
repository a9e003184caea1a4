package p2p

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ragsync/ragsync/internal/clockwire"
	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/p2p/internal/wire"
)

// TestSessionWebSocketRelay: a peer on the WebSocket relay (as a browser
// is) plays with a peer on the raw relay, and with another on the
// WebSocket relay; the server joins the streams, and the TLS inside,
// pinned to the fingerprints, works across them.
func TestSessionWebSocketRelay(t *testing.T) {
	for _, tc := range []struct {
		name       string
		offWS, ans bool
	}{
		{"offerer websocket, answerer raw", true, false},
		{"offerer raw, answerer websocket", false, true},
		{"both websocket", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaktest.Check(t)
			url := startSignaling(t)
			cfg := func(ws bool) Config {
				return cfgWith(func(c *Config) { c.DisableWebRTC, c.RelayWebSocket = true, ws })
			}
			a, b := pairByRoom(t, url, cfg(tc.offWS), cfg(tc.ans))
			for _, s := range []*Session{a, b} {
				if st := s.Stats(); st.Transport != TransportTCP {
					t.Errorf("%v on %v, want the relay (%s)", s.Role(), st.Transport, st.ChoiceReason)
				}
			}
			if a.Stats().RelayWebSocket != tc.offWS || b.Stats().RelayWebSocket != tc.ans {
				t.Errorf("Stats.RelayWebSocket %v/%v, want %v/%v", a.Stats().RelayWebSocket, b.Stats().RelayWebSocket, tc.offWS, tc.ans)
			}
			gotA, gotB := exchange(t, a, b, 200)
			if gotA < 190 || gotB < 190 {
				t.Errorf("received %d and %d of 200 over the relay", gotA, gotB)
			}
			if r := a.Stats().RelayRejected + b.Stats().RelayRejected; r != 0 {
				t.Errorf("%d relay streams rejected", r)
			}
		})
	}
}

// TestTLSFingerprintAttr: a browser's SDP carries the session
// certificate's fingerprint in a=ragsync-tls-fingerprint, which pins the
// relay instead of the browser's own DTLS fingerprint.
func TestTLSFingerprintAttr(t *testing.T) {
	dtls, err := newIdentity()
	if err != nil {
		t.Fatal(err)
	}
	sess, err := newIdentity()
	if err != nil {
		t.Fatal(err)
	}
	sdp := "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\na=fingerprint:" + fingerprintLine(dtls.fp) + "\r\n"
	fp, err := sdpFingerprint(sdp)
	if err != nil || !bytes.Equal(fp, dtls.fp) {
		t.Fatalf("plain SDP: fingerprint %x, %v; want the DTLS one", fp, err)
	}
	withTLS := addTLSFingerprint(sdp, sess.fp)
	if !strings.Contains(withTLS, "t=0 0\r\na=ragsync-tls-fingerprint:sha-256 ") {
		t.Fatalf("attribute not in the session part:\n%s", withTLS)
	}
	fp, err = sdpFingerprint(withTLS)
	if err != nil || !bytes.Equal(fp, sess.fp) {
		t.Fatalf("browser SDP: fingerprint %x, %v; want the session one", fp, err)
	}
	two := addTLSFingerprint(withTLS, dtls.fp)
	if _, err := sdpFingerprint(two); err == nil {
		t.Fatal("two different TLS fingerprints accepted")
	}
}

// TestLeaderPongWithoutGameTime: a leader whose pongs carry no game time
// (a third-party client's mistake) is reported in Stats, not ignored.
func TestLeaderPongWithoutGameTime(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		_, b := newPipeSessions(t, testConfig())
		pong := clockwire.AppendPong(wire.AppendHeader(nil, wire.Header{Type: wire.MsgPong}), clockwire.Pong{Seq: 1, T1: 1, T2: 2, T3: 3, Leader: true})
		b.onMessage(TransportTCP, pong)
		st := b.Stats()
		if st.PeerProtocolErrors != 1 || !strings.Contains(st.LastPeerProtocolError, "no game time") {
			t.Fatalf("PeerProtocolErrors %d, last %q; want the missing game time reported", st.PeerProtocolErrors, st.LastPeerProtocolError)
		}
	})
}
