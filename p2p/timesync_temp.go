package p2p

import (
	"encoding/binary"
	"time"
)

// timeSync is what the session needs from clock synchronisation:
// timestamped ping/pong payloads and an offset estimate fed with the four
// NTP timestamps (t1 ping sent, t2 ping received by the peer, t3 pong sent
// by the peer, t4 pong received), all as durations since the Unix epoch on
// the respective peer's clock.
type timeSync interface {
	appendPing(dst []byte, t1 time.Duration) []byte
	appendPong(dst, ping []byte, t2, t3 time.Duration) ([]byte, error)
	parsePong(pong []byte) (t1, t2, t3 time.Duration, err error)
	addSample(t1, t2, t3, t4 time.Duration)
	// pingInterval is the interval the calibrator wants between pings.
	pingInterval(now time.Duration) time.Duration
	offset(now time.Duration) (offset, uncertainty time.Duration, synced bool)
}

// tempSync is a placeholder until clocksync lands.
type tempSync struct {
	samples [8]struct{ off, delay time.Duration }
	n, next int
}

func (s *tempSync) appendPing(dst []byte, t1 time.Duration) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t1))
}

func (s *tempSync) appendPong(dst, ping []byte, t2, t3 time.Duration) ([]byte, error) {
	if len(ping) != 8 {
		return dst, wireErr(ErrShortMessage, ping)
	}
	dst = append(dst, ping...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(t2))
	return binary.BigEndian.AppendUint64(dst, uint64(t3)), nil
}

func (s *tempSync) parsePong(p []byte) (t1, t2, t3 time.Duration, err error) {
	if len(p) != 24 {
		return 0, 0, 0, wireErr(ErrShortMessage, p)
	}
	return time.Duration(binary.BigEndian.Uint64(p)), time.Duration(binary.BigEndian.Uint64(p[8:])),
		time.Duration(binary.BigEndian.Uint64(p[16:])), nil
}

func (s *tempSync) addSample(t1, t2, t3, t4 time.Duration) {
	s.samples[s.next].off = ((t2 - t1) + (t3 - t4)) / 2
	s.samples[s.next].delay = (t4 - t1) - (t3 - t2)
	s.next = (s.next + 1) % len(s.samples)
	if s.n < len(s.samples) {
		s.n++
	}
}

func (s *tempSync) pingInterval(time.Duration) time.Duration { return 200 * time.Millisecond }

func (s *tempSync) offset(time.Duration) (time.Duration, time.Duration, bool) {
	if s.n == 0 {
		return 0, 0, false
	}
	best := s.samples[0]
	for _, x := range s.samples[1:s.n] {
		if x.delay < best.delay {
			best = x
		}
	}
	return best.off, best.delay / 2, s.n >= 4
}
