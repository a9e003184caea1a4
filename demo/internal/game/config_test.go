package game

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ragsync/ragsync/clocksync"
	"github.com/ragsync/ragsync/ownership"
	"github.com/ragsync/ragsync/p2p"
)

func TestParseFlags(t *testing.T) {
	c, err := ParseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// No flags: the default server on loopback, quick match, WebRTC on
	// loopback only (InterfacesAuto with a loopback URL), no ICE servers,
	// no impairment.
	if c.Signal != DefaultSignal || c.SignalSet || c.Listen != "127.0.0.1:8080" || c.ListenSet || c.Room != "" || c.Bot != BotOff || c.Headless {
		t.Errorf("defaults %+v", c)
	}
	pc := c.p2pConfig()
	if pc.Interfaces != p2p.InterfacesAuto || len(pc.ICEServers) != 0 || pc.Prefer != p2p.TransportUnknown {
		t.Errorf("p2p config %+v", pc)
	}
	if imp, _ := c.impairment(); imp != nil {
		t.Errorf("impairment %v by default", imp)
	}

	c, err = ParseFlags([]string{"-signal", "http://192.0.2.2:8080", "-room", "abcdef", "-lan", "-ice", "stun:stun.example.org:3478",
		"-ice", "turn:me:secret@turn.example.org:3478", "-lag", "80ms", "-jitter", "10ms", "-loss", "0.02", "-prefer", "tcp"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	pc = c.p2pConfig()
	if !c.SignalSet || c.Room != "ABCDEF" || pc.Interfaces != p2p.InterfacesAll || !pc.IncludeLoopback || pc.Prefer != p2p.TransportTCP {
		t.Errorf("parsed %+v / %+v", c, pc)
	}
	if len(pc.ICEServers) != 2 || pc.ICEServers[1].Username != "me" || pc.ICEServers[1].Credential != "secret" ||
		pc.ICEServers[1].URLs[0] != "turn:turn.example.org:3478" {
		t.Errorf("ICE servers %+v", pc.ICEServers)
	}
	imp, err := c.impairment()
	if err != nil || imp == nil || imp.Latency != 40*time.Millisecond || imp.Jitter != 5*time.Millisecond || imp.Loss != 0.02 {
		t.Errorf("impairment %+v, %v", imp, err)
	}

	if _, err := ParseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	for _, args := range [][]string{
		{"-bot", "-room", "new"}, {"-room", "O0I1"}, {"-loss", "1"}, {"-loss", "NaN"}, {"-lag", "-1s"},
		{"-round", "1s"}, {"-duration", "0"}, {"-ice", "8.8.8.8"}, {"-prefer", "udp"}, {"stray"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if _, err := ParseFlags(args, io.Discard); err == nil {
				t.Errorf("%q accepted", args)
			}
		})
	}
}

// On the TCP relay a message replaces only an unsent one with the same
// first byte: the round messages' kind must differ from the states' (and
// from clock calibration's).
func TestRoundMessagesHaveTheirOwnKind(t *testing.T) {
	if MsgKind == ownership.KindState || MsgKind == clocksync.Magic {
		t.Errorf("MsgKind %#x is taken: a round message could be superseded by a state on the TCP relay", MsgKind)
	}
}

// TestICECredentials: TURN credentials are percent-encoded, end at the
// last '@' and the username at the first ':', so TURN REST usernames
// ("expiry:name") and passwords with ':' or '@' survive.
func TestICECredentials(t *testing.T) {
	for _, tc := range []struct {
		in, url, user, pass string
	}{
		{"stun:stun.example.org:3478", "stun:stun.example.org:3478", "", ""},
		{"turn:turn.example.org:3478", "turn:turn.example.org:3478", "", ""},
		{"turn:me:secret@turn.example.org:3478", "turn:turn.example.org:3478", "me", "secret"},
		{"turn:1700000000%3Aalice:p%40ss@127.0.0.1:3478", "turn:127.0.0.1:3478", "1700000000:alice", "p@ss"},
		{"turns:1700000000%3Aalice:a:b@c@127.0.0.1:5349?transport=tcp", "turns:127.0.0.1:5349?transport=tcp", "1700000000:alice", "a:b@c"},
		{"turn:u%25:x%2By@127.0.0.1", "turn:127.0.0.1", "u%", "x+y"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s, err := webrtcURL(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			pass, _ := s.Credential.(string)
			if len(s.URLs) != 1 || s.URLs[0] != tc.url || s.Username != tc.user || pass != tc.pass {
				t.Fatalf("got %q user %q pass %v, want %q user %q pass %q", s.URLs, s.Username, s.Credential, tc.url, tc.user, tc.pass)
			}
		})
	}
	for _, bad := range []string{"127.0.0.9", "http://127.0.0.1", "turn:user@127.0.0.1", "turn:u:p@", "turn:u%zz:p@127.0.0.1", "turn:u:p%4@127.0.0.1"} {
		t.Run("bad "+bad, func(t *testing.T) {
			if _, err := webrtcURL(bad); err == nil || !strings.Contains(err.Error(), bad) {
				t.Fatalf("webrtcURL(%q) = %v, want an error naming it", bad, err)
			}
		})
	}
}
