package game

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/ragsync/ragsync/internal/netsim"
	"github.com/ragsync/ragsync/p2p"
	"github.com/ragsync/ragsync/signaling"
)

// Config is the demo's configuration, from its flags.
type Config struct {
	// Signal is the signaling server URL; SignalSet says the user gave it.
	Signal    string
	SignalSet bool
	// TrustSignal skips checking that the -signal server answers (the web
	// demo: that server served the page; a failure shows when pairing).
	TrustSignal bool
	// Listen is where an embedded signaling server listens; ListenSet says
	// the user gave it (then a server is always embedded, unless -signal
	// is given too).
	Listen    string
	ListenSet bool
	// Room: "" quick match, "new" create a private room, or a code.
	Room string
	// Bot adds a local bot rival of that level, paired through the full
	// stack; BotOff (the zero value): none.
	Bot BotLevel
	// Headless runs without a window; the local fighter is bot-driven.
	Headless bool
	// Autoplay drives the local fighter by the bot in the window too (the
	// web demo's ?autoplay=1), e.g. to watch two bots fight.
	Autoplay bool
	// LogSummaries logs each player's summary (JSON, as -json prints
	// it) every LogEvery; the web demo does, so the browser's console
	// shows how the match goes.
	LogSummaries bool
	Duration     time.Duration // headless: how long to play once connected
	JSON         bool          // headless: print the summary as JSON too
	// Lag, Jitter, Loss impair what each player sends (netsim, per
	// direction: half the lag, half the jitter).
	Lag, Jitter time.Duration
	Loss        float64
	ICE         []string
	LAN         bool
	// Prefer is the transport policy (-prefer): TransportUnknown, the
	// default ("ping": see p2p.Config.Prefer); p2p.TransportWebRTC ("webrtc": TCP only as a
	// fallback); or p2p.TransportTCP ("tcp").
	Prefer      p2p.TransportKind
	RoundLength time.Duration
	Seed        uint64
	Verbose     bool
	// HUD and Ghost start the window with the net HUD (F1) and the ghost
	// (F2) shown.
	HUD, Ghost bool
	// ConnectTimeout bounds pairing in headless mode.
	ConnectTimeout time.Duration
	// Spectate watches the room with this code (-spectate); Replay plays a
	// replay file (-replay); Record writes the match to a replay file
	// (-record, a player or a spectator); NoSpectators asks the server to
	// refuse spectators for this player's room.
	Spectate, Replay, Record string
	NoSpectators             bool
}

// botFlag is -bot: a boolean flag (a bare -bot is DefaultBotLevel) that
// also takes a level, -bot=easy (and -bot easy: see joinBotLevel).
type botFlag struct{ l *BotLevel }

func (f *botFlag) String() string {
	if f.l == nil || *f.l == BotOff {
		return ""
	}
	return f.l.String()
}
func (f *botFlag) IsBoolFlag() bool { return true }
func (f *botFlag) Set(s string) error {
	l, err := ParseBotLevel(s)
	if err != nil {
		return errors.New("want easy, normal or hard")
	}
	*f.l = l
	return nil
}

