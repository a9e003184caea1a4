package p2p

import (
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/transport/v5/vnet"
	"github.com/pion/webrtc/v4"
)

// TestNegotiatedChannelIsUnreliableUnordered checks, by behaviour, that the
// pre-negotiated channel the session uses really is unordered with 0
// retransmits (pion/datachannel before v1.6.4 silently made negotiated
// channels reliable and ordered). It runs in virtual time over a vnet whose
// chunk filter blacks out the offerer's direction on demand:
//   - messages sent during the blackout never arrive (a reliable channel
//     would retransmit them once the path is back);
//   - a message sent after the blackout arrives after one path delay (an
//     ordered channel holds it until the gap before it is filled or
//     skipped, which takes at least another round trip).
//
// Two control channels, reliable-ordered and unreliable-ordered, show that
// each check tells the behaviours apart.
func TestNegotiatedChannelIsUnreliableUnordered(t *testing.T) {
	for _, tc := range []struct {
		name              string
		init              *webrtc.DataChannelInit
		retransmits, held bool // the expected behaviour
	}{
		{"session channel", dataChannelInit(), false, false},
		{"reliable ordered control", &webrtc.DataChannelInit{Negotiated: ptr(true), ID: ptr(uint16(0))}, true, true},
		{"unreliable ordered control", &webrtc.DataChannelInit{Negotiated: ptr(true), ID: ptr(uint16(0)), MaxRetransmits: ptr(uint16(0))}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lost, lateDelay := blackoutChannel(t, tc.init)
				if retransmits := lost == 0; retransmits != tc.retransmits {
					t.Errorf("%d of 20 messages sent during the blackout were lost: retransmits = %v, want %v", lost, retransmits, tc.retransmits)
				}
				// Unordered, the message after the gap takes one path
				// delay; ordered, it waits at least another round trip
				// for the gap to be filled or skipped.
				if held := lateDelay >= 2*pathDelay; held != tc.held {
					t.Errorf("the message after the gap took %v (path delay %v): held behind the gap = %v, want %v", lateDelay, pathDelay, held, tc.held)
				}
			})
		})
	}
}

const pathDelay = 10 * time.Millisecond

func ptr[T any](v T) *T { return &v }

// blackoutChannel opens a negotiated channel with init between two peers
// on a vnet (pathDelay one way), sends 20 messages while the offerer's packets
// are dropped, restores the path and sends one more. It returns how many of
// the 20 never arrived and how long the last message took, in virtual time.
func blackoutChannel(t *testing.T, init *webrtc.DataChannelInit) (lost int, lateDelay time.Duration) {
	const delay = pathDelay
	var blackout atomic.Bool
	na, nb := newVNet(t, delay, func(c vnet.Chunk) bool {
		return !blackout.Load() || !strings.HasPrefix(c.SourceAddr().String(), vnetIPA+":")
	})

	newPC := func(n *vnet.Net) (*webrtc.PeerConnection, *webrtc.DataChannel) {
		se := webrtc.SettingEngine{}
		se.SetNet(n)
		se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
		se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
		pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
		if err != nil {
			t.Fatal(err)
		}
		dc, err := pc.CreateDataChannel(dataChannelLabel, init)
		if err != nil {
			t.Fatal(err)
		}
		return pc, dc
	}
	pa, da := newPC(na)
	pb, db := newPC(nb)
	defer pa.Close()
	defer pb.Close()

	got := make(chan byte, 64)
	db.OnMessage(func(m webrtc.DataChannelMessage) { got <- m.Data[0] })
	opened := make(chan struct{})
	da.OnOpen(func() { close(opened) })

	exchangeSDP(t, pa, pb)
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("channel did not open")
	}

	blackout.Store(true)
	for i := range 20 {
		if err := da.Send([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(5 * delay)
	blackout.Store(false)
	sent := time.Now()
	if err := da.Send([]byte{100}); err != nil {
		t.Fatal(err)
	}
	arrived := 0
	for {
		select {
		case b := <-got:
			if b == 100 {
				lateDelay = time.Since(sent)
				// Anything retransmitted would have come before or with
				// the FORWARD-TSN; give it the time to.
				time.Sleep(5 * time.Second)
				arrived += len(got)
				return 20 - arrived, lateDelay
			}
			arrived++
		case <-time.After(30 * time.Second):
			t.Fatal("the message after the blackout never arrived")
		}
	}
}

// exchangeSDP does a non-trickle offer/answer between two PeerConnections.
func exchangeSDP(t *testing.T, pa, pb *webrtc.PeerConnection) {
	t.Helper()
	offer, err := pa.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	ga := webrtc.GatheringCompletePromise(pa)
	if err := pa.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	<-ga
	if err := pb.SetRemoteDescription(*pa.LocalDescription()); err != nil {
		t.Fatal(err)
	}
	answer, err := pb.CreateAnswer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gb := webrtc.GatheringCompletePromise(pb)
	if err := pb.SetLocalDescription(answer); err != nil {
		t.Fatal(err)
	}
	<-gb
	if err := pa.SetRemoteDescription(*pb.LocalDescription()); err != nil {
		t.Fatal(err)
	}
}
