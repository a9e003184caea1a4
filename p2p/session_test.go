package p2p

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/testwait"
	"github.com/ragsync/ragsync/signaling"
)

// exchange sends n numbered messages each way, paced, and returns how many
// each side received (checking they are intact and unique). It has no time
// limit of its own: each side receives until it has all n, or until the
// peer has sent all n and everything that can still arrive has (see
// drained); what is missing then was lost. A slow machine makes it take
// longer, never count less. When it returns, each side's Stats agree with
// what was drained.
func exchange(t *testing.T, a, b *Session, n int) (gotA, gotB int) {
	t.Helper()
	deadline, bounded := testwait.Deadline(t)
	var wg sync.WaitGroup
	var doneA, doneB atomic.Bool // the sender has sent all n
	recv := func(s, peer *Session, peerDone *atomic.Bool, got *int) {
		defer wg.Done()
		base := s.Stats()
		var tail *tailWatch
		seen := make(map[uint32]bool)
		deliver := func(p []byte) {
			if len(p) != 100 {
				t.Errorf("message of %d bytes", len(p))
				return
			}
			id := uint32(p[0])<<24 | uint32(p[1])<<16 | uint32(p[2])<<8 | uint32(p[3])
			if seen[id] {
				t.Errorf("message %d delivered twice", id)
			}
			seen[id] = true
			*got++
		}
		for pause := time.Duration(0); *got < n; {
			if s.Poll(deliver) > 0 {
				pause = 0
				continue
			}
			if peerDone.Load() {
				if tail == nil {
					tail = watchTail(peer)
				}
				if drained(s, base, *got, n, tail) {
					return
				}
			}
			if bounded && time.Now().After(deadline) {
				t.Errorf("recv: gave up near the test binary's deadline with %d of %d messages", *got, n)
				return
			}
			pause = min(max(2*pause, 50*time.Microsecond), 5*time.Millisecond)
			time.Sleep(pause)
		}
	}
	send := func(s *Session, done *atomic.Bool) {
		defer wg.Done()
		defer done.Store(true)
		msg := make([]byte, 100)
		for i := 0; i < n; i++ {
			msg[0], msg[1], msg[2], msg[3] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
			if err := s.Send(msg); err != nil {
				t.Errorf("send: %v", err)
				return
			}
			// Paced like a game (one message of a kind per tick, just
			// faster): on TCP, a message sent before the writer goroutine
			// wrote the previous one of its kind would supersede it by
			// design (latest-only), so the pace also waits for the writer
			// (which a loaded machine runs later).
			time.Sleep(time.Millisecond)
			if !testwait.Until(t, func() bool { return tcpWritten(s) }) {
				t.Errorf("send: the TCP writer never caught up (gave up near the test binary's deadline)")
				return
			}
		}
	}
	wg.Add(4)
	go recv(a, b, &doneB, &gotA)
	go recv(b, a, &doneA, &gotB)
	go send(a, &doneA)
	go send(b, &doneB)
	wg.Wait()
	return gotA, gotB
}

// tcpWritten reports whether s's TCP transport, if it carries the data,
// has written every frame it accepted.
func tcpWritten(s *Session) bool {
	tr := s.tr.tcp.Load()
	return tr == nil || TransportKind(s.active.Load()) != TransportTCP || !tr.unwritten() || s.Stats().TCP.State != LinkUp
}

// tailWatch records, once a sender has sent its last message, how many
// pongs it had received on each transport.
type tailWatch struct {
	sender *Session
	pongs  [2]uint64 // WebRTC, TCP
}

func watchTail(sender *Session) *tailWatch {
	st := sender.Stats()
	return &tailWatch{sender: sender, pongs: [2]uint64{st.WebRTC.PongsReceived, st.TCP.PongsReceived}}
}

// pingedSince reports whether the sender has had two more pongs on its
// active transport since the watch began: then at least one ping it sent
// after its last message has reached the receiver, behind that message.
func (w *tailWatch) pingedSince() bool {
	st := w.sender.Stats()
	if st.Transport == TransportTCP {
		return st.TCP.PongsReceived >= w.pongs[1]+2
	}
	return st.WebRTC.PongsReceived >= w.pongs[0]+2
}

// drained reports whether the receiver s, having drained got messages, has
// nothing more to come from a sender that has sent all n: it has drained
// every message its session accepted since base, and either it has seen
// the sender's last message or a later ping of the sender's has arrived.
func drained(s *Session, base Stats, got, n int, tail *tailWatch) bool {
	st := s.Stats()
	accepted := (st.Received - st.RecvOverflow) - (base.Received - base.RecvOverflow)
	if accepted != uint64(got) {
		return false
	}
	return st.Expected-base.Expected >= uint64(n) || tail.pingedSince()
}

func TestSessionRoomExchange(t *testing.T) {
	leaktest.Check(t)
	url := startSignaling(t)
	a, b := pairByRoom(t, url, cfgWith(nil), cfgWith(nil))
	if a.Role() != signaling.RoleOfferer || b.Role() != signaling.RoleAnswerer {
		t.Fatalf("roles %v, %v", a.Role(), b.Role())
	}
	const n = 1000
	gotA, gotB := exchange(t, a, b, n) // returns with the stats settled
	sa, sb := a.Stats(), b.Stats()
	t.Logf("offerer: transport %v (%s), rtt %v, recv %d, lost %d", sa.Transport, sa.ChoiceReason, sa.RTT.Smoothed, gotA, sa.Lost)
	t.Logf("answerer: transport %v, recv %d", sb.Transport, gotB)
	if sa.Transport != sb.Transport || sa.Transport == TransportUnknown {
		t.Errorf("transports differ: %v vs %v", sa.Transport, sb.Transport)
	}
	for _, c := range []struct {
		name string
		got  int
		st   Stats
	}{{"offerer", gotA, sa}, {"answerer", gotB, sb}} {
		t.Run(c.name, func(t *testing.T) {
			if c.got < n*95/100 {
				t.Errorf("%s received %d of %d", c.name, c.got, n)
			}
			if c.st.Received != uint64(c.got) {
				t.Errorf("%s: Stats.Received %d, drained %d", c.name, c.st.Received, c.got)
			}
			if c.st.Sent != n {
				t.Errorf("%s: Stats.Sent %d, want %d", c.name, c.st.Sent, n)
			}
			if c.st.Duplicates != 0 || c.st.Malformed != 0 {
				t.Errorf("%s: %d duplicates, %d malformed", c.name, c.st.Duplicates, c.st.Malformed)
			}
		})
	}
}
