package game

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"

	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/signaling"
)

// Explain turns an error of the demo (pairing, the session, starting the
// server) into a sentence a player understands and what to do next. The
// error itself goes to the log; the window shows these.
func Explain(err error) (what, next string) {
	var (
		se *net.OpError
		ae *net.AddrError
	)
	switch {
	case err == nil:
		return "something went wrong.", "Press Enter to try again, or Esc to quit."
	case errors.Is(err, signaling.ErrRoomFull):
		return "that room already has two players.", "Ask your rival for the code on their screen, or press Enter to try again."
	case errors.Is(err, signaling.ErrRoomNotFound):
		return "nobody holds a room with that code.", "Check the code on your rival's screen, or press Enter to wait in that room for them."
	case errors.Is(err, signaling.ErrBadRoomCode):
		return "that is not a room code (6 characters: 2-9 and A-Z without I and O).", "Start again with the code your rival's screen shows: -room CODE."
	case errors.Is(err, signaling.ErrTooManyRooms), errors.Is(err, signaling.ErrServerFull),
		errors.Is(err, signaling.ErrTooManyConns), errors.Is(err, signaling.ErrTooManyHandshakes):
		return "the signaling server is full.", "Press Enter to try again in a moment, or use another server with -signal."
	case errors.Is(err, signaling.ErrShuttingDown):
		return "the signaling server is shutting down.", "Press Enter to host a game here, or use another server with -signal."
	case errors.Is(err, signaling.ErrTooManyFailedJoins), errors.Is(err, signaling.ErrRateLimited):
		return "the signaling server refuses this machine for a moment (too many tries).", "Wait a minute, then press Enter."
	case errors.Is(err, signaling.ErrUnsupportedVersion):
		return "the signaling server runs another version of ragsync.", "Update both games (or the server) to the same version."
	case errors.Is(err, p2p.ErrNoTransport) && strings.Contains(err.Error(), "every probe was lost"):
		// The transports opened but no ping came back in time: the link
		// or a machine was too slow, not a firewall.
		return "a connection opened but the rival's game did not answer in time (a very lossy link or a busy machine).", "Press Enter to try again."
	case errors.Is(err, p2p.ErrNoTransport):
		return "neither WebRTC nor the TCP relay reached the rival.", "Check the firewall on both machines; start the host with -lan for WebRTC on a LAN. Press Enter to try again."
	case errors.Is(err, syscall.EADDRINUSE):
		return "another program already uses that port.", "Start with -listen on a free port (e.g. -listen 127.0.0.1:8081), or join its server with -signal."
	case errors.Is(err, syscall.ECONNREFUSED):
		return "no signaling server answers at that address.", "Check the -signal address, or start without -signal to host a game here."
	case errors.As(err, &ae), errors.Is(err, syscall.EADDRNOTAVAIL):
		return "that address is not one of this machine's.", "Use -listen :8080 (every interface) or -listen 127.0.0.1:8080."
	case errors.Is(err, context.DeadlineExceeded):
		return "the server or the rival took too long to answer.", "Check the network, then press Enter to try again."
	case errors.Is(err, p2p.ErrDisconnected):
		if strings.Contains(err.Error(), "gave up before the match started") {
			return "your rival could not connect and gave up.", "Press Enter to look for a new rival (or wait for them again), or Esc to quit."
		}
		if strings.Contains(err.Error(), "closed the session") {
			return "your rival left the game.", "Press Enter to look for a new rival, or Esc to quit."
		}
		return "nothing arrives from your rival any more (their game or network stopped).", "Press Enter to look for a new rival, or Esc to quit."
	case errors.As(err, &se):
		return "the network connection to the signaling server failed.", "Check the -signal address and the network, then press Enter to try again."
	}
	s := err.Error()
	switch {
	case strings.Contains(s, "no such host"):
		return "that server name does not resolve.", "Check the -signal address."
	case strings.Contains(s, "closed the session"), strings.Contains(s, "peer left"):
		return "your rival left the game.", "Press Enter to look for a new rival, or Esc to quit."
	case strings.Contains(s, "EOF"), strings.Contains(s, "connection reset"), strings.Contains(s, "closed"):
		return "the connection to the signaling server was cut.", "Press Enter to try again, or Esc to quit."
	}
	return "something went wrong (" + s + ").", "Press Enter to try again, or Esc to quit; -v logs the details."
}
