// Command netdiag tests the connection quality between two machines the
// way a ragsync game would use it: it pairs through a signaling server,
// opens both transports (WebRTC data channel and the TCP relay), lets the
// session choose between them by ping, then exchanges game-sized messages
// at a game's rate for -duration while pinging both transports, and prints
// a report.
//
// On both machines, with a room code you agree on (6 characters from
// 2-9 and A-Z without I and O; the first to arrive creates the room, the
// second joins it):
//
//	go run ./cmd/netdiag -signal http://SERVER:8080 -room CODE
//
// Without -room, netdiag creates a room with a fresh code and prints the
// command to run on the other machine, with a signaling address that
// machine can use: for a loopback -signal (this machine's own), this
// machine's network addresses with the same port instead.
//
// Or pair by quick match on both (-quick), or try it alone: -self runs both
// ends in this process, against -signal if given, else against a signaling
// server embedded on 127.0.0.1:0.
//
// The report has, for each transport, its 3-probe ping (the session's
// choice rule: three round trips, the maximum counts) and the round-trip
// distribution (min/p50/p95/max over the pings of the run's last 10 s),
// jitter in each direction (RFC 3550, from the ping timestamps) and ping
// loss; the transport chosen and why; loss, duplicates and reordering of
// the test messages; throughput both ways; the WebRTC candidate types
// (relay means through a TURN server); the offset between the two
// machines' clocks with its uncertainty; and a verdict, judged on the
// active transport:
//
//	good      RTT p95 ≤ 80 ms, jitter ≤ 10 ms, loss ≤ 1 %
//	playable  RTT p95 ≤ 200 ms, jitter ≤ 30 ms, loss ≤ 5 %
//	poor      anything worse, or the connection was interrupted
//
// The measurement lasts -duration, and longer until each transport that is
// up has a measured round trip and none is still connecting (at most 100
// more pings on a transport, 20 s of test messages more): a loaded machine
// can take longer than -duration to measure one, as the session leaves out
// every round trip that overlaps a stall of this process.
//
// -json prints the same as JSON. Without -ice-server no STUN/TURN server
// is used (host candidates only: same machine or LAN). With a loopback
// -signal URL only loopback interfaces are used.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netdiag:", err)
		os.Exit(1)
	}
}

var _ io.Writer = os.Stdout
