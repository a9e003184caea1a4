package p2p

import (
	"context"
	"encoding/binary"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"

	"github.com/ragsync/ragsync/internal/testwait"
)

// latencies records per-message one-way latencies and reports quantiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	var sum time.Duration
	for _, d := range l {
		sum += d
	}
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(l)), "ns/oneway")
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkOneWayLatency sends one 100-byte message at a time from A and
// waits for it at B, on loopback: through a session (WebRTC or TCP
// transport) and through bare pion data channels with the same settings
// (unordered, MaxRetransmits 0, detached). ns/op is send + delivery;
// ns/oneway the mean measured one-way latency. allocs/op counts every
// allocation in the process per message (pion's included).
func BenchmarkOneWayLatency(b *testing.B) {
	b.Run("bare-pion", func(b *testing.B) {
		wa, rb, cleanup := barePionPair(b)
		defer cleanup()
		msg := make([]byte, 100)
		buf := make([]byte, 2048)
		lat := make(latencies, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			binary.BigEndian.PutUint64(msg, uint64(t0.UnixNano()))
			if _, err := wa.Write(msg); err != nil {
				b.Fatal(err)
			}
			if _, _, err := rb.ReadDataChannel(buf); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		lat.report(b)
	})
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"session-webrtc", func(c *Config) { c.DisableTCP = true }},
		{"session-tcp", func(c *Config) { c.DisableWebRTC = true }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url := startSignaling(b)
			a, s := pairByRoom(b, url, cfgWith(tc.cfg), cfgWith(tc.cfg))
			msg := make([]byte, 100)
			lat := make(latencies, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := a.Send(msg); err != nil {
					b.Fatal(err)
				}
				awaitMessage(b, s)
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			lat.report(b)
		})
	}
}

// BenchmarkSend measures Send alone (the message goes into pion's SCTP
// queue or the relay sender); the receiver drains in the background.
func BenchmarkSend(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"webrtc", func(c *Config) { c.DisableTCP = true; c.SendBuffer = 1 << 20 }},
		{"tcp", func(c *Config) { c.DisableWebRTC = true }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url := startSignaling(b)
			a, s := pairByRoom(b, url, cfgWith(tc.cfg), cfgWith(tc.cfg))
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					s.Poll(func([]byte) {})
					time.Sleep(time.Millisecond)
				}
			}()
			msg := make([]byte, 100)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				a.Send(msg)
				if i%64 == 63 {
					time.Sleep(100 * time.Microsecond) // let it drain; do not measure drops
				}
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
		})
	}
	b.Run("bare-pion", func(b *testing.B) {
		wa, rb, cleanup := barePionPair(b)
		defer cleanup()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2048)
			for {
				if _, _, err := rb.ReadDataChannel(buf); err != nil {
					return
				}
			}
		}()
		msg := make([]byte, 105) // the session's header included
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			wa.Write(msg)
			if i%64 == 63 {
				time.Sleep(100 * time.Microsecond)
			}
		}
		b.StopTimer()
		cleanup()
		wg.Wait()
	})
}

// BenchmarkPipeRoundTrip is the session's own overhead without pion: the
// TCP transport over an in-process net.Pipe, one message each way.
func BenchmarkPipeRoundTrip(b *testing.B) {
	a, s := newPipeSessions(b, Config{})
	msg := make([]byte, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.Send(msg)
		awaitMessage(b, s)
		s.Send(msg)
		awaitMessage(b, a)
	}
}

// awaitMessage blocks on s.Received until Poll hands over a message (a
// token can be left over from a message an earlier Poll already took).
// Blocking, not spinning on Poll: a spinning receiver competes with pion's
// and the relay's goroutines for the CPU, and on a loaded machine the
// benchmark then measures scheduler starvation instead of latency.
func awaitMessage(tb testing.TB, s *Session) {
	for s.Poll(func([]byte) {}) == 0 {
		select {
		case <-s.Received():
		case <-s.Done():
			tb.Fatalf("session ended while waiting for a message: %v", s.Err())
		}
	}
}

