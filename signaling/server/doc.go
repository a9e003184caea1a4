// Package server is ragsync's signaling server: the other side of package
// signaling's Client and relay dialers. It pairs players (rooms by code,
// quick match), forwards their offers, answers and candidates, keeps a
// dropped player's place for rejoin, relays the byte streams of players
// WebRTC cannot connect, and optionally runs a TURN server (pion/turn).
// It enforces server-wide and per-address limits and exports Prometheus
// metrics.
//
// The wire protocol, the relay and the limits are documented in package
// signaling; Start runs a server in a program of its own (cmd/signal, the
// demo, tests), New and Server.Serve give full control.
//
// # Clustering
//
// The cluster logic runs on a backbone (Config.NATS): key-value buckets
// and messages between nodes. A single server (the zero NATSConfig) keeps
// them in its own memory, so it needs nothing installed and links no NATS
// server, yet runs the same code as a cluster, and links no NATS at all.
// Several servers become one population on NATS with JetStream: either
// each embeds a nats-server, routed into one NATS cluster
// (NATSConfig.ClusterListen, ClusterRoutes), or they connect to an
// existing NATS deployment (NATSConfig.URL). Either way the program sets
// NATSConfig.Connect to natsclient.Connect (the one package that links the
// NATS client) and, to embed, NATSConfig.Embed to natsembed.Start (the
// one that links nats-server), as cmd/signal does. NATS does all the
// distributed work: there is no gossip or consensus of ours.
//
// The design, and why:
//
//   - A room lives on one node, its owner: the node of the player who
//     made it (or, for a quick-match pairing, the node holding the queue).
//     The key-value bucket ragsync_rooms (JetStream's, on NATS) maps
//     each room code to its owner; a code is taken with the bucket's
//     atomic Create, so two nodes never make the same room, and keys have
//     a TTL (10 min, refreshed by their owner) so a dead node's rooms fade
//     out. The room
//     itself (players, pairing, kept places) is the owner's memory, as on
//     one server, so one code path decides everything about a room and no
//     state needs merging.
//   - A player whose room is on another node is served there through a
//     proxy: its node forwards its messages to the owner on the owner's
//     subject ragsync.node.<id>, and the owner's messages to it come back
//     on the player's node's subject, addressed by player id (per-player
//     delivery over one subscription per node). Each message the owner
//     sends says whether the player still holds a place there, so the
//     player's node knows where its next message goes.
//   - Quick match has one queue in the cluster, on the node named by the
//     key "home" of ragsync_quick: that node pairs, as a single server
//     does, so two players are never left waiting on two nodes.
//   - Relay and rejoin tokens are signed with the shared Secret, so any
//     node checks them with no state; what a token needs from the
//     cluster is its room, found through ragsync_rooms. A relay stream
//     whose players reached different nodes is joined through NATS
//     (ragsync_relay names each side's node; the bytes flow on the
//     pairing's subjects, untouched).
//   - A node's death is seen through NATS itself: a request to a node
//     with no subscription gets "no responders" at once. A rejoin or a
//     join that finds the room's owner dead takes the room's key over
//     with a compare-and-set on its revision (one node wins) and makes the
//     room again from the token, as after a restart; players of other
//     nodes whose room was on the dead node are rejoined (paired) or
//     queued again (quick match) by their own node, or told
//     room_not_found (waiting in a room by code: join_or_create again).
//   - Until JetStream is ready (a clustered JetStream needs a quorum of
//     its nodes for a meta leader), a node serves, reports "starting" in
//     /healthz (503), and answers creates, joins, quick matches and
//     rejoins with the error unavailable rather than waiting. A single
//     server's store is ready at once.
//
// Limits in a cluster: each of n nodes (NATSConfig.Nodes, by default one
// per route) enforces limit/n of every per-address limit, rounded up, so
// one address spread over the nodes gets at most its limit plus n-1 (the
// stated tolerance), with no per-message coordination; the cost is that
// an address whose players all reach one node gets that node's share
// only. /metrics carries the node label (Config.Node); /healthz has a
// nats object: connected, routes, JetStream ready (server "local" on a
// single server).
package server
