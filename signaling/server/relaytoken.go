package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/ragsync/ragsync/signaling"
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
