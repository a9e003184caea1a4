package server

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/turn/v5"
	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
)

// TestTURNCredentialsLiveForThePairing: TURN credentials expire 5 min
// after they were issued, but stay valid while their pairing is current;
// a player renews them (ice_servers) while paired; once the match has
// ended they fail after their TTL (injected clock), and no more are given.
func TestTURNCredentialsLiveForThePairing(t *testing.T) {
	leaktest.Check(t)
	clk := newFakeClock()
	s, url := startServer(t, Config{Now: clk.Now, TURN: &TURNConfig{ListenUDP: "127.0.0.1:0", RelayIP: netip.MustParseAddr("127.0.0.1"), RelayBind: netip.MustParseAddr("127.0.0.1")}})
	a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	pa, _ := pairByCode(t, a, b)
	auth := func(ice []signaling.ICEServer) bool {
		_, _, ok := s.trn.auth(&turn.RequestAttributes{Username: ice[0].Username, Realm: "ragsync"})
		return ok
	}
	expiry := func(ice []signaling.ICEServer) time.Time {
		sec, _ := strconv.ParseInt(strings.SplitN(ice[0].Username, ":", 2)[0], 10, 64)
		return time.Unix(sec, 0)
	}
	first := pa.ICEServers
	if got := expiry(first).Sub(clk.Now()); got != 5*time.Minute {
		t.Fatalf("credentials for %v, want 5m", got)
	}
	clk.advance(time.Hour) // a long match
	if !auth(first) {
		t.Fatal("credentials of a running match refused after their expiry")
	}
	renewed, err := a.RenewICEServers(ctxT(t))
	if err != nil || len(renewed) != 2 || expiry(renewed).Sub(clk.Now()) != 5*time.Minute || renewed[0].Username == first[0].Username {
		t.Fatalf("renewed %+v %v", renewed, err)
	}
	if !auth(renewed) {
		t.Fatal("renewed credentials refused")
	}
	// The match ends: both leave.
	if err := a.Leave(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	next(t, b, signaling.EventPeerLeft)
	if err := b.Leave(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if auth(first) {
		t.Fatal("expired credentials of an ended match accepted")
	}
	if !auth(renewed) {
		t.Fatal("credentials refused before their TTL ran out")
	}
	clk.advance(5*time.Minute + time.Second)
	if auth(renewed) {
		t.Fatal("credentials accepted after their TTL, once the match ended")
	}
	if _, err := a.RenewICEServers(ctxT(t)); !errors.Is(err, signaling.ErrWrongState) {
		t.Fatalf("renewal after the match: %v", err)
	}
}

// turnClient is a pion TURN client on 127.0.0.1 with the UDP TURN server
// and credentials of ice, and its allocation.
func turnClient(t *testing.T, ice []signaling.ICEServer) (*turn.Client, net.PacketConn) {
	t.Helper()
	srv := strings.TrimSuffix(strings.TrimPrefix(only(ice, "transport=udp")[0].URLs[0], "turn:"), "?transport=udp")
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := turn.NewClient(&turn.ClientConfig{STUNServerAddr: srv, TURNServerAddr: srv, Conn: pc, Username: ice[0].Username, Password: ice[0].Credential, Realm: "ragsync", LoggerFactory: slogFactory{l: testLogger(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	relay, err := c.Allocate()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		relay.Close()
		c.Close()
		pc.Close()
	})
	return c, relay
}

// announce sends candidates as c's trickled candidates, and waits for the
// peer to get them (the server has recorded them by then).
func announce(t *testing.T, c, peer *signaling.Client, cands ...string) {
	t.Helper()
	for _, cand := range cands {
		if err := c.SendCandidate(ctxT(t), signaling.Candidate{Candidate: cand}); err != nil {
			t.Fatal(err)
		}
		next(t, peer, signaling.EventCandidate)
	}
}

func udpAddr(ap netip.AddrPort) *net.UDPAddr { return net.UDPAddrFromAddrPort(ap) }

func turnPort(t *testing.T, s *Server) uint16 {
	for p := range s.trn.ports {
		return p
	}
	t.Fatal("no TURN port")
	return 0
}

// TestTURNPermissions, with LAN off: a client may relay only to the other
// player's candidate addresses, and of those never to loopback, private or
// metadata addresses, nor to the server's own address except its relayed
// ports. Two players' real relay candidates reach each other.
func TestTURNPermissions(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{TURN: &TURNConfig{ListenUDP: "127.0.0.1:0", RelayIP: netip.MustParseAddr("127.0.0.1"), RelayBind: netip.MustParseAddr("127.0.0.1")}})
	a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	pa, pb := pairByCode(t, a, b)
	ca, ra := turnClient(t, pa.ICEServers)
	cb, rb := turnClient(t, pb.ICEServers)
	relayA, relayB := addrPortOf(ra.LocalAddr()), addrPortOf(rb.LocalAddr())
	// A service on the server's own address, on a port that is not relayed.
	svc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	svcAddr := addrPortOf(svc.LocalAddr())
	tp := turnPort(t, s)
	announce(t, a, b,
		fmt.Sprintf("candidate:1 1 udp 1 %s %d typ relay", relayA.Addr(), relayA.Port()),
		"candidate:2 1 udp 1 198.51.100.7 5000 typ srflx",
		"candidate:3 1 udp 1 127.0.0.2 5000 typ host",
		"candidate:4 1 udp 1 10.1.2.3 5000 typ host",
		"candidate:5 1 udp 1 169.254.169.254 80 typ host",
		fmt.Sprintf("candidate:6 1 udp 1 127.0.0.1 %d typ host", tp),
		fmt.Sprintf("candidate:7 1 udp 1 127.0.0.1 %d typ host", svcAddr.Port()))
	announce(t, b, a, fmt.Sprintf("candidate:1 1 udp 1 %s %d typ relay", relayB.Addr(), relayB.Port()))

	// Permissions are only asked for: nothing is sent to these.
	for peer, want := range map[string]bool{
		"198.51.100.7":    true,  // a's candidate
		"198.51.100.8":    false, // not a candidate
		"203.0.113.1":     false,
		"127.0.0.2":       false, // loopback
		"10.1.2.3":        false, // private
		"169.254.169.254": false, // metadata
	} {
		err := cb.CreatePermission(&net.UDPAddr{IP: net.ParseIP(peer), Port: 5000})
		if (err == nil) != want {
			t.Errorf("permission to %s: %v, want allowed %v", peer, err, want)
		}
	}
	// The other player's relay candidate works, both ways.
	if err := ca.CreatePermission(udpAddr(relayB)); err != nil {
		t.Fatal(err)
	}
	if _, err := rb.WriteTo([]byte("hello through TURN"), udpAddr(relayA)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	ra.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, from, err := ra.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "hello through TURN" || addrPortOf(from) != relayB {
		t.Fatalf("through TURN: %q from %v, %v", buf[:n], from, err)
	}
	// The server's own address (the relay IP, a's candidate) on the TURN
	// port and on another service's port: the packets are dropped.
	got := make(chan string, 4)
	go func() {
		b := make([]byte, 64)
		for {
			n, _, err := svc.ReadFrom(b)
			if err != nil {
				return
			}
			got <- string(b[:n])
		}
	}()
	before := refusedPeers(t, url)
	rb.WriteTo([]byte("to the TURN port"), udpAddr(netip.AddrPortFrom(relayA.Addr(), tp)))
	rb.WriteTo([]byte("to a service"), udpAddr(svcAddr))
	waitFor(t, func() bool { return refusedPeers(t, url) >= before+2 || len(got) > 0 })
	if len(got) > 0 {
		t.Fatalf("the service on the server's address got %q through TURN", <-got)
	}
	// Once the pairing has ended, no permission is granted.
	if err := a.Leave(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := cb.CreatePermission(&net.UDPAddr{IP: net.ParseIP("198.51.100.7"), Port: 5000}); err == nil {
		t.Fatal("permission granted after the pairing ended")
	}
}

func refusedPeers(t *testing.T, url string) float64 {
	n, _ := metric(scrape(t, url), "ragsync_signal_turn_refusals_total", "reason", "peer")
	return n
}

// TestTURNLAN: with LAN, the other player's loopback candidate is reached
// through the relay (data arrives), but never a metadata address nor the
// TURN port on the server's own address.
func TestTURNLAN(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{TURN: &TURNConfig{ListenUDP: "127.0.0.1:0", RelayIP: netip.MustParseAddr("127.0.0.1"), RelayBind: netip.MustParseAddr("127.0.0.1"), LAN: true}})
	a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	_, pb := pairByCode(t, a, b)
	cb, rb := turnClient(t, pb.ICEServers)
	host, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	hostAddr := addrPortOf(host.LocalAddr())
	tp := turnPort(t, s)
	announce(t, a, b,
		fmt.Sprintf("candidate:1 1 udp 1 127.0.0.1 %d typ host", hostAddr.Port()),
		fmt.Sprintf("candidate:2 1 udp 1 127.0.0.1 %d typ host", tp),
		"candidate:3 1 udp 1 169.254.169.254 80 typ host")
	if err := cb.CreatePermission(&net.UDPAddr{IP: net.ParseIP("169.254.169.254"), Port: 80}); err == nil {
		t.Error("permission to a metadata address on a LAN")
	}
	if _, err := rb.WriteTo([]byte("lan"), udpAddr(hostAddr)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	host.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, _, err := host.ReadFrom(buf); err != nil || string(buf[:n]) != "lan" {
		t.Fatalf("the peer's loopback candidate: %q %v", buf[:n], err)
	}
	before := refusedPeers(t, url)
	rb.WriteTo([]byte("turn port"), udpAddr(netip.AddrPortFrom(hostAddr.Addr(), tp)))
	waitFor(t, func() bool { return refusedPeers(t, url) >= before+1 })
}
