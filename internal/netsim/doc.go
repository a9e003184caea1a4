// Package netsim simulates impaired network links in virtual time, for tests
// and simulators of real-time netcode.
//
// A [Link] carries datagrams in one direction. It is driven entirely by the
// caller's notion of time (a time.Duration since any origin): [Link.Send]
// schedules a copy of a packet for delivery, [Link.Deliver] hands over every
// packet whose arrival time has come, in arrival order, and
// [Link.NextArrival] tells an event-driven simulator how far it may jump. A
// [Pair] is two links, one per direction. Everything is seeded
// (math/rand/v2 PCG): the same [Config], seed and sequence of calls give the
// same trace, bit for bit. A Link does not allocate in steady state: packet
// bytes are copied into pooled buffers that are reused.
//
// # Impairment model
//
// For each packet passed to Send at time now, in this order:
//
//  1. Bandwidth (optional, [Config.Bandwidth] bytes per second): the packet
//     is serialized after the packets before it, so it leaves the sender at
//     depart = max(now, previous departure) + size/Bandwidth. If it would wait
//     longer than [Config.MaxQueueDelay] it is tail-dropped (LostQueue).
//     Without a bandwidth cap, depart = now.
//  2. Burst loss ([Config.BurstLoss], [Config.BurstLen]): a Gilbert–Elliott
//     chain with a Good state (nothing lost) and a Bad state (everything
//     lost), stepped once per packet. With mean burst length B and long-run
//     loss fraction q, P(Bad→Good) = r = 1/B and P(Good→Bad) = p = q·r/(1−q),
//     so bursts (runs of Bad) are geometric with mean B and the stationary
//     share of Bad is p/(p+r) = q (LostBurst).
//  3. Random loss ([Config.Loss]): independent, probability Loss per packet
//     (LostRandom).
//  4. Delay: latency + U, with U uniform on [−Jitter, +Jitter] drawn
//     independently per packet, clamped so the delay is never negative. With
//     probability [Config.Reorder] the packet is additionally held back by
//     [Config.ReorderDelay]. Packets are not FIFO: a later packet whose draw
//     is smaller overtakes an earlier one. arrival = depart + delay.
//  5. Blackouts: a packet whose time on the link, the closed interval
//     [now, arrival], overlaps a blackout window [start, end) is dropped
//     (LostBlackout). The link behaves like a path that is down: packets sent
//     during the window and packets that would arrive during it are lost.
//     Windows are periodic ([Config.BlackoutEvery], [Config.BlackoutFor],
//     [Config.BlackoutPhase]) and/or explicit ([Config.Blackouts]).
//  6. Duplication ([Config.Duplicate]): with that probability a copy is
//     scheduled to arrive U(0, DuplicateDelay] after the original. The copy
//     goes through the blackout check of its own.
//
// A loss is counted in exactly one category: queue, then burst, then random,
// then blackout, in the order above. Every random draw comes from the link's
// own generator, so two links never influence each other.
//
// The zero [Config] is a perfect link: no delay, no loss, no duplicates,
// packets delivered in the order sent at the time they were sent.
//
// # Presets
//
// [LAN], [Broadband], [Mobile], [Spike] and [Awful] describe whole round
// trips the way people quote them ("150 ms ping, ±30 ms"). [RoundTrip]
// turns such figures into a one-direction Config: Latency = RTT/2 and
// Jitter = jitter/2, so that the round trip of two independent directions
// ranges over RTT ± jitter (the sum of two uniform draws, a triangular
// distribution). Loss and duplicate probabilities apply per direction. Use
// the same Config for both directions of a [Pair] (see [NewPair]); look
// presets up by name with [Preset].
//
// # Real time
//
// [Pipe] and [PacketConn] run the same model on a real (injected) [Clock]:
// a goroutine waits for the next arrival and then hands the packet to a send
// function or writes it to a net.PacketConn. They are for tests of real
// transports and for a demo's -lag/-jitter/-loss flags. Close stops the
// goroutine and drops what is still in flight.
package netsim
