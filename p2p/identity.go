package p2p

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// The session's identity and the relay's security: see "Security" in
// the package doc.

// identity is a session's key and certificate.
type identity struct {
	rtc rtcCertificate // the key and certificate as WebRTC takes them (none in a browser)
	tls tls.Certificate
	fp  []byte // SHA-256 of the certificate (DER)
}

func newIdentity() (*identity, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("p2p: generating the session key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("p2p: generating the session certificate: %w", err)
	}
	now := time.Now()
	tpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "ragsync session"},
		NotBefore:    now.Add(-24 * time.Hour),
		NotAfter:     now.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("p2p: generating the session certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("p2p: generating the session certificate: %w", err)
	}
	sum := sha256.Sum256(der)
	return &identity{
		rtc: newRTCCertificate(key, cert),
		tls: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert},
		fp:  sum[:],
	}, nil
}

// fingerprintLine formats fp as an SDP fingerprint attribute value.
func fingerprintLine(fp []byte) string {
	h := strings.ToUpper(hex.EncodeToString(fp))
	var b strings.Builder
	b.WriteString("sha-256 ")
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// errNoFingerprint: an SDP without a sha-256 fingerprint.
var errNoFingerprint = errors.New("p2p: the peer's SDP has no sha-256 fingerprint")

// tlsFingerprintAttr is the SDP attribute of a peer whose DTLS
// certificate is not its session certificate (a browser's, which the
// browser generates): it carries the fingerprint that pins the relay's
// TLS, and takes precedence over the DTLS fingerprint for that.
const tlsFingerprintAttr = "a=ragsync-tls-fingerprint:"

// addTLSFingerprint adds tlsFingerprintAttr with fp to the session part
// of sdp (after its t= line).
func addTLSFingerprint(sdp string, fp []byte) string {
	line := tlsFingerprintAttr + fingerprintLine(fp) + "\r\n"
	i := strings.Index(sdp, "\nt=")
	if i < 0 {
		return sdp + line
	}
	j := strings.IndexByte(sdp[i+1:], '\n')
	if j < 0 {
		return sdp + "\r\n" + line
	}
	at := i + 1 + j + 1
	return sdp[:at] + line + sdp[at:]
}

// sdpFingerprint returns the fingerprint that pins the relay's TLS: the
// one of tlsFingerprintAttr if the SDP has it, else the sha-256 DTLS
// fingerprint (the session level one, or the first media level one).
// Every one of a kind it carries must be the same.
func sdpFingerprint(sdp string) ([]byte, error) {
	var fp, tfp []byte
	for line := range strings.Lines(sdp) {
		line = strings.TrimRight(line, "\r\n")
		v, ok := strings.CutPrefix(line, "a=fingerprint:")
		dst := &fp
		if !ok {
			if v, ok = strings.CutPrefix(line, tlsFingerprintAttr); !ok {
				continue
			}
			dst = &tfp
		}
		alg, val, ok := strings.Cut(v, " ")
		if !ok || !strings.EqualFold(alg, "sha-256") {
			continue
		}
		b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(val), ":", ""))
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("p2p: bad fingerprint in the peer's SDP: %q", truncateStr(v, 120))
		}
		if *dst != nil && !bytes.Equal(*dst, b) {
			return nil, errors.New("p2p: the peer's SDP carries two different fingerprints")
		}
		*dst = b
	}
	if tfp != nil {
		return tfp, nil
	}
	if fp == nil {
		return nil, errNoFingerprint
	}
	return fp, nil
}

// relayOnlyName is the session name of an SDP that only carries a
// fingerprint: its sender has WebRTC disabled.
const relayOnlyName = "s=ragsync-relay-only"

// relayOnlySDP is the SDP a peer without WebRTC sends: no media, only the
// certificate fingerprint that pins the relay's TLS.
func relayOnlySDP(fp []byte) string {
	return "v=0\r\no=- 0 0 IN IP4 0.0.0.0\r\n" + relayOnlyName + "\r\nt=0 0\r\na=fingerprint:" + fingerprintLine(fp) + "\r\n"
}

// isRelayOnlySDP reports whether sdp came from a peer without WebRTC.
func isRelayOnlySDP(sdp string) bool {
	for line := range strings.Lines(sdp) {
		if strings.TrimRight(line, "\r\n") == relayOnlyName {
			return true
		}
	}
	return false
}

func truncateStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// errPeerCertificate: the relay's TLS peer presented a certificate whose
// fingerprint is not the pinned one.
var errPeerCertificate = errors.New("p2p: relay: the peer's certificate does not match its fingerprint")

// relayTLS runs the relay's TLS 1.3 handshake over conn: the offerer
// (client) as the TLS client, both presenting id's certificate and
// accepting only a peer certificate with fingerprint peerFP.
func relayTLS(ctx context.Context, conn net.Conn, client bool, id *identity, peerFP []byte) (*tls.Conn, error) {
	verify := func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errPeerCertificate
		}
		sum := sha256.Sum256(raw[0])
		if !bytes.Equal(sum[:], peerFP) {
			return errPeerCertificate
		}
		return nil
	}
	cfg := &tls.Config{
		MinVersion:            tls.VersionTLS13,
		Certificates:          []tls.Certificate{id.tls},
		VerifyPeerCertificate: verify,
		// The peer is authenticated by its pinned fingerprint, not by a
		// certificate authority.
		InsecureSkipVerify: true,
		ClientAuth:         tls.RequireAnyClientCert,
		ServerName:         "ragsync-session",
	}
	var tc *tls.Conn
	if client {
		tc = tls.Client(conn, cfg)
	} else {
		tc = tls.Server(conn, cfg)
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("p2p: relay TLS handshake: %w", err)
	}
	return tc, nil
}

// isTLSFailure reports whether err (from reading a relay stream) is the TLS
// layer refusing what arrived: a record that failed to authenticate (a
// forged, altered or replayed frame), a malformed record, or an alert.
func isTLSFailure(err error) bool {
	var rh tls.RecordHeaderError
	var al tls.AlertError
	if errors.As(err, &rh) || errors.As(err, &al) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "local error" || strings.Contains(err.Error(), "tls: ")
}
