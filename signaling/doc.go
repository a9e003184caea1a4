// Package signaling pairs two players of a ragsync game and carries what
// they need to connect to each other: a server (rooms by code, quick match,
// SDP offer/answer and trickled ICE candidate relay, a TCP relay for when
// WebRTC cannot get through) and its client. It knows nothing about physics
// or WebRTC itself: SDP and candidates are opaque strings to it. Package
// p2p builds sessions on it; a game only starts a server (Start, or
// cmd/signal) and passes its URL to p2p.
// # Endpoints
//
// One HTTP address serves everything (Server is an http.Handler):
//
//	GET /ws?v=1     WebSocket, the JSON signaling protocol below
//	GET /relay?v=1  HTTP Upgrade to a raw TCP byte stream between two paired players
//	GET /healthz    JSON counters: rooms, clients, queued, pairings, relays, bytes
//
// # Signaling protocol, version 1
//
// Every message is one WebSocket text message holding one JSON object with a
// "type" field. Unknown fields are ignored (so later versions can add
// optional ones); unknown types are an error. The version is chosen by the
// client with the v query parameter of the WebSocket URL and confirmed by
// the server's welcome; a missing or different v gets an
// unsupported_version error and the connection is closed.
//
// Client → server:
//
//	create                     create a private room; you are its offerer.    reply: joined
//	join       room, create    join a room by code; you are its answerer.     reply: joined, then paired to both
//	                           With "create":true and no such room, it is created with that code
//	                           and you are its offerer (two players who agreed on a code both send
//	                           this, in either order).                           reply: joined
//	quick                      wait for the next quick-match player.          reply: queued, later paired to both
//	leave                      leave your room or the queue.                  reply: left; the peer gets peer_left
//	offer      sdp             offerer only, when paired: relayed to the peer as offer
//	answer     sdp             answerer only, when paired: relayed to the peer as answer
//	candidate  candidate       when paired: relayed to the peer as candidate
//	ping                       keepalive (counts as activity).                reply: pong
//
// Server → client:
//
//	welcome    v, limits       first message on every connection
//	joined     room, role      you are in room as role (offerer|answerer), not yet paired if offerer
//	queued                     you are in the quick-match queue
//	paired     room, role, token   the room has two players; token is your relay token
//	peer_left  room, reason    the other player left ("left") or lost its connection ("disconnected");
//	                           you stay in the room as its offerer, waiting for a new player
//	left       room            you left (room is empty if you left the queue)
//	offer / answer / candidate the peer's message, same fields as sent
//	pong                       reply to ping
//	error      code, message, ref   see below
//
// Fields: room is a room code (RoomCodeLen characters of RoomCodeAlphabet;
// lower case is accepted); role is "offerer" or "answerer"; sdp is a
// session description string; candidate is an object shaped like
// RTCIceCandidateInit: {"candidate", "sdpMid", "sdpMLineIndex",
// "usernameFragment"}, an empty "candidate" meaning end of candidates;
// limits is {"max_message_bytes", "rate_per_sec", "rate_burst",
// "idle_timeout_ms"}.
//
// Roles: the first player in a room is the offerer (the room's creator, or
// the quick-match player who waited longer) and sends the offer; the second
// is the answerer. Both learn their role in joined and paired. When a player
// leaves, the one who stays becomes the offerer of the now half-empty room,
// and a new pairing issues new relay tokens.
//
// Errors: {"type":"error","code":"room_full","message":"room 7KQ2MX already
// has two players","ref":"join"}. code is stable (the ErrorCode
// constants, ErrRoomFull and so on, which are also the errors a Client
// returns), message is for humans, ref is the type of the message that
// caused it.
// After message_too_big, idle_timeout, unsupported_version, server_full and
// shutting_down the server closes the connection (status 1009, 1008, 1002,
// 1013 and 1001). rate_limited drops the message; a client that keeps
// sending while limited (another burst's worth) is closed with 1008.
// bad_json, bad_message, unknown_type, wrong_state, bad_room_code,
// room_not_found, room_full and too_many_rooms leave the connection usable.
//
// Example (A creates, B joins; → is client to server):
//
//	A ← {"type":"welcome","v":1,"limits":{...}}
//	A → {"type":"create"}
//	A ← {"type":"joined","room":"7KQ2MX","role":"offerer"}
//	B → {"type":"join","room":"7kq2mx"}
//	B ← {"type":"joined","room":"7KQ2MX","role":"answerer"}
//	B ← {"type":"paired","room":"7KQ2MX","role":"answerer","token":"Zk3…"}
//	A ← {"type":"paired","room":"7KQ2MX","role":"offerer","token":"q9P…"}
//	A → {"type":"offer","sdp":"v=0…"}            B ← {"type":"offer","sdp":"v=0…"}
//	B → {"type":"answer","sdp":"v=0…"}           A ← {"type":"answer","sdp":"v=0…"}
//	A → {"type":"candidate","candidate":{"candidate":"candidate:1 1 udp …","sdpMid":"0"}}
//	                                             B ← the same candidate
//	B → {"type":"join","room":"7KQ2MX"}          B ← {"type":"error","code":"wrong_state",…,"ref":"join"}
//	C → {"type":"join","room":"7KQ2MX"}          C ← {"type":"error","code":"room_full",…,"ref":"join"}
//	B closes                                     A ← {"type":"peer_left","room":"7KQ2MX","reason":"disconnected"}
//
// # TCP relay
//
// When WebRTC cannot connect (or pings worse), the two players of a pairing
// can exchange bytes through the server over the same HTTP port, which
// works from behind NAT like any outgoing TCP connection:
//
//	GET /relay?v=1 HTTP/1.1
//	Host: …
//	Connection: Upgrade
//	Upgrade: ragsync-relay/1
//	Authorization: Bearer <token from paired>
//
// The server checks the token (issued with crypto/rand, per pairing and per
// player, single use), then holds the request until the other player's
// request with its own token arrives (Config.RelayWaitTimeout). Then both
// get "HTTP/1.1 101 Switching Protocols" and the connection becomes a raw
// byte stream to the peer. A refusal is an HTTP error whose body is a JSON
// error message: 426 bad_message (not a relay upgrade), 400
// unsupported_version, 403 bad_token
// (unknown, malformed or revoked), 409 token_used, 503 too_many_relays or
// shutting_down, 504 peer_timeout. A token whose holder gave up waiting (or
// timed out) may be used again; one that reached 101 may not. When the
// pairing ends (a player leaves), unused tokens are revoked; an established
// stream lives on until either side closes it, it idles for
// Config.RelayIdleTimeout, or the server shuts down. The server copies each
// direction through one bounded buffer (Config.RelayBufferBytes), so a
// reader that stops reading stalls its sender by TCP flow control; when
// either side closes, both connections are closed. DialRelay is the client
// side.
//
// # Limits
//
// Config lists every limit with its default: message size, message rate
// (token bucket per connection), idle timeout, number of connections, rooms
// and relays, and relay timeouts. Each is reported to the client with an
// error code as above.
package signaling