// BenchmarkConnectToFirstMessage: from CreateRoom to the first message
// received by the guest, both peers on this machine, real signaling server
// on loopback. Run with -benchtime=10x.
func BenchmarkConnectToFirstMessage(b *testing.B) {
	url := startSignaling(b)
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"both", nil},
		{"webrtc-only", func(c *Config) { c.DisableTCP = true }},
		{"tcp-only", func(c *Config) { c.DisableWebRTC = true }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ctx, cancel := testwait.ContextFrom(context.Background(), b)
				room, err := CreateRoom(ctx, url, cfgWith(tc.cfg))
				if err != nil {
					b.Fatal(err)
				}
				var host *Session
				var herr error
				done := make(chan struct{})
				go func() { host, herr = room.Connect(ctx); close(done) }()
				guest, err := Connect(ctx, url, room.Code(), cfgWith(tc.cfg))
				<-done
				if err != nil || herr != nil {
					b.Fatal(err, herr)
				}
				if err := host.Send([]byte("hello")); err != nil {
					b.Fatal(err)
				}
				recvOne(b, guest)
				b.StopTimer()
				host.Close()
				guest.Close()
				cancel()
				b.StartTimer()
			}
		})
	}
}

// barePionPair connects two pion PeerConnections on loopback with the
// session's data channel settings and returns A's and B's detached ends.
func barePionPair(b testing.TB) (wa, rb datachannel.ReadWriteCloser, cleanup func()) {
	b.Helper()
	se := webrtc.SettingEngine{}
	se.DetachDataChannels()
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetIncludeLoopbackCandidate(true)
	se.SetInterfaceFilter(isLoopbackInterface)
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.LoggerFactory = slogFactory{l: testLogger()}
	api := webrtc.NewAPI(webrtc.WithSettingEngine(se))
	pa, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		b.Fatal(err)
	}
	pb, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		b.Fatal(err)
	}
	ordered := false
	var mr uint16
	dca, err := pa.CreateDataChannel("bench", &webrtc.DataChannelInit{Ordered: &ordered, MaxRetransmits: &mr})
	if err != nil {
		b.Fatal(err)
	}
	gotA := make(chan datachannel.ReadWriteCloser, 1)
	gotB := make(chan datachannel.ReadWriteCloser, 1)
	dca.OnOpen(func() { rw, _ := dca.Detach(); gotA <- rw })
	pb.OnDataChannel(func(dc *webrtc.DataChannel) {
		dc.OnOpen(func() { rw, _ := dc.Detach(); gotB <- rw })
	})
	offer, _ := pa.CreateOffer(nil)
	ga := webrtc.GatheringCompletePromise(pa)
	pa.SetLocalDescription(offer)
	<-ga
	pb.SetRemoteDescription(*pa.LocalDescription())
	answer, _ := pb.CreateAnswer(nil)
	gb := webrtc.GatheringCompletePromise(pb)
	pb.SetLocalDescription(answer)
	<-gb
	pa.SetRemoteDescription(*pb.LocalDescription())
	select {
	case wa = <-gotA:
	case <-testwait.Chan(b):
		b.Fatal("bare pion: no open (gave up near the test binary's deadline)")
	}
	select {
	case rb = <-gotB:
	case <-testwait.Chan(b):
		b.Fatal("bare pion: no open (gave up near the test binary's deadline)")
	}
	// A must read too: pion applies the channel's reliability parameters
	// on the dialling side only when its read sees the peer's DCEP ACK.
	// Without this A would send reliable and ordered.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			if _, _, err := wa.ReadDataChannel(buf); err != nil {
				return
			}
		}
	}()
	var once sync.Once
	return wa, rb, func() {
		once.Do(func() {
			wa.Close()
			rb.Close()
			pa.Close()
			pb.Close()
			wg.Wait()
		})
	}
}
