package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
)

func ptr[T any](v T) *T { return &v }

// exchange runs an offer/answer/candidate exchange between a paired
// offerer and answerer and checks what each receives.
func exchange(t *testing.T, off, ans *signaling.Client) {
	t.Helper()
	ctx := ctxT(t)
	if err := off.SendOffer(ctx, "v=0 offer"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ans, signaling.EventOffer); ev.SDP != "v=0 offer" {
		t.Fatalf("offer = %q", ev.SDP)
	}
	if err := ans.SendAnswer(ctx, "v=0 answer"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, off, signaling.EventAnswer); ev.SDP != "v=0 answer" {
		t.Fatalf("answer = %q", ev.SDP)
	}
	c1 := signaling.Candidate{Candidate: "candidate:1 1 udp 2130706431 127.0.0.1 50000 typ host", SDPMid: ptr("0"), SDPMLineIndex: ptr(uint16(0)), UsernameFragment: ptr("abcd")}
	if err := off.SendCandidate(ctx, c1); err != nil {
		t.Fatal(err)
	}
	if err := ans.SendCandidate(ctx, signaling.Candidate{Candidate: "candidate:2 1 udp 1 127.0.0.1 50001 typ host"}); err != nil {
		t.Fatal(err)
	}
	if err := off.SendCandidate(ctx, signaling.Candidate{}); err != nil { // end of candidates
		t.Fatal(err)
	}
	got := next(t, ans, signaling.EventCandidate).Candidate
	if got.Candidate != c1.Candidate || *got.SDPMid != "0" || *got.SDPMLineIndex != 0 || *got.UsernameFragment != "abcd" {
		t.Fatalf("candidate = %+v", got)
	}
	if got := next(t, off, signaling.EventCandidate).Candidate; got.Candidate != "candidate:2 1 udp 1 127.0.0.1 50001 typ host" || got.SDPMid != nil {
		t.Fatalf("candidate = %+v", got)
	}
	if got := next(t, ans, signaling.EventCandidate).Candidate; got.Candidate != "" {
		t.Fatalf("end-of-candidates = %+v", got)
	}
}

func TestPairByRoomCode(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{})
	a := dial(t, url, signaling.ClientConfig{})
	b := dial(t, url, signaling.ClientConfig{})
	if l := a.Limits(); l.MaxMessageBytes != 16<<10 || l.RateBurst != 40 {
		t.Fatalf("limits = %+v", l)
	}

	pa, pb := pairByCode(t, a, b)
	if pa.Room != pb.Room || !validCode(pa.Room) {
		t.Fatalf("rooms %q %q", pa.Room, pb.Room)
	}
	if pa.Role != signaling.RoleOfferer || pb.Role != signaling.RoleAnswerer {
		t.Fatalf("roles %v %v", pa.Role, pb.Role)
	}
	if pa.Token == "" || pb.Token == "" || pa.Token == pb.Token || len(wireToken(pa.Token)) != relayTokenLen || !strings.Contains(string(pa.Token), ".") {
		t.Fatalf("tokens %q %q", pa.Token, pb.Token)
	}
	if pa.ICEServers != nil {
		t.Fatalf("ICE servers %v from a server without TURN", pa.ICEServers)
	}
	exchange(t, a, b)

	// B leaves: A is told, stays in the room as offerer; C joins and pairs.
	if err := b.Leave(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, a, signaling.EventPeerLeft); ev.Room != pa.Room || ev.Reason != "left" {
		t.Fatalf("peer_left = %+v", ev)
	}
	c := dial(t, url, signaling.ClientConfig{})
	if err := c.JoinRoom(ctxT(t), string(pa.Room)); err != nil {
		t.Fatal(err)
	}
	pa2 := next(t, a, signaling.EventPaired).Pairing
	pc := next(t, c, signaling.EventPaired).Pairing
	if pa2.Role != signaling.RoleOfferer || pc.Role != signaling.RoleAnswerer || pa2.Token == pa.Token {
		t.Fatalf("re-pairing %+v %+v", pa2, pc)
	}
	exchange(t, a, c)

	// A disconnects: C learns it and becomes the offerer of the room.
	a.Close()
	if ev := next(t, c, signaling.EventPeerLeft); ev.Reason != "disconnected" {
		t.Fatalf("peer_left = %+v", ev)
	}
	st := s.Stats()
	if st.Pairings != 2 || st.Rooms != 1 || st.Relayed != 10 {
		t.Fatalf("stats = %+v", st)
	}
	if _, err := a.Recv(ctxT(t)); !errors.Is(err, signaling.ErrClosed) {
		t.Fatalf("Recv after Close = %v", err)
	}
	if err := a.SendOffer(ctxT(t), "x"); !errors.Is(err, signaling.ErrClosed) {
		t.Fatalf("SendOffer after Close = %v", err)
	}
}

