// Package wire holds the few relay wire constants that both sides of
// signaling spell: the client (package signaling) and the server (package
// signaling/server). The relay's wire format is documented where the
// server implements it, in signaling/server's relay_server.go and
// relay_ws.go.
package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// RelayUpgrade is the Upgrade token of the raw relay endpoint.
const RelayUpgrade = "ragsync-relay/1"

// RelayAttached is the server's text message once a WebSocket relay
// stream runs.
const RelayAttached = `{"type":"relay_attached"}`

// RelayHello is the client's first WebSocket relay message, the answer
// to the server's RelayChallenge.
type RelayHello struct {
	Type  string `json:"type"`
	Token string `json:"token"`
	Proof string `json:"proof,omitempty"`
}

// RelayChallenge is the server's first WebSocket relay message.
type RelayChallenge struct {
	Type      string `json:"type"` // "relay_challenge"
	Challenge string `json:"challenge"`
}

// Headers of the raw relay's proof of possession: a request without
// ProofHeader is answered 401 with a challenge in ChallengeHeader; the
// client asks again with "<challenge>.<proof>" in ProofHeader.
const (
	ProofHeader     = "Ragsync-Relay-Proof"
	ChallengeHeader = "Ragsync-Relay-Challenge"
)

// Proof purposes: a relay attachment, a rejoin.
const (
	ProofRelay  = "relay"
	ProofRejoin = "rejoin"
)

// Proof is a seat's proof of possession of its key for token, over a
// server challenge: base64url (unpadded) of HMAC-SHA256(key, purpose 0x00
// challenge 0x00 token), the key being the seat key string as sent in
// paired.
func Proof(key, purpose, challenge, token string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(challenge))
	m.Write([]byte{0})
	m.Write([]byte(token))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Limits of an ice_servers entry, shared by the protocol's validation and
// the server's TURN configuration.
const (
	MaxICEURLs     = 4
	MaxICEFieldLen = 256
)

// Truncate cuts s to n bytes for an error message, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
