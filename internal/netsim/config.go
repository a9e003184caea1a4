package netsim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Config describes the impairments of one direction of a link. Every field's
// zero value means "no impairment" (or the documented default), so the zero
// Config is a perfect link. See the package documentation for the order in
// which the impairments apply. [Config.Validate] checks a Config; [NewLink]
// calls it.
type Config struct {
	// Latency is the one-way base delay. Zero: none.
	Latency time.Duration
	// Jitter spreads the delay: each packet independently gets
	// Latency + U(−Jitter, +Jitter), U uniform, the result clamped at zero.
	// Packets overtake each other when Jitter exceeds half their spacing.
	// Zero: every packet takes exactly Latency.
	Jitter time.Duration

	// Reorder is the probability that a packet is additionally held back by
	// ReorderDelay, so that packets sent after it overtake it. Zero: never.
	Reorder float64
	// ReorderDelay is the extra delay of a held-back packet. Zero: 20 ms.
	ReorderDelay time.Duration

	// Loss is the probability that a packet is lost, independently of every
	// other packet. Zero: none.
	Loss float64
	// BurstLoss is the long-run fraction of packets lost in bursts (the
	// Gilbert–Elliott chain described in the package doc). It adds to Loss.
	// Zero: no burst loss.
	BurstLoss float64
	// BurstLen is the mean length of a loss burst in packets, at least 1.
	// Zero: 4 (used only when BurstLoss > 0).
	BurstLen float64

	// Duplicate is the probability that a delivered packet also arrives a
	// second time. Zero: never.
	Duplicate float64
	// DuplicateDelay bounds how much later the copy arrives: U(0,
	// DuplicateDelay] after the original. Zero: 2 ms.
	DuplicateDelay time.Duration

	// BlackoutEvery is the period of scheduled blackouts, BlackoutFor their
	// length and BlackoutPhase the start of the first one: the link is down
	// during [BlackoutPhase + k·BlackoutEvery, … + BlackoutFor) for every
	// k ≥ 0. Zero BlackoutEvery or BlackoutFor: no scheduled blackouts.
	BlackoutEvery time.Duration
	BlackoutFor   time.Duration
	BlackoutPhase time.Duration
	// Blackouts are explicit windows during which the link is down, in
	// addition to the scheduled ones. Nil: none.
	Blackouts []Window

	// Bandwidth caps the link's rate in bytes per second (payload bytes, no
	// header overhead is added). Zero: unlimited.
	Bandwidth int64
	// MaxQueueDelay is the longest a packet may wait behind others for the
	// bandwidth cap before it is tail-dropped. Zero: 500 ms.
	MaxQueueDelay time.Duration

	// MaxInFlight bounds the packets held by the link (sent, not yet
	// delivered); a packet beyond it is dropped as LostQueue. It keeps a
	// caller that never calls Deliver from growing memory without bound.
	// Zero: 4096.
	MaxInFlight int
	// MaxPacketSize is the largest packet Send accepts. Zero: 65535.
	MaxPacketSize int
}

// Window is a blackout window [Start, End) in the link's time.
type Window struct {
	Start, End time.Duration
}

// Defaults for the zero values of Config fields (documented there).
const (
	defaultReorderDelay   = 20 * time.Millisecond
	defaultBurstLen       = 4
	defaultDuplicateDelay = 2 * time.Millisecond
	defaultMaxQueueDelay  = 500 * time.Millisecond
	defaultMaxInFlight    = 4096
	defaultMaxPacketSize  = 65535
)

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("netsim: invalid config")

