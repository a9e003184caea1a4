package game

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/signaling"
)

// Every error state reads as a sentence with what to do next, never as a
// raw error chain.
func TestExplain(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	for _, tc := range []struct {
		name string
		err  error
		what string // part of the sentence
		next string // part of what to do
	}{
		{"no server", fmt.Errorf("quick match on http://127.0.0.1:8080: %w", refused), "no signaling server answers", "-signal"},
		{"room full", fmt.Errorf("room ABCDEF: %w", signaling.ErrRoomFull), "two players", "code"},
		{"no room", fmt.Errorf("room ABCDEF: %w", signaling.ErrRoomNotFound), "nobody holds", "wait"},
		{"server full", signaling.ErrServerFull, "full", "Enter"},
		{"shutting down", signaling.ErrShuttingDown, "shutting down", "host"},
		{"no transport", fmt.Errorf("room X: %w", p2p.ErrNoTransport), "neither WebRTC nor", "firewall"},
		{"port taken", fmt.Errorf("embedded signaling server: %w", &net.OpError{Op: "listen", Err: &os.SyscallError{Syscall: "bind", Err: syscall.EADDRINUSE}}), "port", "-listen"},
		{"rival left", fmt.Errorf("%w: the peer closed the session", p2p.ErrDisconnected), "left the game", "new rival"},
		{"rival silent", fmt.Errorf("%w: nothing received for 5s", p2p.ErrDisconnected), "nothing arrives", "new rival"},
		{"timeout", fmt.Errorf("pairing: %w", context.DeadlineExceeded), "too long", "try again"},
		{"other", errors.New("boom"), "something went wrong", "-v"},
		{"nil", nil, "something went wrong", "Enter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			what, next := Explain(tc.err)
			if !strings.Contains(what, tc.what) || !strings.Contains(next, tc.next) {
				t.Errorf("Explain(%v) = %q / %q; want %q / %q in them", tc.err, what, next, tc.what, tc.next)
			}
			if tc.err != nil && tc.name != "other" && strings.Contains(what+next, tc.err.Error()) {
				t.Errorf("the raw error shows: %q", what+next)
			}
		})
	}
}