// joinBotLevel rewrites "-bot LEVEL" as "-bot=LEVEL": the flag package
// takes a boolean flag's value only after '='.
func joinBotLevel(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "-bot" || a == "--bot") && i+1 < len(args) {
			if _, err := ParseBotLevel(args[i+1]); err == nil && args[i+1] != "" {
				out = append(out, a+"="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// ParseFlags parses the demo's command line.
func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `ragsync demo: two ragdoll fighters, one per player, synced peer to peer.

  go run ./demo                      pair with the next player on this machine (quick match)
  go run ./demo -signal http://HOST:8080   pair through another machine's demo or server
  go run ./demo -room new            create a private room and show its code
  go run ./demo -room CODE           join (or create) the private room CODE
  go run ./demo -bot easy            fight a local bot peer through the full stack (easy, normal or hard)
  go run ./demo -headless -bot -duration 30s   bot against bot, no window, print a summary

Controls: A/D or ←/→ walk, W or ↑ jump, S or ↓ block, J punch, K kick,
R or Enter rematch, F1 net HUD, F2 ghost of the rival's received state,
F3 or H controls panel, Esc quit.

Playing between two machines: the host runs  go run ./demo -listen :8080 -lan
and the window shows the -signal address for the other machine.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.Signal, "signal", DefaultSignal, "signaling server URL; without -signal, one is embedded if none answers at the default")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "address of the embedded signaling server: this machine only by default; -listen :8080 lets other machines join (the window then shows the addresses to give them)")
	fs.StringVar(&c.Room, "room", "", `private room: "new" creates one with a server-chosen code to share; CODE joins the room with that code (or creates it, for the rival to join); empty: quick match`)
	fs.Var(&botFlag{&c.Bot}, "bot", "fight a local bot peer (real signaling, real WebRTC on loopback, its own world): -bot easy, -bot normal or -bot hard; a bare -bot is normal")
	fs.BoolVar(&c.Headless, "headless", false, "no window: the local fighter is bot-driven; prints a summary at the end")
	fs.BoolVar(&c.Autoplay, "autoplay", false, "the local fighter is bot-driven in the window too")
	fs.BoolVar(&c.LogSummaries, "log-summaries", false, "log each player's summary as JSON every 5 s")
	fs.DurationVar(&c.Duration, "duration", 30*time.Second, "headless: how long to play once connected")
	fs.BoolVar(&c.JSON, "json", false, "headless: also print the summary as JSON")
	fs.DurationVar(&c.Lag, "lag", 0, "added round trip of the game's packets (each player delays what it sends by half; -bot: both)")
	fs.DurationVar(&c.Jitter, "jitter", 0, "round-trip jitter of the game's packets (± half of it per direction)")
	fs.Float64Var(&c.Loss, "loss", 0, "loss of the game's packets per direction, 0..1")
	var ice stringList
	fs.Var(&ice, "ice", "STUN/TURN server URL for WebRTC (repeatable), e.g. stun:stun.example.org:3478 or turn:USER:PASS@host:3478 (USER and PASS percent-encoded: %3A for ':', %40 for '@'); none by default")
	fs.BoolVar(&c.LAN, "lan", false, "gather WebRTC candidates on every interface even with a loopback -signal (the host of a game between two machines needs it)")
	prefer := fs.String("prefer", "ping", "transport policy: ping (WebRTC as soon as its channel opens if the relay is not open yet, or answers a probe unless the relay answered faster; else the lower 3-probe ping; pings within 5 ms or 10% are a tie, which WebRTC wins), webrtc (TCP relay only as a fallback), or tcp")
	fs.DurationVar(&c.RoundLength, "round", DefaultRoundLength, "length of a round (the host's counts)")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the bots and the network impairment")
	fs.BoolVar(&c.Verbose, "v", false, "debug logs (sessions, pion)")
	fs.BoolVar(&c.HUD, "hud", false, "start with the net HUD shown (F1 toggles it)")
	fs.BoolVar(&c.Ghost, "ghost", false, "start with the ghost of the rival's received state shown (F2 toggles it)")
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", time.Minute, "headless: how long to wait for a rival")
	fs.StringVar(&c.Spectate, "spectate", "", "watch the match in room CODE through the signaling server's spectator feed (sends nothing to the players)")
	fs.StringVar(&c.Record, "record", "", "write the match (a player's or a spectator's) to this replay file")
	fs.StringVar(&c.Replay, "replay", "", "play this replay file (window: Space pause, ←/→ seek 5 s, ↑/↓ speed; -headless: print the match summary)")
	fs.BoolVar(&c.NoSpectators, "no-spectators", false, "refuse spectators for this player's room")
	if err := fs.Parse(joinBotLevel(args)); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "signal":
			c.SignalSet = true
		case "listen":
			c.ListenSet = true
		}
	})
	c.ICE = ice
	switch *prefer {
	case "webrtc":
		c.Prefer = p2p.TransportWebRTC
	case "tcp":
		c.Prefer = p2p.TransportTCP
	case "ping":
		c.Prefer = p2p.TransportUnknown
	default:
		return c, fmt.Errorf("-prefer %q: want webrtc, tcp or ping", *prefer)
	}
	return c, c.Validate()
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch {
	case c.Duration <= 0:
		return fmt.Errorf("-duration %v must be positive", c.Duration)
	case c.Lag < 0 || c.Jitter < 0:
		return errors.New("-lag and -jitter must not be negative")
	case !(c.Loss >= 0 && c.Loss < 1):
		return fmt.Errorf("-loss %v must be in [0, 1)", c.Loss)
	case c.RoundLength < MinRoundLength || c.RoundLength > MaxRoundLength:
		return fmt.Errorf("-round %v must be between %v and %v", c.RoundLength, MinRoundLength, MaxRoundLength)
	case c.Bot != BotOff && c.Room != "":
		return errors.New("-bot creates its own private room: it takes no -room")
	case c.ConnectTimeout <= 0:
		return fmt.Errorf("-connect-timeout %v must be positive", c.ConnectTimeout)
	}
	if c.Spectate != "" {
		code, err := signaling.ParseRoomCode(c.Spectate)
		if err != nil {
			return fmt.Errorf("-spectate %q: %w", c.Spectate, err)
		}
		c.Spectate = string(code)
		if c.Bot != BotOff || c.Room != "" || c.Replay != "" {
			return errors.New("-spectate watches: it takes no -bot, -room or -replay")
		}
	}
	if c.Replay != "" && (c.Bot != BotOff || c.Room != "" || c.Record != "") {
		return errors.New("-replay plays a file: it takes no -bot, -room or -record")
	}
	if c.Room != "" && c.Room != "new" {
		code, err := signaling.ParseRoomCode(c.Room)
		if err != nil {
			return fmt.Errorf("-room %q: %w", c.Room, err)
		}
		c.Room = string(code)
	}
	for _, u := range c.ICE {
		if _, err := webrtcURL(u); err != nil {
			return err
		}
	}
	if _, err := c.impairment(); err != nil {
		return err
	}
	return nil
}

// impairment returns the netsim config of -lag/-jitter/-loss, nil if none.
func (c *Config) impairment() (*netsim.Config, error) {
	if c.Lag == 0 && c.Jitter == 0 && c.Loss == 0 {
		return nil, nil
	}
	n := netsim.RoundTrip(c.Lag, c.Jitter, c.Loss)
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("-lag/-jitter/-loss: %w", err)
	}
	return &n, nil
}

// webrtcURL parses one -ice value. A TURN URL may carry credentials as
// turn:USER:PASS@HOST:PORT. USER and PASS are percent-encoded as in a URL's
// userinfo ("%3A" for ':', "%40" for '@', "%25" for '%'): the credentials
// end at the last '@' (a host has none) and USER at the first ':', so a
// TURN REST username such as "1700000000:alice" is written
// "1700000000%3Aalice"; a password may also hold a raw ':' or '@'.
func webrtcURL(u string) (signaling.ICEServer, error) {
	s := signaling.ICEServer{URLs: []string{u}}
	scheme, rest, _ := strings.Cut(u, ":")
	switch scheme {
	case "stun", "stuns":
		return s, nil
	case "turn", "turns":
	default:
		return s, fmt.Errorf("-ice %q: want a stun:, stuns:, turn: or turns: URL", u)
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return s, nil
	}
	cred, host := rest[:at], rest[at+1:]
	if host == "" {
		return s, fmt.Errorf("-ice %q: no host after the credentials' '@'", u)
	}
	rawUser, rawPass, ok := strings.Cut(cred, ":")
	if !ok {
		return s, fmt.Errorf("-ice %q: want turn:USER:PASS@HOST[:PORT] (USER and PASS percent-encoded)", u)
	}
	user, err := url.PathUnescape(rawUser)
	if err != nil {
		return s, fmt.Errorf("-ice %q: username: %w", u, err)
	}
	pass, err := url.PathUnescape(rawPass)
	if err != nil {
		return s, fmt.Errorf("-ice %q: password: %w", u, err)
	}
	return signaling.ICEServer{URLs: []string{scheme + ":" + host}, Username: user, Credential: pass}, nil
}

// p2pConfig is the session configuration of a player. With the default
// interface policy, a loopback signaling URL keeps WebRTC on loopback.
func (c *Config) p2pConfig() p2p.Config {
	pc := p2p.Config{Prefer: c.Prefer}
	for _, u := range c.ICE {
		s, _ := webrtcURL(u)
		pc.ICEServers = append(pc.ICEServers, s)
	}
	if c.LAN {
		// Every interface, loopback included (a second demo on this
		// machine gathers loopback candidates only).
		pc.Interfaces = p2p.InterfacesAll
		pc.IncludeLoopback = true
	}
	return pc
}
