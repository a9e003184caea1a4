package p2p

import (
	"context"
	"errors"
	"fmt"

	"github.com/ragsync/ragsync/signaling"
)

// Resuming a match
//
// The seat token is the secret that proves a player's seat in a pairing:
// it is the relay token the signaling server minted for this player
// (HMAC-signed, naming the room, the pairing and the side; a stranger
// with the room code cannot make one, and while a seat is kept a join
// with the code gets signaling.ErrRoomFull). Session.SeatToken returns
// it; a game keeps it (natively in the user's cache directory with 0600
// permissions, in a browser in sessionStorage) and never logs it or puts
// it in a URL.
//
// When a peer's process dies (or its tab reloads), the server keeps its
// seat for its RejoinGrace (30 s by default) and tells the survivor
// "dropped". The survivor's session then ends, once the peer has been
// silent for 300 ms, with an error wrapping both ErrDisconnected and
// ErrPeerAway: unlike a goodbye (the peer closed its session, or left the
// server), the peer may come back. Its signaling connection is closed as a
// dropped one, so the server keeps the survivor's seat too. Both players
// then take their seats back with the same call they joined with,
// Connect, with Config.Resume set to their own seat token; the pairing is
// made again once both are there, with new transports and new
// certificates. A Connect with Config.Resume fails with an error wrapping
// ErrSeatLost when the match is over: the token's pairing ended (the
// rival left, or the seat expired), or, while waiting for the rival, the
// server said it did not come back within the grace.

// Errors of resuming (see Resuming a match).
var (
	// ErrPeerAway is wrapped (with ErrDisconnected) by the error of a
	// session whose peer dropped without a goodbye: it may come back
	// within the server's RejoinGrace with its seat token.
	ErrPeerAway = errors.New("p2p: the peer dropped; it may come back")
	// ErrSeatLost is wrapped by Connect's error when Config.Resume cannot
	// take the seat back: the match has ended.
	ErrSeatLost = errors.New("p2p: the seat cannot be taken back: the match has ended")
)

// SeatToken returns this player's seat token: pass it as Config.Resume to
// take the seat back after a crash (see Resuming a match). It is a secret.
// Empty for a session made without signaling.
func (s *Session) SeatToken() string { return s.seat }

// Resumed reports whether Connect took back a seat (Config.Resume): the
// match is under way, and the game should adopt the rival's resume
// snapshot rather than start it (ragsync.NewMatch does).
func (s *Session) Resumed() bool { return s.resumed }

// rejoinSeat takes back the seat token names on cl.
func rejoinSeat(ctx context.Context, cl *signaling.Client, token string) error {
	_, err := cl.Rejoin(ctx, signaling.RelayToken(token))
	var se *signaling.Error
	if errors.As(err, &se) && se.Code == signaling.ErrBadToken {
		return fmt.Errorf("%w: %w", ErrSeatLost, err)
	}
	return err
}
