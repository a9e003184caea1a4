package game

import (
	"crypto/sha256"
	"encoding/hex"
)

// Seat tokens: the secret that gives a player its seat back after a crash
// or a reload (p2p.Session.SeatToken, p2p.Config.Resume). The demo keeps
// the token of the match in progress, keyed by signaling server and room,
// natively in a file under the user's cache directory
// (os.UserCacheDir()/ragsync/seat-<key>-<token hash>, mode 0600, in a 0700
// directory, locked by the process that plays it: see seat_notjs.go) and
// in a browser in sessionStorage (per tab, so a reload finds it and
// another tab does not). It is saved once the match runs, removed when the
// match ends (a goodbye, the end of the run, a seat that cannot be taken
// back), and never logged nor put in a URL.

// seatKey is the storage key of the seat of room on signaling server
// signal: a hash, so neither shows in a file name.
func seatKey(signal, room string) string {
	h := sha256.Sum256([]byte(signal + "\x00" + room))
	return hex.EncodeToString(h[:12])
}
