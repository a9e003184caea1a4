//go:build !js

package p2p

import (
	"crypto/ecdsa"
	"crypto/x509"
	"fmt"
	"net"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
)

// newPeerConnection makes the session's PeerConnection with pion's own
// stack, tuned through its SettingEngine (a browser's, in webrtc_js.go,
// has none of these knobs).
// checkFor stretches its ICE checking (see iceChecking).
func newPeerConnection(cfg *Config, id *identity, checkFor time.Duration) (*webrtc.PeerConnection, error) {
	se := webrtc.SettingEngine{}
	se.DetachDataChannels()
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.LoggerFactory = slogFactory{l: cfg.Logger}
	se.SetSCTPMaxReceiveBufferSize(sctpReceiveBuffer)
	// SCTP doubles its retransmission timeout on every expiry, up to 60 s
	// by default: after an outage of a few seconds the association would
	// stay quiet for as long again. The session detects dead paths itself,
	// so SCTP may keep trying every sctpRTOMax (below pion's 1 s minimum,
	// which it overrides).
	se.SetSCTPRTOMax(sctpRTOMax)
	se.SetSCTPMinCwnd(sctpMinCwnd)
	// SCTP's association handshake (INIT, INIT-ACK, COOKIE-ECHO,
	// COOKIE-ACK: two round trips after DTLS) is skipped when both
	// descriptions carry an sctp-init attribute (SNAP): each side's INIT
	// travels in its offer or answer. A peer without it (a browser today)
	// answers without one, and the handshake runs as before. On the bad
	// link the handshake cost a second or more, and pion gives it up after
	// eight retransmissions (4 s at sctpRTOMax): one PeerConnection whose
	// DTLS finished 6 s later on the answerer's side than on the
	// offerer's lost its association that way and had to be renegotiated.
	se.EnableSctpSnap(true)
	// ICE: a connected pair silent for iceDisconnected is disconnected,
	// and failed iceFailed later (pion's defaults, 5 s and 25 s, would
	// keep a dead PeerConnection for half a minute); an agent still
	// checking fails after both. Until then it keeps checking its pairs
	// (pion gives a pair up after 7 unanswered checks by default, 1.4 s,
	// and then waits idle), so a path that comes back is found within a
	// check interval. The session makes a new PeerConnection when one
	// fails (see Session.maybeRenewRTC).
	failed, checks := iceChecking(checkFor)
	se.SetICETimeouts(iceDisconnected, failed, iceKeepalive)
	se.SetICEMaxBindingRequests(checks)
	// The session owns the PeerConnection's life: when the peer's DTLS
	// closes, the data channel's reads end and the transport goes down;
	// the session closes the PeerConnection itself. (pion closing it from
	// its own goroutine at that moment races its SCTP accept loop for a
	// lock and stalls the close for 200 ms.)
	se.DisableCloseByDTLS(true)
	// DTLS retransmits a lost handshake flight after 1 s by default,
	// doubling each time: on a lossy link the handshake alone took
	// seconds. See dtlsRetransmit.
	se.SetDTLSRetransmissionInterval(dtlsRetransmit)
	// As the DTLS server, answer the first ClientHello with the
	// ServerHello rather than a HelloVerifyRequest: the cookie exchange
	// costs a round trip (and, on a lossy link, a retransmission timer
	// each time one of its two packets is lost) and guards against
	// spoofed sources, which ICE already keeps out: DTLS runs on the
	// selected candidate pair, whose address answered ICE's checks with
	// the credentials exchanged through the signaling server.
	se.SetDTLSInsecureSkipHelloVerify(true)
	if cfg.Net != nil {
		se.SetNet(cfg.Net)
	}
	switch {
	case cfg.Interfaces == InterfacesLoopback:
		se.SetIncludeLoopbackCandidate(true)
		se.SetInterfaceFilter(isLoopbackInterface)
		se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	case cfg.IncludeLoopback:
		se.SetIncludeLoopbackCandidate(true)
	}
	if cfg.InterfaceFilter != nil {
		se.SetInterfaceFilter(cfg.InterfaceFilter)
	}
	if cfg.UDP4Only {
		se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	}
	// Accept a peer-reflexive pair at once (pion waits 1 s by default):
	// a browser hides its host addresses behind mDNS names, which this
	// side does not resolve, so its candidates show up as peer-reflexive
	// and the connection would wait that long for nothing better.
	se.SetPrflxAcceptanceMinWait(0)
	se.SetHostAcceptanceMinWait(0)
	api := webrtc.NewAPI(webrtc.WithSettingEngine(se))
	var ice []webrtc.ICEServer
	for _, s := range cfg.ICEServers {
		ice = append(ice, webrtc.ICEServer{URLs: s.URLs, Username: s.Username, Credential: s.Credential})
	}
	pc, err := api.NewPeerConnection(webrtc.Configuration{ICEServers: ice, Certificates: []webrtc.Certificate{id.rtc}})
	if err != nil {
		return nil, fmt.Errorf("p2p: webrtc: new peer connection: %w", err)
	}
	return pc, nil
}

