package p2p

import "time"

// liveness is what the session knows of the peer's presence: when
// anything last arrived from it, when an interruption began, what the
// signaling server said of it, and the local loop's runs, whose gaps are
// this process's stalls (time it stood still is not the peer's silence).
// Under Session.mu.
type liveness struct {
	readyAt      time.Duration // when the session started running
	lastRecv     time.Duration // when a valid message last arrived
	silentSince  time.Duration // when the current interruption began
	goodbye      string        // the signaling server said the peer left ("" if not, or it is back)
	sigLost      bool          // our signaling connection is down (being re-established)
	sigBackUntil time.Duration // a silence is waited for until then after it came back
	sigBack      bool          // sigBackUntil is set
	lastTick     time.Duration // when the loop last ran
	ticked       bool          // lastTick is set
	late         time.Duration // how late the last run was (its gap less tickInterval)
}

// loopRan records a run of the loop at now and returns the stall it ends,
// if the gap since the previous run is much longer than the loop's period.
func (l *liveness) loopRan(now time.Duration) (from time.Duration, stalled bool) {
	from, stalled = l.lastTick, l.ticked && now-l.lastTick > tickInterval+stallSlack
	l.late = 0
	if l.ticked {
		l.late = max(now-l.lastTick-tickInterval, 0)
	}
	l.lastTick, l.ticked = now, true
	return from, stalled
}

// silence returns how long nothing has arrived at now, not counting the
// local stalls in st.
func (l *liveness) silence(now time.Duration, st *stalls) time.Duration {
	return now - st.after(l.lastRecv)
}

// serverGrace is how long a silent peer is waited for while the signaling
// server is unreachable (the signaling server's default RejoinGrace): a
// relay-only match has no path at all while the server, which carries
// the relay, restarts, but both peers are alive and will be back; each
// keeps the other's place for that long.
const serverGrace = 30 * time.Second

// silentTooLong reports whether a silence at now ends the session: one
// of d (Config.DisconnectAfter) or more, except while the signaling
// server is unreachable (up to serverGrace) and for d after it is back
// (the relay, which runs through it, is dialled again meanwhile).
func (l *liveness) silentTooLong(silence, d, now time.Duration) bool {
	switch {
	case l.sigLost:
		return silence >= max(d, serverGrace)
	case l.sigBack && now < l.sigBackUntil:
		return false
	}
	return silence >= d
}

// signaling records that the signaling connection was lost or is back
// at now; d is Config.DisconnectAfter.
func (l *liveness) signaling(lost bool, now, d time.Duration) {
	if l.sigLost && !lost {
		l.sigBackUntil, l.sigBack = now+d, true
	}
	l.sigLost = lost
}
