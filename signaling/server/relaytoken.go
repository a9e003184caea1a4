package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ragsync/ragsync/signaling"
	"github.com/ragsync/ragsync/signaling/internal/wire"
)

// Relay tokens are self-contained: a server verifies one with its secret
// alone, so a restarted server (or another instance with the same
// Config.Secret) accepts the tokens of pairings it does not remember.
//
//	token = base64url, unpadded, of these 48 bytes:
//	  0  version   1 byte   1
//	  1  instance  8 bytes  random per server process
//	  9  pairing   8 bytes  random per pairing
//	 17  room      6 bytes  the room code, ASCII
//	 23  role      1 byte   1 offerer, 2 answerer
//	 24  expiry    8 bytes  Unix seconds, big-endian
//	 32  mac      16 bytes  HMAC-SHA256(K, bytes 0-31), first 16 bytes,
//	                        K = HMAC-SHA256(Config.Secret, "ragsync relay token v1")
const (
	relayTokenVersion = 1
	relayTokenRaw     = 48
	relayTokenLen     = 64 // base64 of 48 bytes, no padding needed
	relayTokenMACLen  = 16
)

// relayClaims is what a relay token says.
type relayClaims struct {
	instance, pairing uint64
	room              signaling.RoomCode
	side              int // 0 offerer, 1 answerer
	expiry            time.Time
}

// relayKey identifies one pairing's relay across server instances.
type relayKey struct{ instance, pairing uint64 }

func (c relayClaims) key() relayKey { return relayKey{c.instance, c.pairing} }

// deriveKey derives a purpose-specific key from the server secret.
func deriveKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

func randUint64() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("signaling: crypto/rand failed: " + err.Error())
	}
	return binary.BigEndian.Uint64(b[:])
}

// mintRelayToken encodes and signs c with key.
func mintRelayToken(key []byte, c relayClaims) signaling.RelayToken {
	var b [relayTokenRaw]byte
	b[0] = relayTokenVersion
	binary.BigEndian.PutUint64(b[1:], c.instance)
	binary.BigEndian.PutUint64(b[9:], c.pairing)
	copy(b[17:23], c.room)
	b[23] = byte(c.side + 1)
	binary.BigEndian.PutUint64(b[24:], uint64(c.expiry.Unix()))
	m := hmac.New(sha256.New, key)
	m.Write(b[:32])
	copy(b[32:], m.Sum(nil)[:relayTokenMACLen])
	return signaling.RelayToken(base64.RawURLEncoding.EncodeToString(b[:]))
}

// verifyRelayToken checks t's format, signature and expiry. The error
// says which check failed, without echoing the token.
func verifyRelayToken(key []byte, t signaling.RelayToken, now time.Time) (relayClaims, *signaling.Error) {
	bad := func(msg string) (relayClaims, *signaling.Error) {
		return relayClaims{}, &signaling.Error{Code: signaling.ErrBadToken, Message: "relay token " + t.String() + " " + msg}
	}
	if len(t) != relayTokenLen {
		return bad("is malformed (Authorization: Bearer <token from paired>)")
	}
	var b [relayTokenRaw]byte
	if n, err := base64.RawURLEncoding.Decode(b[:], []byte(t)); err != nil || n != relayTokenRaw {
		return bad("is not base64url")
	}
	if b[0] != relayTokenVersion {
		return bad("has an unknown version")
	}
	m := hmac.New(sha256.New, key)
	m.Write(b[:32])
	if !hmac.Equal(m.Sum(nil)[:relayTokenMACLen], b[32:]) {
		return bad("was not issued by this server (or its secret changed)")
	}
	// Signed, so the fields are ours; check them anyway.
	room, rerr := signaling.ParseRoomCode(string(b[17:23]))
	if rerr != nil || room != signaling.RoomCode(b[17:23]) || (b[23] != 1 && b[23] != 2) {
		return bad("has invalid fields")
	}
	c := relayClaims{
		instance: binary.BigEndian.Uint64(b[1:]),
		pairing:  binary.BigEndian.Uint64(b[9:]),
		room:     room,
		side:     int(b[23]) - 1,
		expiry:   time.Unix(int64(binary.BigEndian.Uint64(b[24:])), 0),
	}
	if !now.Before(c.expiry) {
		return bad("has expired")
	}
	return c, nil
}

