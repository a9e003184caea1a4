package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/signaling"
)

func TestNewRoomCode(t *testing.T) {
	seen := map[signaling.RoomCode]bool{}
	for i := 0; i < 1000; i++ {
		c := newRoomCode()
		if !validCode(c) {
			t.Fatalf("newRoomCode() = %q invalid", c)
		}
		seen[c] = true
	}
	if len(seen) < 999 {
		t.Fatalf("only %d distinct codes in 1000", len(seen))
	}
}

func TestRelayToken(t *testing.T) {
	key := deriveKey([]byte("0123456789abcdef"), "ragsync relay token v1")
	now := time.Unix(1_800_000_000, 0)
	c := relayClaims{instance: 7, pairing: 1<<63 + 5, room: "7KQ2MX", side: 1, expiry: now.Add(time.Hour)}
	tok := mintRelayToken(key, c)
	if len(tok) != relayTokenLen || strings.ContainsAny(string(tok), "+/=") {
		t.Fatalf("token %q", string(tok))
	}
	got, err := verifyRelayToken(key, tok, now)
	if err != nil || got != c {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if s := tok.String(); len(s) > 8 {
		t.Fatalf("String() leaks the token: %q", s)
	}
	other := mintRelayToken(key, relayClaims{instance: 7, pairing: 1<<63 + 5, room: "7KQ2MX", side: 0, expiry: now.Add(time.Hour)})
	if other == tok {
		t.Fatal("both sides got the same token")
	}
	// Every single-character change is refused, and so are the wrong key,
	// expiry, and malformed tokens.
	for i := 0; i < len(tok); i++ {
		b := []byte(tok)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		if _, err := verifyRelayToken(key, signaling.RelayToken(b), now); !errors.Is(err, signaling.ErrBadToken) {
			t.Fatalf("token changed at %d accepted: %v", i, err)
		}
	}
	for name, tc := range map[string]struct {
		key []byte
		tok signaling.RelayToken
		now time.Time
	}{
		"wrong key": {deriveKey([]byte("another secret!!"), "ragsync relay token v1"), tok, now},
		"expired":   {key, tok, c.expiry},
		"short":     {key, tok[:40], now},
		"empty":     {key, "", now},
		"not b64":   {key, signaling.RelayToken(strings.Repeat("*", relayTokenLen)), now},
		"zeros":     {key, signaling.RelayToken(strings.Repeat("A", relayTokenLen)), now},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := verifyRelayToken(tc.key, tc.tok, tc.now)
			var e *signaling.Error
			if !errors.As(err, &e) || e.Code != signaling.ErrBadToken || strings.Contains(e.Message, string(tok[8:])) {
				t.Fatalf("verify = %v", err)
			}
		})
	}
}

// FuzzVerifyRelayToken: no input crashes verification, and whatever
// verifies re-encodes to the same token.
func FuzzVerifyRelayToken(f *testing.F) {
	key := deriveKey([]byte("0123456789abcdef"), "ragsync relay token v1")
	now := time.Unix(1_800_000_000, 0)
	f.Add(string(mintRelayToken(key, relayClaims{instance: 1, pairing: 2, room: "ABCDEF", side: 0, expiry: now.Add(time.Minute)})))
	f.Add(strings.Repeat("A", relayTokenLen))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := verifyRelayToken(key, signaling.RelayToken(s), now)
		if err != nil {
			return
		}
		if again := mintRelayToken(key, c); again != signaling.RelayToken(s) {
			t.Fatalf("verified %q re-encodes to %q", s, again)
		}
	})
}

// validCode reports whether c is a well-formed, normalised room code.
func validCode(c signaling.RoomCode) bool {
	p, err := signaling.ParseRoomCode(string(c))
	return err == nil && p == c
}
