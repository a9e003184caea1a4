// Package signaling is the client side of ragsync's signaling and its wire
// protocol: what two players of a ragsync game need to pair (rooms by
// code, quick match, SDP offer/answer and trickled ICE candidate relay, a
// TCP relay for when WebRTC cannot get through). It holds the protocol
// types, Client and the relay dialers (DialRelay, DialRelayWebSocket). It
// knows nothing about physics or WebRTC itself: SDP and candidates are
// opaque strings to it.
//
// The server is package signaling/server; Server, Config and TURNConfig
// below are its names. This package does not import it, so a client (the
// browser build among them) links neither the server, Prometheus, NATS nor
// the TURN server. The server is meant to be put on the internet: every
// limit also applies per client address, it exports Prometheus metrics,
// and it can run a TURN server for players whose NATs block direct UDP.
//
// # Endpoints
//
// One HTTP address serves everything (Server is an http.Handler):
//
//	GET /ws?v=1     WebSocket, the JSON signaling protocol below
//	GET /relay?v=1  HTTP Upgrade to a raw TCP byte stream between two paired players,
//	                or a WebSocket carrying the same stream (see signaling/server/relay_ws.go)
//	GET /healthz    JSON counters: rooms, clients, queued, pairings, relays, bytes
//	GET /metrics    Prometheus metrics (see signaling/server/metrics.go for the list; Config.HideMetrics
//	                moves them to Server.MetricsHandler only, Config.MetricsToken puts them behind
//	                a bearer token; cmd/signal serves them on 127.0.0.1:9464 by default)
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
//	create     sdp?, spare?    create a private room; you are its offerer.    reply: joined
//	join       room, create, sdp?, spare?
//	                           join a room by code; you are its answerer      reply: joined, then paired to both
//	                           (its offerer if your early offer wins; see Early offers).
//	                           With "create":true and no such room, it is created with that code
//	                           and you are its offerer (two players who agreed on a code both send
//	                           this, in either order).                           reply: joined
//	quick      sdp?, spare?    wait for the next quick-match player.          reply: queued, later paired to both
//	leave                      leave your room or the queue.                  reply: left; the peer gets peer_left
//	rejoin     token, proof    take your place in your pairing back, with     reply: joined, then paired to both
//	                           your relay token and a proof of possession        once both are there
//	                           of its seat key (see Rejoining)
//	offer      sdp             offerer only, when paired: relayed to the peer as offer.
//	                           While waiting (queued, or alone in a room): a late early offer
//	                           (see Early offers); no reply
//	answer     sdp             answerer only, when paired: relayed to the peer as answer
//	candidate  candidate       when paired: relayed to the peer as candidate
//	ice_servers                when paired: fresh TURN credentials.           reply: ice_servers
//	ping                       keepalive (counts as activity).                reply: pong
//
// Server → client:
//
//	welcome    v, limits, challenge, turn?
//	                           first message on every connection; challenge is this connection's
//	                           nonce for rejoin proofs; turn: paired will carry TURN servers
//	joined     room, role      you are in room as role (offerer|answerer), not yet paired if you created
//	                           it (then role is offerer, unless the joiner brings an early offer)
//	queued                     you are in the quick-match queue
//	paired     room, role, token, key, ice_servers
//	                           the room has two players; token is your relay token, key its
//	                           seat key (keep both, show neither: see Proof of possession);
//	                           ice_servers, if present, are STUN/TURN servers for WebRTC
//	peer_left  room, reason    the other player left ("left") or lost its connection and did not come
//	                           back ("disconnected"): you stay in the room as its offerer, waiting
//	                           for a new player; or its connection just dropped and its place is
//	                           kept for it to rejoin ("dropped"), the pairing goes on
//	left       room            you left (room is empty if you left the queue)
//	offer / answer / candidate the peer's message, same fields as sent
//	ice_servers  ice_servers   reply to ice_servers: the pairing's ICE servers with fresh credentials
//	                           (none if the server runs no TURN)
//	pong                       reply to ping
//	error      code, message, ref   see below
//
// Fields: room is a room code (RoomCodeLen characters of RoomCodeAlphabet;
// lower case is accepted); role is "offerer" or "answerer"; sdp is a
// session description string; candidate is an object shaped like
// RTCIceCandidateInit: {"candidate", "sdpMid", "sdpMLineIndex",
// "usernameFragment"}, an empty "candidate" meaning end of candidates;
// limits is {"max_message_bytes", "rate_per_sec", "rate_burst",
// "idle_timeout_ms"} (a client must not send a message over
// max_message_bytes: Client refuses to, with ErrMessageTooBig);
// ice_servers is a list of objects shaped like RTCIceServer: {"urls":
// ["turn:203.0.113.10:3478?transport=udp", …], "username", "credential"},
// at most 4 entries of at most 4 URLs.
//
// Roles: the first player in a room is the offerer (the room's creator, or
// the quick-match player who waited longer) and sends the offer; the second
// is the answerer. Both learn their role in joined and paired. When a player
// leaves, the one who stays becomes the offerer of the now half-empty room,
// and a new pairing issues new relay tokens.
//
// Early offers: create, join and quick may carry "sdp", a WebRTC offer made
// before the pairing. The server keeps it while the player waits; if the
// player is the offerer of the pairing, the answerer gets it as an offer
// message right after paired, and the offerer sends no offer of its own
// (trickled candidates gathered after it follow as usual). A player who
// brings an early offer is the offerer even if the other waited longer
// (quick match) or created the room, unless that one brought one too;
// then the usual rule holds and the answerer's early offer is discarded.
// With "spare":true an early offer yields: against one that is not spare
// it loses whoever waited longer, and it wins only where its sender
// would be the offerer anyway, or against no early offer. A client quick
// to answer sends a spare one (p2p does natively): it saves the pairing
// two messages through the server (paired to the offerer, then the
// offer), and a browser's offer, not spare, still wins against it.
// The role in a creator's joined is therefore the role it has if the
// joiner brings no early offer: the role in paired is the one that
// counts. A client
// slow to answer, such as a browser page (every step of an answer waits
// for the page's one thread), connects faster as the offerer with its offer
// made while it waited; p2p does this in a browser. An early offer holds no
// candidates of the pairing's ice_servers (they come with paired): a client
// that needs them renegotiates with a new offer (see offer above). A
// welcome with "turn":true says paired will carry TURN servers; p2p then
// sends no spare early offer.
//
// Late early offers: a player whose early offer is not ready when it
// joins (a loaded machine) may join without it and send it as an offer
// message while it waits (after queued or joined, before paired): the
// server keeps it as if it had come with the join. An offer that reaches
// the server after the pairing is an ordinary offer: relayed if the
// sender is the offerer, refused (wrong_state) if it is the answerer.
// Either way, a player that sent its offer before it got paired, and is
// the offerer, must not send another: the answerer gets that one. A
// server older than this refuses an offer before the pairing with
// wrong_state (ref "offer") at once, so before paired: a client that got
// that error before paired, and is the offerer, sends its offer again
// after paired.
//
// Errors: {"type":"error","code":"room_full","message":"room 7KQ2MX already
// has two players","ref":"join"}. code is stable (the ErrorCode constants, ErrX),
// message is for humans, ref is the type of the message that caused it.
// After message_too_big, idle_timeout, unsupported_version, server_full,
// too_many_conns and shutting_down the server closes the connection (status
// 1009, 1008, 1002, 1013, 1008 and 1001). rate_limited drops the message; a
// client that keeps sending over its connection's rate (another burst's
// worth) is closed with 1008. bad_json, bad_message, unknown_type,
// wrong_state, bad_room_code, room_not_found, room_full, too_many_rooms and
// too_many_failed_joins leave the connection usable. A connection refused
// before the WebSocket upgrade gets an HTTP error whose body is an error
// message: 400 bad_message (a trusted proxy sent no client address), 429
// too_many_handshakes, 503 shutting_down. A browser page from an origin
// that is neither the server's own nor in Config.OriginPatterns gets
// origin_not_allowed right after the upgrade and a 1008 close, on /ws and
// on the WebSocket relay, so it can tell why (a refusal before the upgrade
// would reach it only as close code 1006).
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
// With TURN (see below), paired also carries the ICE servers:
//
//	A ← {"type":"paired",…,"ice_servers":[{"urls":["turn:203.0.113.10:3478?transport=udp",
//	     "turn:203.0.113.10:3478?transport=tcp"],"username":"1767225600:7KQ2MX-…-offerer",
//	     "credential":"q1X…="},{"urls":["stun:203.0.113.10:3478"]}]}
//
// # Rejoining
//
// A paired player whose WebSocket ends without a leave (a dropped
// connection, a crashed or killed process, a server restart) keeps its
// place for Config.RejoinGrace (30 s): the pairing and its relay tokens
// stay valid, nobody else can join the room, and the other player gets
// peer_left "dropped" at once. The player takes its place back by
// connecting again and sending rejoin with its relay token; the server
// answers joined (room, role: the same as before) and, once both players
// are there, sends both paired again (same room, roles and pairing, fresh
// tokens). If the player holds the place on a connection the server has
// not seen drop, that connection is closed (token_used): the newer one
// wins. When the grace runs out, the pairing ends as after a leave
// (peer_left "disconnected"). A server restarted with the same
// Config.Secret (or another instance with it) accepts rejoin for a
// pairing it never saw, on the token's signature: the first player back
// gets a room with the token's code and its place, the other place kept
// for RejoinGrace, so both players of a match find each other again.
// rejoin carries "proof": the seat's proof of possession over the
// connection's welcome challenge (see Proof of possession); a token
// without it takes no place. rejoin errors: bad_token (forged, expired,
// no or a wrong proof, or the pairing has ended),
// wrong_state (already in a room or the queue), too_many_rooms.
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
// The server answers "401 Unauthorized" with a challenge in the header
// Ragsync-Relay-Challenge, keeping the connection; the client sends the
// request again on it with "Ragsync-Relay-Proof: <challenge>.<proof>"
// (see Proof of possession; a challenge is good for 1 minute and once).
// The server checks the token and the proof, then holds the request until the other
// player's request with its own token arrives (Config.RelayWaitTimeout).
// Then both get "HTTP/1.1 101 Switching Protocols" and the connection
// becomes a raw byte stream to the peer. A refusal is an HTTP error whose
// body is a JSON error message: 426 bad_message (not a relay upgrade), 400
// unsupported_version, 403 bad_token (malformed, forged, expired, a
// missing, wrong or replayed proof, or its pairing has ended), 409 token_used (a newer request with the same token
// replaced this one), 429 too_many_conns, 503 too_many_relays or
// shutting_down, 504 peer_timeout. An established stream lives on until
// either side closes it, no byte has moved in either direction for
// Config.RelayIdleTimeout, or the server shuts down. The server copies each
// direction through one bounded buffer (Config.RelayBufferBytes); a
// player that stops reading first stalls its sender by TCP flow control,
// and once a write to it has waited Config.WriteTimeout the stream is
// closed. When either side closes, both connections are closed. DialRelay
// is the client side.
//
// Re-attaching: a token may be used again until its pairing ends (a player
// leaves the room or disconnects) or it expires. There is at most one
// request and one stream per player: a newer request with a token replaces
// the older one. An older request still waiting is refused with
// token_used; an established stream of that pairing is closed (both of its
// connections, since a byte stream cannot be spliced), and the newer
// request waits for the other player, who sees its stream end and dials
// again with its own token. So a player whose relay connection dropped
// re-dials with the token it has, even before the server has noticed the
// drop.
//
// Tokens are signed, so a server verifies them without remembering them:
// a server restarted with the same Config.Secret (or another instance with
// it) accepts the tokens of pairings it never saw, until they expire, and
// both players re-dialling it get a new stream. A token is 64 characters of
// unpadded base64url encoding 48 bytes:
//
//	offset size
//	 0      1   version, 1
//	 1      8   instance: random per server process
//	 9      8   pairing: random per pairing
//	17      6   room code, ASCII
//	23      1   role: 1 offerer, 2 answerer
//	24      8   expiry, Unix seconds, big-endian (Config.CredentialTTL after pairing)
//	32     16   HMAC-SHA256(K, bytes 0-31), first 16 bytes,
//	            K = HMAC-SHA256(Config.Secret, "ragsync relay token v1")
//
// A token of this process's instance is also checked against its rooms
// (the pairing must be the room's current one); one of another instance is
// taken on its signature.
//
// # Proof of possession
//
// A relay token alone takes nothing: it travels in relay requests and may
// end up in a proxy's log. paired also gives each player its seat key,
//
//	key = base64url(HMAC-SHA256(KS, token)), KS = HMAC-SHA256(Config.Secret, "ragsync seat key v1")
//
// which never leaves the client again; every use of the token carries a
// proof made with it over a challenge of the server:
//
//	proof = base64url(HMAC-SHA256(key, purpose 0x00 challenge 0x00 token))   (unpadded; the key's
//	                                                                         characters are the HMAC key)
//
// purpose "rejoin" over the welcome's challenge for rejoin, "relay" over
// the raw relay's 401 challenge or the WebSocket relay's relay_challenge
// for the relay. The key is derived from the token with the secret, so a
// restarted server or another instance with the same Config.Secret
// accepts the proofs of a pairing it never saw: a resume needs the token
// and its key, nothing the server must remember. A request with a token
// and no proof, or a wrong one, is refused with bad_token before it
// touches the pairing: the owner's stream and place stay as they are.
// Client keeps the two together: Pairing.Token is "<token>.<key>", and
// DialRelay, DialRelayWebSocket and Client.Rejoin send only the token and
// the proof.
//
// # TURN
//
// With Config.TURN the server runs a TURN server (pion/turn) on UDP and/or
// TCP, and paired carries, per player, an ice_servers entry with its
// turn: URLs and credentials of the TURN REST scheme: username
// "<expiry Unix seconds>:<room>-<pairing hex>-<role>", credential
// base64(HMAC-SHA1(K, username)), K = HMAC-SHA256(Config.Secret, "ragsync
// turn v1"); and an entry with its stun: URL. Give both to WebRTC as ICE
// servers.
//
// The credentials are for the pairing: the TURN server accepts them while
// their pairing is current (so a long match's allocation keeps
// refreshing), and once it has ended (both players left, or a player did
// not come back) only until their expiry, TURNConfig.CredentialTTL (5
// min) after they were issued. A paired player gets fresh ones, with a new
// expiry, by sending ice_servers (Client.RenewICEServers); an unpaired one
// gets wrong_state.
//
// A client may relay only to the addresses in the other player's
// candidates of its pairing, as they passed through the server (candidate
// messages, and a=candidate lines of offers and answers; at most 32 per
// player), and of those never to loopback, private, link-local, metadata
// (169.254.169.254, fd00:ec2::254, 100.100.100.200) or other special
// addresses (TURNConfig.LAN and AllowPeers open all but metadata), nor to
// the server's own addresses: the relay address is permitted (two
// relayed players reach each other there) but a packet to it, or from it,
// on any port that is not another allocation's relayed port (the TURN
// ports, the signaling port, any other service) is dropped. The TURN
// server also refuses expired or forged credentials, more than
// TURNConfig.MaxAllocations allocations, and more than
// TURNConfig.MaxPerAddr allocations or TCP connections from one address.
//
// # Limits
//
// Config lists every limit with its default, and each is reported to the
// client with an error code as above. Server-wide: message size, message
// rate (a token bucket per connection), idle timeout, number of
// connections, rooms and relays, relay timeouts. Per client address (the
// direct peer's, or the one a trusted proxy reports, Config.TrustedProxies;
// IPv6 grouped by /64; and, scaled up, per network, see below):
//
//	connections      WebSockets, relay requests and streams    100     too_many_conns
//	rooms            rooms held as offerer, queue places         50     too_many_rooms
//	messages         over all its WebSockets                 100/s, burst 200: over it,
//	                                                         messages wait their turn
//	failed joins     room_not_found, room_full, or a       0.2/s, burst 10   too_many_failed_joins
//	                 join that creates the room
//	handshakes       TCP connections not yet a WebSocket         16     429 too_many_handshakes
//	                 or relay stream (Serve only)
//	header timeout   request headers, TLS included               5 s    connection closed
//
// The failed-join budget is what makes guessing room codes useless: an
// address gets one miss every 5 s, so landing in one of 1,000 waiting
// rooms among the 32⁶ codes takes it about 62 days on average, and an
// address that runs out is refused without the room being looked up.
//
// Networks: one host may hold many addresses (a /48 has 65,536 /64s, a
// rented /24 256 IPv4 addresses), so each per-address limit but the
// header timeout also applies to the networks an address is in, scaled
// up: by default 10× per IPv4 /24, 4× per IPv6 /56 and 10× per IPv6 /48
// (Config.IPv4Prefixes, Config.IPv6Prefixes). A /48 or /24 then holds at
// most 1,000 connections and 500 rooms and misses 2 joins a second,
// however many of its addresses it uses; the refusal's message names the
// network. The trade-off: players behind one carrier-grade NAT already
// share one address's limits, and now the other addresses of the
// carrier's /24 pool (or a mobile operator's /48 of per-device /64s) share
// ten times those; a deployment with many players behind one carrier
// raises the factor for it.
package signaling