// iceCandidate is a trickled ICE candidate (RTCIceCandidateInit); an
// empty Candidate is the end of candidates.
type iceCandidate = webrtc.ICECandidateInit

// rtcCertificate is the session's key and certificate for pion's DTLS.
type rtcCertificate = webrtc.Certificate

func newRTCCertificate(key *ecdsa.PrivateKey, cert *x509.Certificate) rtcCertificate {
	return webrtc.CertificateFromX509(key, cert)
}

// watchSelectedPair records the types of the selected candidate pair.
func (t *rtcTransport) watchSelectedPair() {
	t.pc.SCTP().Transport().ICETransport().OnSelectedCandidatePairChange(func(p *webrtc.ICECandidatePair) {
		if p == nil {
			return
		}
		t.localCand.Store(uint32(candidateType(p.Local)))
		t.remoteCand.Store(uint32(candidateType(p.Remote)))
	})
}

// detach detaches an open data channel (SettingEngine.DetachDataChannels).
func detach(dc *webrtc.DataChannel) (datachannel.ReadWriteCloser, error) { return dc.Detach() }

// localSDP is the SDP sent to the peer for a local description: pion
// uses the session's certificate for DTLS, so its fingerprint already
// pins the relay's TLS.
func localSDP(sdp string, _ *identity) string { return sdp }

func candidateType(c *webrtc.ICECandidate) CandidateType {
	if c == nil {
		return CandidateUnknown
	}
	switch c.Typ {
	case webrtc.ICECandidateTypeHost:
		return CandidateHost
	case webrtc.ICECandidateTypeSrflx:
		return CandidateSrflx
	case webrtc.ICECandidateTypePrflx:
		return CandidatePrflx
	case webrtc.ICECandidateTypeRelay:
		return CandidateRelay
	}
	return CandidateUnknown
}

// descGatherWait: natively pion gathers host candidates within a
// millisecond or two of SetLocalDescription, so offers and answers wait up
// to this long to carry them (see withCandidates): a browser peer then
// needs no step on its page's thread per trickled candidate.
const descGatherWait = 20 * time.Millisecond

// earlyOffers: natively Connect sends a spare early offer
// (signaling.Client.SetSpareOffer) unless the server hands out TURN
// servers, which it could not carry. A Go answerer answers within
// milliseconds of the offer, so between Go players the usual roles hold,
// and a browser, whose offer is not spare, offers to a Go player (see
// signaling's Roles). The offerer's early offer goes to the answerer with
// paired: on a lossy link the two messages it saves through the server
// (paired to the offerer, then its offer) took 0.6 to 4.7 s.
const earlyOffers = offerSpare

// relayTLSDefer: natively the relay's TLS handshake does not wait for the
// session to run (see the browser's, in webrtc_js.go).
const (
	relayTLSDefer      = 0
	relayTLSAfterSetup = 0
)

// setupDone: natively nothing waits for WebRTC's setup (see
// relayTLSDefer); a nil channel.
func (t *rtcTransport) setupDone() <-chan struct{} { return nil }
