package p2p

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/stdnet"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling/server"
)

// onlyToNet is a transport.Net (the real network) on which UDP reaches
// only one address, the TURN server's: every datagram to or from any other
// address is dropped. Direct UDP between two peers on it is blocked, as
// between two players behind symmetric NATs.
type onlyToNet struct {
	transport.Net
	allow netip.AddrPort
}

func (n *onlyToNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := n.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return &onlyToConn{UDPConn: c, allow: n.allow}, nil
}

func (n *onlyToNet) ListenPacket(network, address string) (net.PacketConn, error) {
	c, err := n.Net.ListenPacket(network, address)
	if err != nil {
		return nil, err
	}
	return &onlyToPacketConn{PacketConn: c, allow: n.allow}, nil
}

func (n *onlyToNet) DialUDP(network string, laddr, raddr *net.UDPAddr) (transport.UDPConn, error) {
	if raddr.AddrPort() != n.allow {
		return nil, errors.New("test: UDP blocked")
	}
	return n.Net.DialUDP(network, laddr, raddr)
}

// allowed says whether a datagram to or from a may pass.
func allowed(a net.Addr, allow netip.AddrPort) bool {
	u, ok := a.(*net.UDPAddr)
	return ok && u.AddrPort().Addr().Unmap() == allow.Addr() && u.AddrPort().Port() == allow.Port()
}

type onlyToConn struct {
	transport.UDPConn
	allow netip.AddrPort
}

func (c *onlyToConn) WriteTo(p []byte, a net.Addr) (int, error) {
	if !allowed(a, c.allow) {
		return len(p), nil // lost on the way
	}
	return c.UDPConn.WriteTo(p, a)
}

func (c *onlyToConn) WriteToUDP(p []byte, a *net.UDPAddr) (int, error) { return c.WriteTo(p, a) }

func (c *onlyToConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, a, err := c.UDPConn.ReadFrom(p)
		if err != nil || allowed(a, c.allow) {
			return n, a, err
		}
	}
}

func (c *onlyToConn) ReadFromUDP(p []byte) (int, *net.UDPAddr, error) {
	for {
		n, a, err := c.UDPConn.ReadFromUDP(p)
		if err != nil || allowed(a, c.allow) {
			return n, a, err
		}
	}
}

func (c *onlyToConn) ReadMsgUDP(p, oob []byte) (int, int, int, *net.UDPAddr, error) {
	return 0, 0, 0, nil, errors.New("test: ReadMsgUDP not filtered")
}

func (c *onlyToConn) WriteMsgUDP(p, oob []byte, a *net.UDPAddr) (int, int, error) {
	return 0, 0, errors.New("test: WriteMsgUDP not filtered")
}

type onlyToPacketConn struct {
	net.PacketConn
	allow netip.AddrPort
}

func (c *onlyToPacketConn) WriteTo(p []byte, a net.Addr) (int, error) {
	if !allowed(a, c.allow) {
		return len(p), nil
	}
	return c.PacketConn.WriteTo(p, a)
}

func (c *onlyToPacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, a, err := c.PacketConn.ReadFrom(p)
		if err != nil || allowed(a, c.allow) {
			return n, a, err
		}
	}
}

// freeUDPPort returns a UDP port on 127.0.0.1 that was free a moment ago.
func freeUDPPort(t *testing.T) netip.AddrPort {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// TestWebRTCThroughTURN: direct UDP between the peers is blocked (each
// peer's network passes UDP only to and from the TURN server) and the TCP
// relay is off. With no ICE servers configured, the sessions use the TURN
// server embedded in the signaling server (its credentials come with the
// pairing): WebRTC connects through it on relay candidates, data flows,
// and Stats says so.
func TestWebRTCThroughTURN(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a TURN server and pion sockets in real time")
	}
	leaktest.Check(t)
	turnAddr := freeUDPPort(t)
	lo := netip.MustParseAddr("127.0.0.1")
	url, _, _ := startSignalingServerWith(t, server.Config{
		TURN: &server.TURNConfig{ListenUDP: turnAddr.String(), RelayIP: lo, RelayBind: lo},
	}, nil)

	std, err := stdnet.NewNet()
	if err != nil {
		t.Fatal(err)
	}
	cfg := cfgWith(func(c *Config) {
		c.DisableTCP = true
		c.Net = &onlyToNet{Net: std, allow: turnAddr}
	})
	a, b := pairByRoom(t, url, cfg, cfg)
	tr := startTraffic(a, b, 16*time.Millisecond)
	defer tr.halt()
	tr.waitBoth(t, 20)
	for _, s := range []*Session{a, b} {
		st := s.Stats()
		t.Logf("%v: on %v, candidates %v/%v, RTT %v", s.Role(), st.Transport, st.LocalCandidate, st.RemoteCandidate, st.RTT.Smoothed)
		if st.Transport != TransportWebRTC || st.State != StateConnected {
			t.Errorf("%v: on %v, %v", s.Role(), st.Transport, st.State)
		}
		if st.LocalCandidate != CandidateRelay || st.RemoteCandidate != CandidateRelay || !st.WebRTCViaTURN() {
			t.Errorf("%v: selected pair %v/%v, want relay/relay (through TURN)", s.Role(), st.LocalCandidate, st.RemoteCandidate)
		}
	}
}
