package p2p

import (
	"time"

	"github.com/ragsync/ragsync/clocksync"
)

// The session calibrates the two peers' clocks as it pings: every ping and
// pong carries clocksync's four NTP timestamps, and the session's
// clocksync.Calibrator (the offerer is the leader, the answerer follows)
// turns them into an offset estimate and a shared game clock. These
// methods expose it to the sync layer; they are safe for concurrent use and
// do not allocate.

// Clock returns the session's local clock (Config.Clock, or the default
// wall-aligned monotonic clock). Its readings are the "local" times the
// methods below take.
func (s *Session) Clock() clocksync.Clock { return s.clock }

// GameTime returns the shared game time now, and whether it is synced
// (always on the offerer, the leader; on the answerer once calibrated).
func (s *Session) GameTime() (clocksync.GameTime, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cal.GameTime()
}

// GameTimeAt returns the game time at local time local.
func (s *Session) GameTimeAt(local time.Duration) (clocksync.GameTime, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cal.GameTimeAt(local)
}

// StartMatch tells the calibrator the match has started: it pings less
// often, and the follower's game clock only slews from now on (never
// backwards). The session still pings the active transport at least every
// Config.PingInterval for liveness.
func (s *Session) StartMatch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cal.StartMatch()
}

// SetEpoch (offerer only) sets the local time at which game time is zero;
// see clocksync.Calibrator.SetEpoch.
func (s *Session) SetEpoch(local time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cal.SetEpoch(local)
}

// ClockStats returns the calibrator's statistics (estimate, drift, RTT,
// ping counters, game clock error).
func (s *Session) ClockStats() clocksync.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cal.Stats()
}
