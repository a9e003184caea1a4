package p2p

import "github.com/ragsync/ragsync/clocksync"

// The session calibrates the two peers' clocks as it pings: every ping and
// pong carries clocksync's four NTP timestamps, and the session's
// clocksync.Calibrator (the offerer is the leader, the answerer follows)
// turns them into an offset estimate and a shared game clock. These
// methods expose it to the sync layer; they are safe for concurrent use and
// do not allocate.

// GameTime returns the shared game time now, and whether it is synced
// (always on the offerer, the leader; on the answerer once calibrated).
func (s *Session) GameTime() (clocksync.GameTime, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ping.cal.GameTime()
}

// StartMatch tells the calibrator the match has started: it pings less
// often, and the follower's game clock only slews from now on (never
// backwards). The session still pings the active transport at least every
// Config.PingInterval for liveness.
func (s *Session) StartMatch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ping.cal.StartMatch()
}

// ClockStats returns the calibrator's statistics (estimate, drift, RTT,
// ping counters, game clock error).
func (s *Session) ClockStats() clocksync.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ping.cal.Stats()
}