func TestQuickMatch(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{})
	var cs [5]*signaling.Client
	for i := range cs {
		cs[i] = dial(t, url, signaling.ClientConfig{})
	}
	for i := 0; i < 4; i++ {
		if err := cs[i].QuickMatch(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	p0 := next(t, cs[0], signaling.EventPaired).Pairing
	p1 := next(t, cs[1], signaling.EventPaired).Pairing
	p2 := next(t, cs[2], signaling.EventPaired).Pairing
	p3 := next(t, cs[3], signaling.EventPaired).Pairing
	if p0.Room != p1.Room || p2.Room != p3.Room || p0.Room == p2.Room {
		t.Fatalf("rooms %v %v %v %v", p0.Room, p1.Room, p2.Room, p3.Room)
	}
	if p0.Role != signaling.RoleOfferer || p1.Role != signaling.RoleAnswerer || p2.Role != signaling.RoleOfferer || p3.Role != signaling.RoleAnswerer {
		t.Fatal("the player who waited longer must be the offerer")
	}
	exchange(t, cs[0], cs[1])
	exchange(t, cs[2], cs[3])

	// A lone player can leave the queue; queueing twice is wrong_state.
	if err := cs[4].QuickMatch(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := cs[4].QuickMatch(ctxT(t)); !errors.Is(err, signaling.ErrWrongState) {
		t.Fatalf("second quick = %v", err)
	}
	if st := s.Stats(); st.Queued != 1 || st.Pairings != 2 || st.Rooms != 2 {
		t.Fatalf("stats %+v", st)
	}
	if err := cs[4].Leave(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := cs[4].Leave(ctxT(t)); !errors.Is(err, signaling.ErrWrongState) {
		t.Fatalf("second leave = %v", err)
	}
	if st := s.Stats(); st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A queued player that disconnects is removed from the queue.
	cs[4].QuickMatch(ctxT(t))
	cs[4].Close()
	waitFor(t, func() bool { return s.Stats().Queued == 0 })
}

// waitFor polls cond until it holds. It has no time limit of its own,
// only the test binary's (testwait).
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	testwait.For(t, "the condition", cond)
}

// readDeadline bounds reads on c by the test binary's deadline only.
func readDeadline(t testing.TB, c net.Conn) {
	if d, ok := testwait.Deadline(t); ok {
		c.SetReadDeadline(d)
	}
}

func TestRelayStream(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{})
	a := dial(t, url, signaling.ClientConfig{})
	b := dial(t, url, signaling.ClientConfig{})
	pa, pb := pairByCode(t, a, b)

	// Both attach concurrently; DialRelay returns when both are there.
	var ca, cb net.Conn
	var ea, eb error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		ca, ea = signaling.DialRelay(ctxT(t), url, pa.Token, signaling.ClientConfig{})
	}()
	go func() {
		defer wg.Done()
		cb, eb = signaling.DialRelay(ctxT(t), url, pb.Token, signaling.ClientConfig{})
	}()
	wg.Wait()
	if ea != nil || eb != nil {
		t.Fatal(ea, eb)
	}
	defer ca.Close()
	defer cb.Close()

	// A wrong token is refused.
	bad := signaling.RelayToken(strings.Repeat("A", relayTokenLen))
	if _, err := signaling.DialRelay(ctxT(t), url, bad, signaling.ClientConfig{}); !errors.Is(err, signaling.ErrBadToken) {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := signaling.DialRelay(ctxT(t), url, "short", signaling.ClientConfig{}); !errors.Is(err, signaling.ErrBadToken) {
		t.Fatalf("malformed token: %v", err)
	}

	// 1 MiB each way at the same time.
	const n = 1 << 20
	send := func(c net.Conn, seed byte) error {
		buf := make([]byte, n)
		for i := range buf {
			buf[i] = seed + byte(i*7)
		}
		_, err := c.Write(buf)
		return err
	}
	recv := func(c net.Conn, seed byte) error {
		buf := make([]byte, n)
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		for i := range buf {
			if buf[i] != seed+byte(i*7) {
				return fmt.Errorf("byte %d = %d", i, buf[i])
			}
		}
		return nil
	}
	errs := make(chan error, 4)
	go func() { errs <- send(ca, 1) }()
	go func() { errs <- send(cb, 2) }()
	go func() { errs <- recv(cb, 1) }()
	go func() { errs <- recv(ca, 2) }()
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return s.Stats().RelayBytes == 2*n })
	if st := s.Stats(); st.RelaysActive != 1 || st.Relays != 1 {
		t.Fatalf("stats %+v", st)
	}

	// One side leaves: the other's stream ends.
	ca.Close()
	readDeadline(t, cb)
	if _, err := cb.Read(make([]byte, 1)); err == nil {
		t.Fatal("stream still open after the peer closed")
	}
	waitFor(t, func() bool { return s.Stats().RelaysActive == 0 })
}

