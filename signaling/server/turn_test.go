package server

import (
	"context"
	"github.com/ragsync/ragsync/internal/leaktest"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/turn/v5"
	"github.com/pion/webrtc/v4"
	"github.com/ragsync/ragsync/signaling"
)

// turnConfig is an embedded TURN server on loopback only: both listeners
// and every relayed port on 127.0.0.1.
func turnConfig() *TURNConfig {
	lo := netip.MustParseAddr("127.0.0.1")
	return &TURNConfig{ListenUDP: "127.0.0.1:0", ListenTCP: "127.0.0.1:0", RelayIP: lo, RelayBind: lo}
}

// relayOnlyPC is a bare pion PeerConnection that may only use relay
// candidates (so direct UDP between the peers is never tried), gathering on
// loopback, without mDNS.
func relayOnlyPC(t *testing.T, servers []signaling.ICEServer) *webrtc.PeerConnection {
	t.Helper()
	se := webrtc.SettingEngine{}
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetIncludeLoopbackCandidate(true)
	se.SetInterfaceFilter(func(name string) bool { return name == "lo" })
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	se.LoggerFactory = slogFactory{l: testLogger(t)}
	var ws []webrtc.ICEServer
	for _, s := range servers {
		ws = append(ws, webrtc.ICEServer{URLs: s.URLs, Username: s.Username, Credential: s.Credential})
	}
	pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{
		ICEServers:         ws,
		ICETransportPolicy: webrtc.ICETransportPolicyRelay,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// only keeps the TURN server entry, with only the URLs containing sub.
func only(servers []signaling.ICEServer, sub string) []signaling.ICEServer {
	for _, s := range servers {
		if s.Username == "" {
			continue
		}
		var urls []string
		for _, u := range s.URLs {
			if strings.Contains(u, sub) {
				urls = append(urls, u)
			}
		}
		s.URLs = urls
		return []signaling.ICEServer{s}
	}
	return nil
}

// TestTURNRelaysWebRTC: two players pair through the server, get TURN
// credentials in paired, and their WebRTC connection, allowed only relay
// candidates, goes through the embedded TURN server: one player reaches it
// over UDP, the other over TCP.
func TestTURNRelaysWebRTC(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{TURN: turnConfig()})
	a, b := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	// The welcome says paired will carry TURN servers (an early offer
	// could not use them).
	if !a.TURN() || !b.TURN() {
		t.Error("the welcome does not say the server hands out TURN servers")
	}
	pa, pb := pairByCode(t, a, b)
	// paired carries a TURN entry (udp and tcp) with per-player
	// credentials, and a STUN entry.
	for _, p := range []signaling.Pairing{pa, pb} {
		if len(p.ICEServers) != 2 || len(p.ICEServers[0].URLs) != 2 || p.ICEServers[1].Username != "" ||
			!strings.HasPrefix(p.ICEServers[1].URLs[0], "stun:127.0.0.1:") {
			t.Fatalf("ICE servers %+v", p.ICEServers)
		}
		exp, id, _ := strings.Cut(p.ICEServers[0].Username, ":")
		sec, err := strconv.ParseInt(exp, 10, 64)
		if left := time.Until(time.Unix(sec, 0)); err != nil || left < 4*time.Minute || left > 5*time.Minute+time.Second || !strings.HasPrefix(id, string(p.Room)) {
			t.Fatalf("username %q", p.ICEServers[0].Username)
		}
	}
	if pa.ICEServers[0].Username == pb.ICEServers[0].Username || pa.ICEServers[0].Credential == pb.ICEServers[0].Credential {
		t.Fatal("both players got the same credentials")
	}

	pcA := relayOnlyPC(t, only(pa.ICEServers, "transport=udp"))
	pcB := relayOnlyPC(t, only(pb.ICEServers, "transport=tcp"))
	ctx := ctxT(t)
	got := make(chan string, 1)
	pcB.OnDataChannel(func(dc *webrtc.DataChannel) {
		dc.OnMessage(func(m webrtc.DataChannelMessage) {
			select {
			case got <- string(m.Data):
			default:
			}
		})
	})
	dc, err := pcA.CreateDataChannel("game", nil)
	if err != nil {
		t.Fatal(err)
	}
	open := make(chan struct{})
	dc.OnOpen(func() { close(open) })

	// The SDP travels through the signaling server, with every candidate
	// gathered (no trickle).
	sdp := func(pc *webrtc.PeerConnection, d webrtc.SessionDescription, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return gathered(t, pc, d)
	}
	offerD, err := pcA.CreateOffer(nil)
	offer := sdp(pcA, offerD, err)
	if !strings.Contains(offer, "typ relay") || strings.Contains(offer, "typ host") {
		t.Fatalf("offer candidates:\n%s", offer)
	}
	if err := a.SendOffer(ctx, offer); err != nil {
		t.Fatal(err)
	}
	ev := next(t, b, signaling.EventOffer)
	if err := pcB.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: ev.SDP}); err != nil {
		t.Fatal(err)
	}
	answerD, err := pcB.CreateAnswer(nil)
	answer := sdp(pcB, answerD, err)
	if err := b.SendAnswer(ctx, answer); err != nil {
		t.Fatal(err)
	}
	ev = next(t, a, signaling.EventAnswer)
	if err := pcA.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: ev.SDP}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-open:
	case <-ctx.Done():
		t.Fatal("data channel did not open through TURN")
	}
	if err := dc.SendText("through TURN"); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != "through TURN" {
			t.Fatalf("got %q", m)
		}
	case <-ctx.Done():
		t.Fatal("no message through TURN")
	}
	for _, pc := range []*webrtc.PeerConnection{pcA, pcB} {
		p, err := pc.SCTP().Transport().ICETransport().GetSelectedCandidatePair()
		if err != nil || p == nil || p.Local.Typ != webrtc.ICECandidateTypeRelay || p.Remote.Typ != webrtc.ICECandidateTypeRelay {
			t.Fatalf("selected pair %v %v", p, err)
		}
		if p.Local.Address != "127.0.0.1" {
			t.Fatalf("relayed address %s, want loopback", p.Local.Address)
		}
	}
	fams := scrape(t, url)
	if n, _ := metric(fams, "ragsync_signal_turn_allocations_total"); n < 2 {
		t.Fatalf("turn_allocations_total = %v", n)
	}
	if n, _ := metric(fams, "ragsync_signal_turn_allocations"); n < 2 {
		t.Fatalf("turn_allocations = %v", n)
	}
	pcA.Close()
	pcB.Close()
	_ = s
}

