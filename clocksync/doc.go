// Package clocksync gives two peers a shared game clock, calibrated
// iteratively over an unreliable channel, and the timestamp filter that
// drops duplicate, out-of-order and stale states.
//
// Every state a peer sends carries its game time (GameTime, int64
// microseconds). The receiver compares it with its own game time to drop
// stale states (Filter) and to know how old a state is (for latency
// compensation). That only works if both peers' game clocks agree, which
// is what the rest of the package is for. It knows nothing about physics
// or transports: the caller carries the calibration messages, and the time
// comes from an injected Clock, so everything runs unchanged in virtual
// time (ManualClock, SkewedClock) under a simulator.
//
// # Four timestamps
//
// A pinger stamps t1 on its local clock and sends a ping; the peer stamps
// t2 on receipt and t3 on reply, on its own clock; the pinger stamps t4
// when the pong arrives. With θ the peer's clock minus ours and dfwd, dback
// the one-way delays:
//
//	t2 = t1 + θ + dfwd,   t4 = t3 − θ + dback
//
//	offset θ̂ = ((t2 − t1) + (t3 − t4)) / 2 = θ + (dfwd − dback)/2
//	delay  δ = (t4 − t1) − (t3 − t2)      = dfwd + dback
//
// (NTP, RFC 5905 §8.) The offset is exact when the path is symmetric. In
// general it is off by half the asymmetry, (dfwd − dback)/2, and nothing
// the two endpoints can measure reveals it: a path of 20 ms one way and
// 80 ms back gives exactly the timestamps of a symmetric 50/50 ms path
// between clocks whose offset is 30 ms smaller. Only the bound |θ̂ − θ| ≤ δ/2
// holds for any asymmetry (Estimate.Uncertainty). This is a physical
// limit, not a weakness of the estimator; it is why the game clocks of two
// peers on an asymmetric route disagree by half the asymmetry, and why the
// leader's measurement of the follower's clock error (Stats.PeerClockError)
// reads zero all the same.
//
// # Estimation
//
// NewSample turns the four timestamps into a Sample; an Estimator keeps a
// window of them and estimates the offset (from the smallest one-way
// delays in each direction, the per-direction form of NTP's minimum-delay
// clock filter), the drift between the clocks (ppm, from the widest
// corridor between the forward and backward delay envelopes over minutes of
// history, weighed against a prior while it is uncertain) and an error
// bound. See Estimator for the math.
//
// Measured in virtual time over p2p/netsim (see sim_test.go): from a 10 s
// initial offset on a LAN (10 ± 1 ms RTT) the game clocks agree within
// 1 ms after the first exchange; on a 100 ms ± 20 ms RTT link with 5 %
// loss each way and 100 ppm of drift, after 10 s of calibration, the 95th
// percentile of |error| over the next minute is 0.35 ms (median of 10
// runs; 0.74 ms worst), and after the first minute the error stays below
// 0.2 ms for as long as the match lasts.
//
// # The game clock
//
// One peer is the leader (for example the session's offerer): its game
// time is its local clock minus an epoch. The other, the follower, runs a
// GameClock steered toward
//
//	follower local time + estimated offset − leader's epoch
//
// Before the match it steps freely. Once the match runs it only slews: its
// rate stays within ±5 % (GameClockConfig.MaxSlew) of the local clock's and
// it never goes backwards; a large error ahead is stepped forward, one
// behind is slewed away however long it takes. Between samples it runs at
// the estimated drift, so it keeps tracking the leader's clock through
// packet loss and blackouts.
//
// # The calibrator
//
// A Calibrator drives all this for one peer: Poll says when to ping (16 Hz
// while calibrating and until the drift is known, then 4 Hz), Handle
// answers pings and feeds pongs to the Estimator and the GameClock. Both
// peers ping; the leader's samples give it RTT statistics and the
// follower's clock error as it sees it.
//
// # Wire format
//
// Calibration messages are fixed-size, big-endian, timestamps in signed
// nanoseconds of the sender's local Clock:
//
//	ping (PingLen = 15 bytes)
//	  0  u8   Magic 0xC5 (clocksync, version 1)
//	  1  u8   Kind 1
//	  2  u8   flags: bit 0 = sender is the leader; other bits zero
//	  3  u32  seq: the pinger's sequence number
//	  7  i64  t1
//
//	pong (PongLen = 39 bytes)
//	  0  u8   Magic 0xC5
//	  1  u8   Kind 2
//	  2  u8   flags: bit 0 = sender is the leader, bit 1 = game time
//	          valid, bit 2 = sender's match running; other bits zero
//	  3  u32  seq: the ping's
//	  7  i64  t1: the ping's, echoed
//	 15  i64  t2: ping received, responder's clock
//	 23  i64  t3: pong sent, responder's clock
//	 31  i64  game: responder's game time at t3, µs (0 unless bit 1)
//
// A message of any other length, magic, kind or flags is rejected with a
// *WireError. The follower learns the leader's epoch from the leader's
// pongs (t3 − game). A pong is accepted only if it echoes the seq and t1
// of a ping still outstanding (at most 64, for at most PingTimeout), once,
// and if its timestamps and game time are within ±2⁶⁰ ns (36 years) and
// consistent (see NewSample); otherwise a *TimestampError.
//
// # The timestamp filter
//
// Filter is the seed's rule, per stream of states: drop a state whose
// timestamp is not newer than the last accepted one (Duplicate,
// OutOfOrder), or older than MaxDelay (default 500 ms) against the current
// game time (TooOld); and, beyond the seed, one more than MaxAhead (default
// 1 s) in the future (TooNew), which would otherwise block the stream.
package clocksync
