package p2p

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/transport/v5/vnet"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/p2p/internal/relay"
	"github.com/ragsync/ragsync/p2p/internal/wire"
)

// tamper is what an on-path relay does to the next record it passes on.
type tamper int32

const (
	tamperNone      tamper = iota
	tamperInject           // a forged TLS record before it
	tamperAlter            // one bit of it flipped
	tamperReplay           // the previous record again before it
	tamperPlaintext        // a plaintext session frame (a bye) before it
)

func (t tamper) String() string {
	return [...]string{"none", "inject", "alter", "replay", "plaintext bye"}[t]
}

// tamperConn is a relayed stream as a malicious relay delivers it: it
// passes whole TLS records to the reader and, when told, forges, alters or
// replays one.
type tamperConn struct {
	net.Conn
	next     atomic.Int32 // a tamper to apply to the next record
	applied  chan tamper  // receives each tamper once applied
	mu       sync.Mutex
	upgraded bool
	pending  []byte
	last     []byte
}

func (c *tamperConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.upgraded {
		// The relay's HTTP responses first: the challenge (401), then
		// the upgrade (one write of the server's, so one read of the
		// in-memory pipe).
		n, err := c.Conn.Read(p)
		if bytes.Contains(p[:n], []byte(" 101 ")) && bytes.Contains(p[:n], []byte("\r\n\r\n")) {
			c.upgraded = true
		}
		return n, err
	}
	if len(c.pending) == 0 {
		var hdr [5]byte
		if _, err := io.ReadFull(c.Conn, hdr[:]); err != nil {
			return 0, err
		}
		rec := make([]byte, 5+int(binary.BigEndian.Uint16(hdr[3:])))
		copy(rec, hdr[:])
		if _, err := io.ReadFull(c.Conn, rec[5:]); err != nil {
			return 0, err
		}
		out := rec
		// Only application data records (type 23, once the handshake is
		// done) are tampered with.
		if tm := tamper(c.next.Load()); tm != tamperNone && rec[0] == 23 && c.last != nil && c.last[0] == 23 {
			c.next.Store(int32(tamperNone))
			switch tm {
			case tamperInject:
				forged := append([]byte{23, 3, 3, 0, 40}, make([]byte, 40)...)
				out = append(forged, rec...)
			case tamperAlter:
				out = append([]byte(nil), rec...)
				out[len(out)/2] ^= 0x10
			case tamperReplay:
				out = append(append([]byte(nil), c.last...), rec...)
			case tamperPlaintext:
				bye := wire.AppendHeader(nil, wire.Header{Type: wire.MsgControl, Seq: 1})
				bye = wire.AppendControl(bye, wire.Control{Kind: wire.CtrlBye, Reason: wire.ByeClosed})
				frame, _ := relay.AppendFrame(nil, bye)
				out = append(frame, rec...)
			}
			c.applied <- tm
		}
		c.last = rec
		c.pending = out
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// TestRelayTampering: an on-path relay forges, alters and replays frames
// on the relayed stream. None is accepted: each ends the stream at the TLS
// layer, is counted in Stats.RelayRejected, and the relay is dialled
// again; the session goes on (on WebRTC, or on the relay itself when it
// is the only transport), its clock and data untouched.
func TestRelayTampering(t *testing.T) {
	leaktest.Check(t)
	for _, relayOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("relay only %v", relayOnly), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testRelayTampering(t, relayOnly) })
		})
	}
}

func testRelayTampering(t *testing.T, relayOnly bool) {
	url, viaMem := startMemSignaling(t)
	na, nb := newVNet(t, 10*time.Millisecond, nil)
	conns := make(chan *tamperConn, 16)
	applied := make(chan tamper, 16)
	cfg := func(n *vnet.Net, tampered bool) Config {
		return cfgWith(func(c *Config) {
			viaMem(c)
			c.Net, c.Interfaces = n, InterfacesAll
			c.Prefer = TransportWebRTC
			c.DisableWebRTC = relayOnly
			if !tampered {
				return
			}
			dial := relayClientConfig(*c).HTTPClient.Transport.(*http.Transport).DialContext
			c.RelayDialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				tc := &tamperConn{Conn: conn, applied: applied}
				conns <- tc
				return tc, nil
			}
		})
	}
	a, b := pairByRoom(t, url, cfg(na, false), cfg(nb, true))
	ea, eb := collectEvents(a), collectEvents(b)
	tr := startTraffic(a, b, 16*time.Millisecond)
	defer tr.halt()
	tr.waitBoth(t, 20)
	want := TransportWebRTC
	if relayOnly {
		want = TransportTCP
	}
	var current *tamperConn
	for i, tm := range []tamper{tamperInject, tamperAlter, tamperReplay, tamperPlaintext} {
		waitUntil(t, "the relay up on both", func() bool {
			return a.Stats().TCP.State == LinkUp && b.Stats().TCP.State == LinkUp
		})
	latest:
		for {
			select {
			case current = <-conns:
			default:
				break latest
			}
		}
		time.Sleep(time.Second) // records flow on this stream
		current.next.Store(int32(tm))
		if got := <-applied; got != tm {
			t.Fatalf("applied %v, want %v", got, tm)
		}
		waitUntil(t, "the tampering counted", func() bool { return b.Stats().RelayRejected == uint64(i+1) })
		tr.waitBoth(t, 20) // the session goes on
	}
	waitUntil(t, "the relay back on both", func() bool {
		return a.Stats().TCP.State == LinkUp && b.Stats().TCP.State == LinkUp
	})
	tr.waitBoth(t, 20)
	for _, c := range []struct {
		who string
		s   *Session
		evs []Event
	}{{"offerer", a, ea.snapshot()}, {"answerer", b, eb.snapshot()}} {
		st := c.s.Stats()
		t.Logf("%s: relay rejected %d, malformed %d, switches %d, offset %v; events %v", c.who, st.RelayRejected, st.Malformed, st.Switches, st.ClockOffset, c.evs)
		if c.s.Err() != nil || st.State != StateConnected || st.Transport != want {
			t.Errorf("%s: %v, %v on %v", c.who, c.s.Err(), st.State, st.Transport)
		}
		if st.Malformed != 0 || st.Duplicates != 0 {
			t.Errorf("%s: %d malformed, %d duplicates accepted into the session", c.who, st.Malformed, st.Duplicates)
		}
		if !relayOnly && st.Switches != 0 {
			t.Errorf("%s: %d switches", c.who, st.Switches)
		}
		if st.ClockOffset > 50*time.Millisecond || st.ClockOffset < -50*time.Millisecond {
			t.Errorf("%s: clock offset %v", c.who, st.ClockOffset)
		}
		if index(c.evs, EventDisconnected, 0) >= 0 {
			t.Errorf("%s disconnected", c.who)
		}
	}
	if n := b.Stats().RelayRejected; n != 4 {
		t.Errorf("answerer counted %d rejected relay streams, want 4", n)
	}
}