func TestRelayRefusals(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{})
	{
		// The peer never comes: peer_timeout.
		_, url := startServer(t, Config{RelayWaitTimeout: 50 * time.Millisecond})
		a := dial(t, url, signaling.ClientConfig{})
		b := dial(t, url, signaling.ClientConfig{})
		pa, _ := pairByCode(t, a, b)
		if _, err := signaling.DialRelay(ctxT(t), url, pa.Token, signaling.ClientConfig{}); !errors.Is(err, signaling.ErrPeerTimeout) {
			t.Fatalf("lone relay: %v", err)
		}
		// The token may be used again after a timeout.
		if _, err := signaling.DialRelay(ctxT(t), url, pa.Token, signaling.ClientConfig{}); !errors.Is(err, signaling.ErrPeerTimeout) {
			t.Fatalf("lone relay again: %v", err)
		}
	}
	a := dial(t, url, signaling.ClientConfig{})
	b := dial(t, url, signaling.ClientConfig{})
	pa, pb := pairByCode(t, a, b)
	waiting := func(tok signaling.RelayToken) bool { return relayWaiting(s, tok) }

	// Giving up (ctx) frees the token.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	_, err := signaling.DialRelay(ctx, url, pa.Token, signaling.ClientConfig{})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("canceled relay: %v", err)
	}
	// The server frees the token when it sees the request gone.
	waitFor(t, func() bool { return !waiting(pa.Token) })
	// The pairing ends while A waits: refused, and the tokens are revoked.
	errc := make(chan error, 1)
	go func() { _, err := signaling.DialRelay(ctxT(t), url, pa.Token, signaling.ClientConfig{}); errc <- err }()
	waitFor(t, func() bool { return waiting(pa.Token) })
	if err := b.Leave(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, signaling.ErrBadToken) {
		t.Fatalf("revoked while waiting: %v", err)
	}
	if _, err := signaling.DialRelay(ctxT(t), url, pb.Token, signaling.ClientConfig{}); !errors.Is(err, signaling.ErrBadToken) {
		t.Fatalf("revoked token: %v", err)
	}

	// Plain HTTP requests to /relay get a JSON error.
	resp, err := http.Get(url + "/relay?v=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || !bytes.Contains(body, []byte(`"bad_message"`)) {
		t.Fatalf("%s %s", resp.Status, body)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestBadInput(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{MaxMessageBytes: 1024})
	// A healthy pair, checked after each abuse.
	a := dial(t, url, signaling.ClientConfig{})
	b := dial(t, url, signaling.ClientConfig{})
	pa, _ := pairByCode(t, a, b)
	healthy := func() {
		t.Helper()
		exchange(t, a, b)
	}

	// A third player gets room_full.
	c := dial(t, url, signaling.ClientConfig{})
	if err := c.JoinRoom(ctxT(t), string(pa.Room)); !errors.Is(err, signaling.ErrRoomFull) {
		t.Fatalf("third player: %v", err)
	}
	var e *signaling.Error
	if err := c.JoinRoom(ctxT(t), string(pa.Room)); !errors.As(err, &e) || !strings.Contains(e.Message, string(pa.Room)) || e.Ref != signaling.TypeJoin {
		t.Fatalf("room_full error should name the room: %v", err)
	}
	// Bad codes: the client refuses them; so does the server.
	if err := c.JoinRoom(ctxT(t), "0O1I!!"); !errors.Is(err, signaling.ErrBadRoomCode) {
		t.Fatalf("bad code: %v", err)
	}
	if err := c.JoinRoom(ctxT(t), "ZZZZZZ"); !errors.Is(err, signaling.ErrRoomNotFound) {
		t.Fatalf("no such room: %v", err)
	}
	healthy()

	r := dialRawOK(t, url)
	for _, tc := range []struct {
		send string
		code signaling.ErrorCode
	}{
		{`{"type":"join","room":"abc"}`, signaling.ErrBadRoomCode},
		{`{"type":"join","room":"ABCDE!"}`, signaling.ErrBadRoomCode},
		{`{"type":"join"}`, signaling.ErrBadRoomCode},
		{`not json`, signaling.ErrBadJSON},
		{`{"type":"create"`, signaling.ErrBadJSON},
		{`[1,2,3]`, signaling.ErrBadJSON},
		{`{"type":42}`, signaling.ErrBadJSON},
		{"{\"type\":\"create\",\"x\":\"\xff\"}", signaling.ErrBadJSON},
		{`{}`, signaling.ErrBadMessage},
		{`{"type":"launch_missiles"}`, signaling.ErrUnknownType},
		{`{"type":"paired","room":"ABCDEF","role":"offerer","token":"x"}`, signaling.ErrBadMessage},
		{`{"type":"offer","sdp":"v=0"}`, signaling.ErrWrongState},
		{`{"type":"answer","sdp":"v=0"}`, signaling.ErrWrongState},
		{`{"type":"candidate","candidate":{"candidate":"c"}}`, signaling.ErrWrongState},
		{`{"type":"offer"}`, signaling.ErrBadMessage},
		{`{"type":"candidate"}`, signaling.ErrBadMessage},
		{`{"type":"leave"}`, signaling.ErrWrongState},
	} {
		t.Run(tc.send, func(t *testing.T) {
			r.send(tc.send)
			r.expectError(tc.code)
		})
	}
	if err := r.conn.Write(ctxT(t), websocket.MessageBinary, []byte(`{"type":"create"}`)); err != nil {
		t.Fatal(err)
	}
	r.expectError(signaling.ErrBadMessage)
	// Messages in the wrong state once in a room.
	r.send(`{"type":"create"}`)
	joined := r.expect(signaling.TypeJoined)
	r.send(`{"type":"candidate","candidate":{"candidate":"c"}}`) // not paired yet
	r.expectError(signaling.ErrWrongState)
	// An offer while waiting is a late early offer: kept, no reply (the
	// errors below come after it), and delivered with the pairing.
	r.send(`{"type":"offer","sdp":"v=0 late"}`)
	r.send(`{"type":"join","room":"` + string(pa.Room) + `"}`)
	r.expectError(signaling.ErrWrongState)
	r.send(`{"type":"quick"}`)
	r.expectError(signaling.ErrWrongState)
	// Roles: the answerer may not offer, the offerer may not answer.
	r2 := dialRawOK(t, url)
	r2.send(`{"type":"join","room":"` + string(joined.Room) + `"}`)
	r2.expect(signaling.TypeJoined)
	r2.expect(signaling.TypePaired)
	r.expect(signaling.TypePaired)
	if m := r2.expect(signaling.TypeOffer); m.SDP != "v=0 late" {
		t.Fatalf("the answerer got %q, want the late early offer", m.SDP)
	}
	r2.send(`{"type":"offer","sdp":"v=0"}`)
	r2.expectError(signaling.ErrWrongState)
	r.send(`{"type":"answer","sdp":"v=0"}`)
	r.expectError(signaling.ErrWrongState)
	// Extra fields are not forwarded.
	r.send(`{"type":"offer","sdp":"v=0","token":"steal","room":"ABCDEF","evil":1}`)
	if m := r2.expect(signaling.TypeOffer); m.Token != "" || m.Room != "" || m.SDP != "v=0" {
		t.Fatalf("forwarded %+v", m)
	}
	healthy()

	// Oversized: error, then the connection is closed with 1009.
	r.send(`{"type":"offer","sdp":"` + strings.Repeat("x", 2000) + `"}`)
	r.expectError(signaling.ErrMessageTooBig)
	r.expectClosed(websocket.StatusMessageTooBig)
	// r's peer learns r is gone.
	if m := r2.expect(signaling.TypePeerLeft); m.Reason != "disconnected" {
		t.Fatalf("%+v", m)
	}
	healthy()
	// A huge (1 MiB) message is cut off too, without the server reading it all into memory.
	r3 := dialRawOK(t, url)
	r3.conn.Write(ctxT(t), websocket.MessageText, bytes.Repeat([]byte("x"), 1<<20))
	r3.expectError(signaling.ErrMessageTooBig)
	r3.expectClosed(websocket.StatusMessageTooBig)
	healthy()

	waitFor(t, func() bool { return s.Stats().Clients == 4 })
	if st := s.Stats(); st.Errors < 25 || st.LimitViolations != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestUnsupportedVersion(t *testing.T) {
	leaktest.Check(t)
	_, url := startServer(t, Config{})
	for _, q := range []string{"", "v=2", "v=x"} {
		t.Run(fmt.Sprintf("%q", q), func(t *testing.T) {
			r := dialRaw(t, url, q)
			r.expectError(signaling.ErrUnsupportedVersion)
			r.expectClosed(websocket.StatusProtocolError)
		})
	}
}

func TestRateLimit(t *testing.T) {
	leaktest.Check(t)
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s, url := startServer(t, Config{RatePerSec: 10, RateBurst: 5, Now: clock})
	a := dial(t, url, signaling.ClientConfig{KeepAlive: -1})
	b := dial(t, url, signaling.ClientConfig{KeepAlive: -1})
	pairByCode(t, a, b) // 1 message each

	r := dialRawOK(t, url)
	for i := 0; i < 5; i++ {
		r.send(`{"type":"ping"}`)
	}
	r.send(`{"type":"create"}`) // dropped
	r.expectError(signaling.ErrRateLimited)
	r.send(`{"type":"create"}`) // dropped silently
	waitFor(t, func() bool { return s.Stats().RateLimited == 2 })
	advance(time.Second) // refills the bucket
	r.send(`{"type":"create"}`)
	r.expect(signaling.TypeJoined)
	exchange(t, a, b) // 3 messages from a, 2 from b: within a's burst after 1s

	// Keep flooding while limited: closed with 1008.
	for i := 0; i < 20; i++ {
		if err := r.conn.Write(ctxT(t), websocket.MessageText, []byte(`{"type":"ping"}`)); err != nil {
			break
		}
	}
	r.expectError(signaling.ErrRateLimited)
	r.expectError(signaling.ErrRateLimited)
	r.expectClosed(websocket.StatusPolicyViolation)
	advance(time.Second)
	exchange(t, a, b)
}

func TestTokenBucket(t *testing.T) {
	now := time.Unix(0, 0)
	b := newTokenBucket(2, 3, now)
	for i := 0; i < 3; i++ {
		if !b.allow(now) {
			t.Fatalf("burst message %d refused", i)
		}
	}
	if b.allow(now) {
		t.Fatal("4th message allowed")
	}
	now = now.Add(499 * time.Millisecond)
	if b.allow(now) {
		t.Fatal("allowed before a token refilled")
	}
	now = now.Add(2 * time.Millisecond)
	if !b.allow(now) {
		t.Fatal("refused after a token refilled")
	}
	now = now.Add(time.Hour)
	n := 0
	for b.allow(now) {
		n++
	}
	if n != 3 {
		t.Fatalf("after a long pause %d allowed, want burst 3", n)
	}
	if b.allow(now.Add(-time.Second)) { // clock going back adds nothing
		t.Fatal("clock going back refilled")
	}
}

// TestIdleTimeout runs in virtual time (synctest, the server on an
// in-memory listener): whether a keepalive client survives the idle
// timeout must not depend on how fast a loaded machine runs its pings.
func TestIdleTimeout(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, testIdleTimeout)
}

