package server

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/signaling"
)

// relayKinds are the three pairings of relay streams the server joins:
// ws[i] puts player i on the WebSocket relay, otherwise on the raw one.
var relayKinds = []struct {
	name string
	ws   [2]bool
}{
	{"raw", [2]bool{false, false}},
	{"websocket", [2]bool{true, true}},
	{"websocket meets raw", [2]bool{true, false}},
}

// dialRelayKinds attaches both players of a pairing to the relay, player i
// on the WebSocket relay if ws[i] and on the raw one otherwise, and returns
// their ends (closed at cleanup).
func dialRelayKinds(t *testing.T, cc signaling.ClientConfig, url string, p [2]signaling.Pairing, ws [2]bool) [2]net.Conn {
	t.Helper()
	var ends [2]net.Conn
	var errs [2]error
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			if ws[i] {
				ends[i], errs[i] = signaling.DialRelayWebSocket(ctxT(t), url, p[i].Token, cc)
			} else {
				ends[i], errs[i] = signaling.DialRelay(ctxT(t), url, p[i].Token, cc)
			}
		})
	}
	wg.Wait()
	for _, c := range ends {
		if c != nil {
			t.Cleanup(func() { c.Close() })
		}
	}
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	return ends
}

// expectClosedConcurrently reads every end at once until the server closes
// it (one end waiting on another could hold up a WebSocket's closing
// handshake) and fails unless each ends with an error other than the test's
// own read deadline.
func expectClosedConcurrently(t *testing.T, ends ...net.Conn) {
	t.Helper()
	errs := make([]error, len(ends))
	var wg sync.WaitGroup
	for i, c := range ends {
		readDeadline(t, c)
		wg.Go(func() {
			for {
				var buf [64]byte
				if _, err := c.Read(buf[:]); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("end %d: still open (%v)", i, err)
		}
	}
}

// TestRelayIdleOneWay: a relay stream is closed only when nothing has
// moved in either direction for RelayIdleTimeout, whatever its kind. One
// direction busy keeps it open however long the other stays silent (on
// a WebSocket, an expired read deadline on the silent direction used to
// close it); once both are silent it closes. It runs in virtual time
// (synctest, the server on an in-memory listener), so a loaded machine
// changes nothing.
func TestRelayIdleOneWay(t *testing.T) {
	leaktest.Check(t)
	for _, tc := range relayKinds {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testRelayIdleOneWay(t, tc.ws) })
		})
	}
}

func testRelayIdleOneWay(t *testing.T, ws [2]bool) {
	const idle = 500 * time.Millisecond
	s, url, mn := startMemServer(t, Config{RelayIdleTimeout: idle})
	cc := mn.client(signaling.ClientConfig{})
	a, b := dial(t, url, cc), dial(t, url, cc)
	pa, pb := pairByCode(t, a, b)
	ends := dialRelayKinds(t, cc, url, [2]signaling.Pairing{pa, pb}, ws)
	x, y := ends[0], ends[1]

	// One way, then the other: each direction alone keeps the stream open
	// while the other is silent for twice the idle timeout.
	const sends = 8
	for _, d := range [][2]net.Conn{{x, y}, {y, x}} {
		for i := range sends {
			if _, err := d[0].Write([]byte{byte(i)}); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			var one [1]byte
			readDeadline(t, d[1])
			if _, err := io.ReadFull(d[1], one[:]); err != nil || one[0] != byte(i) {
				t.Fatalf("byte %d: got %v, %v", i, one, err)
			}
			time.Sleep(idle / 4)
		}
	}
	roundTrip(t, x, y, "still open")
	if st := s.Stats(); st.RelaysActive != 1 {
		t.Fatalf("stats %+v, want the relay active", st)
	}

	// Then silence both ways: the server closes both ends, not before the
	// idle timeout.
	quiet := time.Now()
	expectClosedConcurrently(t, x, y)
	if d := time.Since(quiet); d < idle {
		t.Fatalf("closed after %v of silence, want at least the idle timeout %v", d, idle)
	}
	waitFor(t, func() bool { return s.Stats().RelaysActive == 0 })
	if st, want := s.Stats(), uint64(2*sends+2*len("still open")); st.RelayBytes != want {
		t.Fatalf("relay bytes %d, want %d", st.RelayBytes, want)
	}
}

// TestRelayStuckReader: a player that stops reading does not hold the
// relay (or its peer's writes) forever: the write to it gives up after
// WriteTimeout and the stream closes, though the idle timeout is far off.
// Virtual time, as TestRelayIdleOneWay.
func TestRelayStuckReader(t *testing.T) {
	leaktest.Check(t)
	for _, tc := range relayKinds {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testRelayStuckReader(t, tc.ws) })
		})
	}
}

func testRelayStuckReader(t *testing.T, ws [2]bool) {
	const writeTimeout = 2 * time.Second
	s, url, mn := startMemServer(t, Config{WriteTimeout: writeTimeout, RelayIdleTimeout: time.Hour})
	cc := mn.client(signaling.ClientConfig{})
	a, b := dial(t, url, cc), dial(t, url, cc)
	pa, pb := pairByCode(t, a, b)
	ends := dialRelayKinds(t, cc, url, [2]signaling.Pairing{pa, pb}, ws)
	x, y := ends[0], ends[1]
	roundTrip(t, x, y, "before")

	// y stops reading; x writes until its stream is closed under it (the
	// in-memory connections buffer nothing, so the server's write to y is
	// stuck from the first byte).
	stuck := time.Now()
	var err error
	for err == nil {
		_, err = x.Write([]byte("more"))
	}
	if d := time.Since(stuck); d < writeTimeout {
		t.Fatalf("closed after %v, want at least the write timeout %v", d, writeTimeout)
	}
	expectClosedConcurrently(t, x, y)
	waitFor(t, func() bool { return s.Stats().RelaysActive == 0 })
}