// ConfigError is a Config field that failed validation, with its value.
type ConfigError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("netsim: invalid config: %s = %v: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// maxDelay bounds durations in a Config: an hour is far beyond any network,
// and keeps arrival-time arithmetic far from overflow.
const maxDelay = time.Hour

// Validate reports the first invalid field of c as a *ConfigError, or nil.
func (c *Config) Validate() error {
	dur := func(name string, d time.Duration) error {
		if d < 0 || d > maxDelay {
			return &ConfigError{name, d, "must be in [0, 1h]"}
		}
		return nil
	}
	prob := func(name string, p float64, max float64) error {
		if math.IsNaN(p) || p < 0 || p > max {
			return &ConfigError{name, p, fmt.Sprintf("must be a probability in [0, %g]", max)}
		}
		return nil
	}
	for _, e := range []error{
		dur("Latency", c.Latency),
		dur("Jitter", c.Jitter),
		prob("Reorder", c.Reorder, 1),
		dur("ReorderDelay", c.ReorderDelay),
		prob("Loss", c.Loss, 1),
		prob("BurstLoss", c.BurstLoss, 0.99),
		prob("Duplicate", c.Duplicate, 1),
		dur("DuplicateDelay", c.DuplicateDelay),
		dur("BlackoutEvery", c.BlackoutEvery),
		dur("BlackoutFor", c.BlackoutFor),
		dur("MaxQueueDelay", c.MaxQueueDelay),
	} {
		if e != nil {
			return e
		}
	}
	if c.BurstLen != 0 && (math.IsNaN(c.BurstLen) || c.BurstLen < 1 || c.BurstLen > 1e6) {
		return &ConfigError{"BurstLen", c.BurstLen, "must be 0 (default) or in [1, 1e6] packets"}
	}
	if c.BurstLoss > 0 {
		if p, _ := c.gilbert(); p > 1 {
			return &ConfigError{"BurstLoss", c.BurstLoss, fmt.Sprintf("too high for BurstLen %g: bursts that long cannot be that frequent", c.burstLen())}
		}
	}
	if c.BlackoutPhase < 0 || c.BlackoutPhase > 1000*maxDelay {
		return &ConfigError{"BlackoutPhase", c.BlackoutPhase, "must be in [0, 1000h]"}
	}
	if c.BlackoutEvery > 0 && c.BlackoutFor > c.BlackoutEvery {
		return &ConfigError{"BlackoutFor", c.BlackoutFor, fmt.Sprintf("longer than BlackoutEvery %v", c.BlackoutEvery)}
	}
	for i, w := range c.Blackouts {
		if w.Start < 0 || w.End <= w.Start {
			return &ConfigError{fmt.Sprintf("Blackouts[%d]", i), w, "want 0 <= Start < End"}
		}
	}
	if c.Bandwidth < 0 {
		return &ConfigError{"Bandwidth", c.Bandwidth, "must be >= 0 bytes per second"}
	}
	if c.MaxInFlight < 0 || c.MaxInFlight > 1<<20 {
		return &ConfigError{"MaxInFlight", c.MaxInFlight, "must be in [0, 2^20]"}
	}
	if c.MaxPacketSize < 0 || c.MaxPacketSize > 1<<24 {
		return &ConfigError{"MaxPacketSize", c.MaxPacketSize, "must be in [0, 2^24]"}
	}
	return nil
}

func (c *Config) burstLen() float64 {
	if c.BurstLen == 0 {
		return defaultBurstLen
	}
	return c.BurstLen
}

// gilbert returns the Gilbert–Elliott transition probabilities
// p = P(Good→Bad) and r = P(Bad→Good) for BurstLoss and BurstLen.
func (c *Config) gilbert() (p, r float64) {
	r = 1 / c.burstLen()
	p = c.BurstLoss * r / (1 - c.BurstLoss)
	return p, r
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// String is a compact human-readable description of c, e.g.
// "50ms±10ms loss 1%".
func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v", c.Latency)
	if c.Jitter > 0 {
		fmt.Fprintf(&b, "±%v", c.Jitter)
	}
	pct := func(name string, p float64) {
		if p > 0 {
			fmt.Fprintf(&b, " %s %g%%", name, p*100)
		}
	}
	pct("loss", c.Loss)
	if c.BurstLoss > 0 {
		fmt.Fprintf(&b, " burst-loss %g%% (mean %g)", c.BurstLoss*100, c.burstLen())
	}
	pct("dup", c.Duplicate)
	pct("reorder", c.Reorder)
	if c.BlackoutEvery > 0 && c.BlackoutFor > 0 {
		fmt.Fprintf(&b, " blackout %v every %v from %v", c.BlackoutFor, c.BlackoutEvery, c.BlackoutPhase)
	}
	if n := len(c.Blackouts); n > 0 {
		fmt.Fprintf(&b, " +%d blackout windows", n)
	}
	if c.Bandwidth > 0 {
		fmt.Fprintf(&b, " %d B/s", c.Bandwidth)
	}
	return b.String()
}

// RoundTrip returns the one-direction Config of a link quoted by its round
// trip: Latency = rtt/2 and Jitter = jitter/2, so that a request and its
// answer over two such directions take rtt ± jitter in total, and loss per
// direction. Use it for both directions of a Pair; it is what a demo's
// -lag/-jitter/-loss flags should map to.
func RoundTrip(rtt, jitter time.Duration, loss float64) Config {
	return Config{Latency: rtt / 2, Jitter: jitter / 2, Loss: loss}
}

// Presets, one direction each (see RoundTrip for the mapping from the quoted
// round-trip figures). Loss and duplicate figures are per direction.
var (
	// Perfect is the zero Config: no delay, no loss.
	Perfect = Config{}
	// LAN: RTT 10 ms ± 1 ms: 5 ms ± 0.5 ms one way.
	LAN = RoundTrip(10*time.Millisecond, time.Millisecond, 0)
	// Broadband: RTT 60 ms ± 10 ms, 1 % loss: 30 ms ± 5 ms one way.
	Broadband = RoundTrip(60*time.Millisecond, 10*time.Millisecond, 0.01)
	// Mobile: RTT 150 ms ± 30 ms, 5 % loss, 1 % duplicates, and 2 % of the
	// packets held back 40 ms (on top of the reordering the jitter causes).
	Mobile = func() Config {
		c := RoundTrip(150*time.Millisecond, 30*time.Millisecond, 0.05)
		c.Duplicate = 0.01
		c.Reorder = 0.02
		c.ReorderDelay = 40 * time.Millisecond
		return c
	}()
	// Spike: Broadband with a 2 s blackout every 15 s, the first starting
	// 13 s in (13 s up, 2 s down, repeat).
	Spike = func() Config {
		c := Broadband
		c.BlackoutEvery = 15 * time.Second
		c.BlackoutFor = 2 * time.Second
		c.BlackoutPhase = 13 * time.Second
		return c
	}()
	// Awful: RTT 300 ms ± 80 ms, 15 % loss: 150 ms ± 40 ms one way.
	Awful = RoundTrip(300*time.Millisecond, 80*time.Millisecond, 0.15)
)

var presets = map[string]*Config{
	"perfect":   &Perfect,
	"lan":       &LAN,
	"broadband": &Broadband,
	"mobile":    &Mobile,
	"spike":     &Spike,
	"awful":     &Awful,
}

// ErrUnknownPreset is wrapped by the error Preset returns for a name it does
// not know.
var ErrUnknownPreset = errors.New("netsim: unknown preset")

// Preset returns the preset Config called name (case-insensitive): one of
// PresetNames. The Blackouts slice of the result is a copy.
func Preset(name string) (Config, error) {
	p, ok := presets[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Config{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownPreset, name, strings.Join(PresetNames(), ", "))
	}
	c := *p
	c.Blackouts = slices.Clone(c.Blackouts)
	return c, nil
}

// PresetNames returns the names Preset accepts, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
