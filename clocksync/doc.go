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
// # The asymmetry bias and its bound
//
// So the follower's game time runs ahead of the leader's by
//
//	bias = (d(follower→leader) − d(leader→follower)) / 2
//
// (negative: it runs behind), taking the smallest one-way delays of each
// direction, and for any path |bias| < minimal round trip / 2. On a 10 ms /
// 250 ms path it is 120 ms. A leader's state received after a one-way
// delay d looks d + bias old on the follower, and a follower's state
// d − bias old on the leader: with the minimal delays, both read half the
// round trip. One direction's age is overstated by |bias|, the other's
// understated by as much; their sum, the round trip, is right.
// Estimate.Uncertainty bounds the bias; Stats.PeerClockError cannot see
// it. cmd/ragsim measures its effect per direction (visual_delay_ab_ms,
// visual_delay_ba_ms).
//
// # Estimation
//
// Each completed exchange is a Sample (offset and round trip, as above).
// The calibrator keeps a window of them (EstimatorConfig) and estimates:
//
//   - the offset, from the smallest one-way delays in each direction: the
//     per-direction form of NTP's minimum-delay clock filter. Each sample
//     bounds the offset from above by t2 − t1 and from below by t3 − t4;
//     the tightest bound on each side over the window, each from whichever
//     sample had the smallest delay in that direction, brackets it, and the
//     estimate is the middle. With random queueing delay the minimum of one
//     direction over n samples is within about spread/n of the true
//     minimum, while the best round trip is only within about spread/√n.
//   - the drift between the clocks (ppm), as the slope of the widest
//     corridor separating the forward bounds (above) from the backward
//     bounds (below) over minutes of history: the two-sided form of the
//     linear-programming skew estimate of Moon, Skelly and Towsley (1999).
//     While it is uncertain it is weighed against a mixture prior: mostly
//     0 ± 100 ppm (quartz), rarely 0 ± 3,000 ppm (a throttled or virtual
//     clock). A clock up to 5,000 ppm off either way is tracked
//     (EstimatorConfig.MaxDriftPPM).
//   - an error bound (Estimate.Uncertainty) that holds for any asymmetry,
//     and the jitter of single exchanges; samples that claim a negative
//     one-way delay against the others (clock steps, corrupted timestamps)
//     are outliers and ignored.
//
// The round trips go to an RTTEstimator (Stats.RTT): RFC 6298 smoothing,
// and the minimum, median, 95th percentile and maximum of the last 10 s.
// p2p keeps one per transport, fed with the samples the calibrator returns.
//
// Measured in virtual time over internal/netsim (see sim_test.go): from a 10 s
// initial offset on a LAN (10 ± 1 ms RTT) the game clocks agree within
// 1 ms after the first exchange; on a 100 ms ± 20 ms RTT link with 5 %
// loss each way and 100 ppm of drift, after 10 s of calibration, the 95th
// percentile of |error| over the next minute is 0.35 ms (median of 10
// runs; 0.74 ms worst), and after the first minute the error stays below
// 0.2 ms for as long as the match lasts.
//
// # The game clock
//
// One peer is the leader (Config.Leader; a p2p session's offerer): its
// game time is its local clock minus an epoch. The other, the follower,
// runs a game clock steered toward
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
// answers pings and turns pongs into samples for the estimate and the game
// clock. Both peers ping; the leader's samples give it RTT statistics and
// the follower's clock error as it sees it.
//
// # Messages
//
// Calibration messages are small fixed-size binary messages (a 15-byte
// ping, a 39-byte pong carrying the four timestamps and the responder's game
// time) whose first byte is Magic, so they can share a link with a game's
// own packets; the layout is documented in internal/clockwire. Malformed
// ones are rejected with an error matching ErrMalformed, and a pong is
// accepted only if it echoes a ping still outstanding (at most 64, for at
// most Config.PingTimeout), once, with timestamps and game time within ±2⁶⁰
// ns (36 years) that a real exchange can produce (otherwise a
// *TimestampError).
//
// # The timestamp filter
//
// Filter, per stream of states, drops a state whose timestamp is not newer
// than the last accepted one (Duplicate, OutOfOrder), or older than
// MaxDelay (default 500 ms) against the current game time (TooOld), or
// more than MaxAhead (default 1 s) in the future (TooNew), which would
// otherwise block the stream.
package clocksync