func testIdleTimeout(t *testing.T) {
	s, url, mn := startMemServer(t, Config{IdleTimeout: 150 * time.Millisecond})
	// A silent connection is closed with idle_timeout.
	r := dialRawVia(t, mn.hc, url, "v=1")
	r.expect(signaling.TypeWelcome)
	r.expectError(signaling.ErrIdleTimeout)
	r.expectClosed(websocket.StatusPolicyViolation)
	// A client that keeps alive survives several idle timeouts, waiting in a room.
	a := dial(t, url, mn.client(signaling.ClientConfig{KeepAlive: 30 * time.Millisecond}))
	if _, err := a.CreateRoom(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// A client without keepalive is told why it was closed.
	b := dial(t, url, mn.client(signaling.ClientConfig{KeepAlive: -1}))
	ev := next(t, b, signaling.EventError)
	if !errors.Is(ev.Err, signaling.ErrIdleTimeout) {
		t.Fatalf("event %+v", ev)
	}
	if _, err := b.Recv(ctxT(t)); !errors.Is(err, signaling.ErrIdleTimeout) {
		t.Fatalf("Recv = %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	select {
	case <-a.Done():
		t.Fatal("keepalive client was closed")
	default:
	}
	if st := s.Stats(); st.IdleTimeouts != 2 || st.Clients != 1 || st.Rooms != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRoomAndConnLimits(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{MaxRooms: 2, MaxConns: 5})
	var cs [5]*signaling.Client
	for i := range cs {
		cs[i] = dial(t, url, signaling.ClientConfig{})
	}
	// A sixth connection: server_full, and the connection is closed.
	if _, err := signaling.Dial(ctxT(t), url, signaling.ClientConfig{}); !errors.Is(err, signaling.ErrServerFull) {
		t.Fatalf("6th conn: %v", err)
	}
	code0, err := cs[0].CreateRoom(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs[1].CreateRoom(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[2].CreateRoom(ctxT(t)); !errors.Is(err, signaling.ErrTooManyRooms) {
		t.Fatalf("3rd room: %v", err)
	}
	// Quick match needs a room too: the second player is refused, the first stays queued.
	if err := cs[2].QuickMatch(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := cs[3].QuickMatch(ctxT(t)); !errors.Is(err, signaling.ErrTooManyRooms) {
		t.Fatalf("quick at the room limit: %v", err)
	}
	// Joining an existing room still works at the limit.
	if err := cs[4].JoinRoom(ctxT(t), string(code0)); err != nil {
		t.Fatal(err)
	}
	next(t, cs[0], signaling.EventPaired)
	next(t, cs[4], signaling.EventPaired)
	if st := s.Stats(); st.Rooms != 2 || st.Queued != 1 {
		t.Fatalf("stats %+v", st)
	}
	// A room closes: room for one more, and the queued player gets paired.
	if err := cs[1].Leave(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := cs[3].QuickMatch(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	p2 := next(t, cs[2], signaling.EventPaired).Pairing
	p3 := next(t, cs[3], signaling.EventPaired).Pairing
	if p2.Room != p3.Room || p2.Role != signaling.RoleOfferer {
		t.Fatalf("%+v %+v", p2, p3)
	}
	exchange(t, cs[2], cs[3])
	// A closed connection frees a slot.
	cs[4].Close()
	waitFor(t, func() bool { return s.Stats().Clients == 4 })
	dial(t, url, signaling.ClientConfig{})
}

func TestHealthz(t *testing.T) {
	leaktest.Check(t)
	_, url := startServer(t, Config{})
	a := dial(t, url, signaling.ClientConfig{})
	b := dial(t, url, signaling.ClientConfig{})
	pairByCode(t, a, b)
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || st.Status != "ok" || st.Rooms != 1 || st.Clients != 2 || st.Pairings != 1 || st.Version != 1 {
		t.Fatalf("%d %+v", resp.StatusCode, st)
	}
	resp2, err := hc.Get(url + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 404 {
		t.Fatal(resp2.Status)
	}
}

func TestShutdown(t *testing.T) {
	leaktest.Check(t)
	s, err := New(Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.Serve(l) }()
	url := "http://" + l.Addr().String()

	a := dial(t, url, signaling.ClientConfig{})
	b := dial(t, url, signaling.ClientConfig{})
	c := dial(t, url, signaling.ClientConfig{})
	if err := c.QuickMatch(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	pa, pb := pairByCode(t, a, b)
	var ra, rb net.Conn
	done := make(chan struct{})
	go func() { ra, _ = signaling.DialRelay(ctxT(t), url, pa.Token, signaling.ClientConfig{}); close(done) }()
	rb, err = signaling.DialRelay(ctxT(t), url, pb.Token, signaling.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if ra == nil {
		t.Fatal("relay a failed")
	}
	defer ra.Close()
	defer rb.Close()

	// The relay drains: data still flows while Shutdown waits for it.
	shutErr := make(chan error, 1)
	shutCtx, stopDrain := context.WithCancel(context.Background())
	defer stopDrain()
	go func() { shutErr <- s.Shutdown(shutCtx) }()
	for _, cl := range []*signaling.Client{a, b, c} {
		for {
			ev, err := cl.Recv(ctxT(t))
			if err != nil {
				if !errors.Is(err, signaling.ErrShuttingDown) {
					t.Fatalf("Recv = %v, want ErrShuttingDown", err)
				}
				break
			}
			if ev.Kind == signaling.EventError && !errors.Is(ev.Err, signaling.ErrShuttingDown) {
				t.Fatalf("event %+v", ev)
			}
		}
	}
	if _, err := ra.Write([]byte("still here")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(rb, buf); err != nil || string(buf) != "still here" {
		t.Fatalf("relay during drain: %q %v", buf, err)
	}
	select {
	case err := <-shutErr:
		t.Fatalf("Shutdown returned %v while a relay was open", err)
	default:
	}
	// The relay never ends by itself: the end of the drain closes it.
	stopDrain()
	if err := <-shutErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown = %v", err)
	}
	readDeadline(t, rb)
	if _, err := rb.Read(buf); err == nil {
		t.Fatal("relay open after shutdown")
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve = %v", err)
	}
	if st := s.Stats(); st.Clients != 0 || st.RelaysActive != 0 || st.Status != "shutting_down" {
		t.Fatalf("stats %+v", st)
	}
	// A new connection is refused.
	if _, err := signaling.Dial(ctxT(t), url, signaling.ClientConfig{}); err == nil {
		t.Fatal("dial after shutdown succeeded")
	}
	// Through the handler (the listener is closed), the refusal is coded.
	rec := &recorder{header: http.Header{}}
	req, _ := http.NewRequest("GET", "/ws?v=1", nil)
	s.ServeHTTP(rec, req)
	if m, err := signaling.DecodeMessage(rec.body.Bytes()); rec.status != 503 || err != nil || m.Code != signaling.ErrShuttingDown {
		t.Fatalf("%d %q", rec.status, rec.body.String())
	}
	// Shutdown with nothing open returns at once.
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A server used as a plain http.Handler (here under httptest-like serving
// by net/http) also shuts down its WebSockets.
func TestHandlerShutdown(t *testing.T) {
	leaktest.Check(t)
	s, err := New(Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s}
	go hs.Serve(l)
	defer hs.Close()
	a := dial(t, "ws://"+l.Addr().String(), signaling.ClientConfig{})
	if err := s.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := a.Recv(ctxT(t))
		if err != nil {
			if !errors.Is(err, signaling.ErrShuttingDown) {
				t.Fatal(err)
			}
			break
		}
	}
	// The listener still accepts (it is not the server's): new connections
	// are refused with a coded error.
	if _, err := signaling.Dial(ctxT(t), "ws://"+l.Addr().String(), signaling.ClientConfig{}); !errors.Is(err, signaling.ErrShuttingDown) {
		t.Fatalf("dial after shutdown: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{{MaxRooms: -1}, {IdleTimeout: -time.Second}, {MaxMessageBytes: 10}} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			if _, err := New(cfg); err == nil {
				t.Errorf("New(%+v) succeeded", cfg)
			}
		})
	}
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	c := s.Config()
	if c.MaxMessageBytes != 16<<10 || c.RatePerSec != 20 || c.RateBurst != 40 || c.IdleTimeout != time.Minute ||
		c.MaxConns != 10000 || c.MaxRooms != 5000 || c.MaxRelays != 1000 || c.RelayWaitTimeout != 30*time.Second {
		t.Fatalf("defaults %+v", c)
	}
}

// dialRelayPair attaches both players of a pairing to the relay, reaching
// the server as cc does.
func dialRelayPair(t *testing.T, cc signaling.ClientConfig, url string, pa, pb signaling.Pairing) (net.Conn, net.Conn, error) {
	t.Helper()
	var ca, cb net.Conn
	var ea, eb error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ca, ea = signaling.DialRelay(ctxT(t), url, pa.Token, cc) }()
	go func() { defer wg.Done(); cb, eb = signaling.DialRelay(ctxT(t), url, pb.Token, cc) }()
	wg.Wait()
	if ca != nil {
		t.Cleanup(func() { ca.Close() })
	}
	if cb != nil {
		t.Cleanup(func() { cb.Close() })
	}
	return ca, cb, errors.Join(ea, eb)
}

// TestRelayIdleAndLimit runs in virtual time (synctest, the server on an
// in-memory listener): one-way traffic every 150 ms keeps a relay with a
// 500 ms idle timeout alive however slowly a loaded machine runs it.
func TestRelayIdleAndLimit(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, testRelayIdleAndLimit)
}

func testRelayIdleAndLimit(t *testing.T) {
	s, url, mn := startMemServer(t, Config{MaxRelays: 1, RelayIdleTimeout: 500 * time.Millisecond, RelayWaitTimeout: 100 * time.Millisecond})
	cc := mn.client(signaling.ClientConfig{})
	a, b := dial(t, url, cc), dial(t, url, cc)
	c, d := dial(t, url, cc), dial(t, url, cc)
	pa, pb := pairByCode(t, a, b)
	pc, pd := pairByCode(t, c, d)
	ra, rb, err := dialRelayPair(t, cc, url, pa, pb)
	if err != nil {
		t.Fatal(err)
	}
	// The second stream is over MaxRelays: too_many_relays.
	if _, _, err := dialRelayPair(t, cc, url, pc, pd); !errors.Is(err, signaling.ErrTooManyRelays) {
		t.Fatalf("second relay: %v", err)
	}
	// Traffic in one direction only keeps the stream alive past the idle timeout.
	for i := 0; i < 6; i++ {
		if _, err := ra.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		var one [1]byte
		if _, err := io.ReadFull(rb, one[:]); err != nil || one[0] != byte(i) {
			t.Fatalf("byte %d: %v %v", i, one, err)
		}
		time.Sleep(150 * time.Millisecond)
	}
	// Then silence: the server closes both sides.
	readDeadline(t, rb)
	if _, err := rb.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle stream: %v", err)
	}
	readDeadline(t, ra)
	if _, err := ra.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle stream, other side: %v", err)
	}
	waitFor(t, func() bool { return s.Stats().RelaysActive == 0 })
	if st := s.Stats(); st.RelayBytes != 6 || st.RelaysRefused == 0 {
		t.Fatalf("stats %+v", st)
	}
}

type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(status int)      { r.status = status }
func (r *recorder) Write(p []byte) (int, error) { return r.body.Write(p) }