// gathered sets d as pc's local description and returns it once every
// candidate is in.
func gathered(t *testing.T, pc *webrtc.PeerConnection, d webrtc.SessionDescription) string {
	t.Helper()
	done := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(d); err != nil {
		t.Fatal(err)
	}
	<-done
	return pc.LocalDescription().SDP
}

func TestTURNCredentialsAndConfig(t *testing.T) {
	leaktest.Check(t)
	clk := newFakeClock()
	s, err := New(Config{Logger: testLogger(t), Now: clk.Now, TURN: &TURNConfig{
		ListenUDP: "127.0.0.1:0", RelayIP: netip.MustParseAddr("127.0.0.1"), RelayBind: netip.MustParseAddr("127.0.0.1"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	tr := s.trn
	id := turnUserID("RXXM22", 1, 0)
	ice := tr.credentials(id, clk.Now().Add(time.Hour))
	if len(ice) != 2 || len(ice[0].URLs) != 1 || !strings.HasSuffix(ice[0].URLs[0], "?transport=udp") {
		t.Fatalf("%+v", ice)
	}
	user, pass := ice[0].Username, ice[0].Credential
	ra := &turn.RequestAttributes{Username: user, Realm: "ragsync"}
	uid, key, ok := tr.auth(ra)
	if !ok || uid != id || string(key) != string(turn.GenerateAuthKey(user, "ragsync", pass)) {
		t.Fatalf("valid credentials refused: %v %q", ok, uid)
	}
	for _, u := range []string{"", "abc", "abc:def", strconv.FormatInt(clk.Now().Unix(), 10) + ":" + id, ":x", "99999999999:RXXM22-1-offerer"} {
		if _, _, ok := tr.auth(&turn.RequestAttributes{Username: u, Realm: "ragsync"}); ok {
			t.Errorf("username %q accepted", u)
		}
	}
	clk.advance(time.Hour)
	if _, _, ok := tr.auth(ra); ok {
		t.Error("expired credentials of no current pairing accepted")
	}
	for _, cfg := range []TURNConfig{
		{},
		{ListenUDP: ":0"},
		{ListenUDP: ":0", RelayIP: netip.IPv4Unspecified()},
		{ListenUDP: ":0", RelayIP: netip.MustParseAddr("127.0.0.1"), MinPort: 5},
		{ListenUDP: ":0", RelayIP: netip.MustParseAddr("127.0.0.1"), RelayBind: netip.MustParseAddr("::1")},
		{ListenUDP: ":0", RelayIP: netip.MustParseAddr("127.0.0.1"), URLs: []string{"http://x"}},
		{ListenUDP: ":0", RelayIP: netip.MustParseAddr("127.0.0.1"), CredentialTTL: -time.Second},
	} {
		if _, err := New(Config{TURN: &cfg}); err == nil {
			t.Errorf("TURN config %+v accepted", cfg)
		}
	}
}

func TestCandidateAddr(t *testing.T) {
	for line, want := range map[string]string{
		"candidate:1 1 udp 2130706431 198.51.100.7 5000 typ host":                      "198.51.100.7:5000",
		"a=candidate:2 1 udp 1 2001:db8::1 9 typ relay raddr 0.0.0.0 rport 0\r\n":      "[2001:db8::1]:9",
		"candidate:3 1 tcp 1 ::ffff:203.0.113.1 443 typ srflx":                         "203.0.113.1:443",
		"candidate:4 1 udp 1 1f0e2f7c-0a4b-4b5e-9d6c-0d7c1c5c7b1a.local 5000 typ host": "",
		"candidate:5 1 udp 1 198.51.100.7 70000 typ host":                              "",
		"198.51.100.7 5000": "",
		"candidate:6 1 udp 1 198.51.100.7 5000 type host": "",
	} {
		ap, ok := candidateAddr(line)
		if got := ""; ok {
			got = ap.String()
			if got != want {
				t.Errorf("%q: %s, want %q", line, got, want)
			}
		} else if want != "" {
			t.Errorf("%q: not parsed, want %s", line, want)
		}
	}
}