// Proof of possession. A relay token alone takes nothing: paired also
// gives each seat its key,
//
//	key = base64url(HMAC-SHA256(KS, token)), KS = HMAC-SHA256(Config.Secret, "ragsync seat key v1")
//
// (so any server with the secret derives it again: a restarted server
// and the other instances of a deployment accept it), and every use of
// the token (a relay request, a rejoin) carries a proof made with the key
// over a challenge of the server (wire.Proof). The raw relay's challenges
// are stateless, so a retry may reach another connection or instance:
//
//	challenge = base64url(issued 8 bytes Unix nanoseconds BE ‖ nonce 16 bytes ‖
//	            HMAC-SHA256(KC, first 24 bytes)[:16]), KC = HMAC-SHA256(Config.Secret, "ragsync relay challenge v1")
//
// valid for relayChallengeTTL and accepted once per process. The
// WebSocket relay's challenge is a random nonce of its connection, and
// rejoin's the one in the connection's welcome.

// relayChallengeTTL is how long a raw relay challenge may be answered.
const relayChallengeTTL = time.Minute

// seatKey returns the seat key of token.
func (s *Server) seatKey(token string) string {
	m := hmac.New(sha256.New, s.seatKeyKey)
	m.Write([]byte(token))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// nonce returns a random base64url string of 16 bytes.
func nonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("signaling: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// newChallenge issues a raw relay challenge.
func (s *Server) newChallenge() string {
	var b [40]byte
	binary.BigEndian.PutUint64(b[:], uint64(s.cfg.Now().UnixNano()))
	if _, err := rand.Read(b[8:24]); err != nil {
		panic("signaling: crypto/rand failed: " + err.Error())
	}
	m := hmac.New(sha256.New, s.challengeKey)
	m.Write(b[:24])
	copy(b[24:], m.Sum(nil)[:16])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// checkChallenge checks a raw relay challenge's signature and age.
func (s *Server) checkChallenge(c string) *signaling.Error {
	var b [40]byte
	if n, err := base64.RawURLEncoding.Decode(b[:], []byte(truncate(c, 64))); err != nil || n != len(b) {
		return &signaling.Error{Code: signaling.ErrBadToken, Message: "relay challenge is malformed"}
	}
	m := hmac.New(sha256.New, s.challengeKey)
	m.Write(b[:24])
	if !hmac.Equal(m.Sum(nil)[:16], b[24:]) {
		return &signaling.Error{Code: signaling.ErrBadToken, Message: "relay challenge was not issued by this server (or its secret changed)"}
	}
	age := s.cfg.Now().Sub(time.Unix(0, int64(binary.BigEndian.Uint64(b[:]))))
	if age > relayChallengeTTL || age < -relayChallengeTTL {
		return &signaling.Error{Code: signaling.ErrBadToken, Message: fmt.Sprintf("relay challenge is %v old, older than %v; ask again", age.Round(time.Second), relayChallengeTTL)}
	}
	return nil
}

// useChallenge records a raw relay challenge as answered, or reports that
// it was already: a proof cannot be replayed.
func (s *Server) useChallenge(c string) *signaling.Error {
	now := s.cfg.Now()
	s.chalMu.Lock()
	defer s.chalMu.Unlock()
	if s.usedChallenges == nil || len(s.usedChallenges) > 4096 {
		for k, t := range s.usedChallenges {
			if now.Sub(t) > 2*relayChallengeTTL {
				delete(s.usedChallenges, k)
			}
		}
		if s.usedChallenges == nil {
			s.usedChallenges = make(map[string]time.Time)
		}
	}
	if _, used := s.usedChallenges[c]; used {
		return &signaling.Error{Code: signaling.ErrBadToken, Message: "relay challenge already answered; ask again"}
	}
	s.usedChallenges[c] = now
	return nil
}

// checkProof checks token, then that proof is the seat's proof for
// purpose over challenge.
func (s *Server) checkProof(token signaling.RelayToken, purpose, challenge, proof string) *signaling.Error {
	if _, err := verifyRelayToken(s.tokenKey, token, s.cfg.Now()); err != nil {
		return err
	}
	want := wire.Proof(s.seatKey(string(token)), purpose, challenge, string(token))
	if proof == "" {
		return &signaling.Error{Code: signaling.ErrBadToken, Message: fmt.Sprintf("%s with relay token %s needs a proof of possession made with the seat key from paired (see the signaling package doc)", purpose, token)}
	}
	if !hmac.Equal([]byte(want), []byte(proof)) {
		return &signaling.Error{Code: signaling.ErrBadToken, Message: fmt.Sprintf("%s with relay token %s: the proof does not match; a token without its seat key takes nothing", purpose, token)}
	}
	return nil
}
