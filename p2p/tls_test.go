package p2p

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling/server"
)

// selfSigned returns a TLS certificate for 127.0.0.1 and a pool that
// trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "signal.test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, pool
}

// TestSignalingOverTLS: with an https:// signaling URL, pairing (wss://)
// and the relay (TLS to the server, then the peers' own TLS inside it)
// work end to end, and the session runs on both transports.
func TestSignalingOverTLS(t *testing.T) {
	leaktest.Check(t)
	cert, pool := selfSigned(t)
	url, _, _ := startSignalingServerWith(t, server.Config{},
		&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	cfg := cfgWith(func(c *Config) { c.Signaling.HTTPClient = &http.Client{Transport: tr} })
	a, b := pairByRoom(t, url, cfg, cfg)
	tra := startTraffic(a, b, 16*time.Millisecond)
	defer tra.halt()
	tra.waitBoth(t, 20)
	waitUntil(t, "both transports up on both sides", func() bool {
		for _, s := range []*Session{a, b} {
			st := s.Stats()
			if st.WebRTC.State != LinkUp || st.TCP.State != LinkUp {
				return false
			}
		}
		return true
	})
	for _, s := range []*Session{a, b} {
		if st := s.Stats(); st.State != StateConnected || st.RelayRejected != 0 {
			t.Errorf("%v: %v, relay rejected %d", s.Role(), st.State, st.RelayRejected)
		}
	}
}
