package game

import (
	"fmt"
	"math/rand/v2"

	"github.com/ragsync/ragsync/physics"
)

// BotLevel is how well a bot plays (-bot easy|normal|hard, ?bot=easy).
type BotLevel uint8

const (
	BotOff    BotLevel = iota // no bot
	BotEasy                   // reacts in 0.4 s, lets 4 in 5 attacks go, never blocks: a player who mashes punch wins
	BotNormal                 // reacts in 130 ms, lets a quarter of its attacks and a third of its blocks go
	BotHard                   // physics.Bot unhindered
)

// DefaultBotLevel is the level of a bare -bot (and ?bot=1).
const DefaultBotLevel = BotNormal

func (l BotLevel) String() string {
	switch l {
	case BotOff:
		return "off"
	case BotEasy:
		return "easy"
	case BotNormal:
		return "normal"
	case BotHard:
		return "hard"
	}
	return fmt.Sprintf("BotLevel(%d)", uint8(l))
}

// ParseBotLevel parses a -bot value: easy, normal, hard; "true" or "1" (a
// bare -bot, ?bot=1) is DefaultBotLevel, "false", "0" or "" is BotOff.
func ParseBotLevel(s string) (BotLevel, error) {
	switch s {
	case "easy":
		return BotEasy, nil
	case "normal":
		return BotNormal, nil
	case "hard":
		return BotHard, nil
	case "true", "1":
		return DefaultBotLevel, nil
	case "false", "0", "":
		return BotOff, nil
	}
	return BotOff, fmt.Errorf("-bot %q: want easy, normal or hard", s)
}

// botHandicap is what a level takes away from physics.Bot.
type botHandicap struct {
	delay     int     // ticks between the bot's decision and its input (reaction time)
	dropPress float64 // share of attack presses it lets go (a plan of an attack becomes idle)
	dropBlock float64 // share of blocks it lets go
}

var handicaps = [...]botHandicap{
	BotEasy:   {delay: 24, dropPress: 0.8, dropBlock: 1},
	BotNormal: {delay: 8, dropPress: 0.25, dropBlock: 0.3},
	BotHard:   {},
}

// maxBotDelay bounds botHandicap.delay (the ring of decisions).
const maxBotDelay = 32

// levelBot is a physics.Bot played at a level: it sees what physics.Bot
// decides and passes it on late, with some attacks and blocks let go.
// Seeded like physics.Bot, so a match replays exactly.
type levelBot struct {
	bot      *physics.Bot
	h        botHandicap
	rng      *rand.Rand
	ring     [maxBotDelay]physics.Input
	n        uint64 // decisions made
	prev     physics.Input
	dropping physics.Input // the attack or block being let go, until its plan ends
}

func newLevelBot(level BotLevel, seed uint64) *levelBot {
	if level < BotEasy || level > BotHard {
		level = DefaultBotLevel
	}
	return &levelBot{bot: physics.NewBot(seed), h: handicaps[level],
		rng: rand.New(rand.NewPCG(seed^0x6a09e667f3bcc908, seed))}
}

// Input is physics.Bot.Input at this bot's level: call it once per tick.
func (b *levelBot) Input(w *physics.World, me, rival physics.ObjectID) physics.Input {
	in := b.bot.Input(w, me, rival)
	// An attack or a block starts when its bit appears: decide then whether
	// to let it go, for as long as the bit stays.
	const held = physics.InputPunch | physics.InputKick | physics.InputBlock
	started := in &^ b.prev & held
	b.prev = in
	b.dropping &= in
	if started != 0 {
		p := b.h.dropPress
		if started&physics.InputBlock != 0 {
			p = b.h.dropBlock
		}
		if p > 0 && b.rng.Float64() < p {
			b.dropping |= started
		}
	}
	in &^= b.dropping
	if f := w.Fighter(me); f != nil {
		switch f.Action() {
		case physics.ActionKO, physics.ActionDown, physics.ActionGettingUp:
			b.ring = [maxBotDelay]physics.Input{} // nothing decided before a fall is acted on after it
		}
	}
	if b.h.delay == 0 {
		return in
	}
	i := b.n % uint64(b.h.delay)
	out := b.ring[i]
	b.ring[i] = in
	b.n++
	return out
}
