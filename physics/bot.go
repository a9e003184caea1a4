package physics

import "math/rand/v2"

// Bot is a simple computer opponent: it plays a fighter from what its own
// world shows (its fighter and its copy of the rival). It walks to the rival,
// punches and kicks at close range, blocks, backs off and jumps now and then.
// It is seeded, so a match replays exactly. The demo's -bot rival and
// cmd/ragsim's players are Bots.
type Bot struct {
	rng       *rand.Rand
	plan      Input
	planTicks int
	release   int // ticks to hold no attack button after pressing one
}

// NewBot returns a bot with its own random sequence.
func NewBot(seed uint64) *Bot {
	return &Bot{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Input decides the controls of fighter me against rival for this tick. It
// returns no input if either is not a fighter of w.
func (b *Bot) Input(w *World, me, rival ObjectID) Input {
	f := w.Fighter(me)
	if f == nil || w.Fighter(rival) == nil {
		return 0
	}
	switch f.Action() {
	case ActionKO, ActionDown, ActionGettingUp:
		b.planTicks = 0
		return 0
	}
	if b.planTicks > 0 {
		b.planTicks--
		return b.plan
	}
	if b.release > 0 { // let go of the attack button so the next press counts
		b.release--
		return 0
	}
	mp, _ := w.Object(me).Transform(0)
	rp, _ := w.Object(rival).Transform(0)
	d := rp.X - mp.X
	toward, away := InputRight, InputLeft
	if d < 0 {
		toward, away = away, toward
	}
	if d < 0 {
		d = -d
	}
	r := b.rng.Float64()
	switch {
	case d > 1.1:
		b.plan, b.planTicks = toward, 8+b.rng.IntN(20)
		if r < 0.06 {
			b.plan |= InputJump
		}
	case r < 0.40:
		b.plan, b.planTicks, b.release = InputPunch, 3, 6+b.rng.IntN(10)
	case r < 0.62:
		b.plan, b.planTicks, b.release = InputKick, 3, 10+b.rng.IntN(12)
	case r < 0.74:
		b.plan, b.planTicks = InputBlock, 15+b.rng.IntN(30)
	case r < 0.86:
		b.plan, b.planTicks = away, 10+b.rng.IntN(25)
	case r < 0.92:
		b.plan, b.planTicks = toward|InputJump, 2
	default:
		b.plan, b.planTicks = 0, 5+b.rng.IntN(20)
	}
	return b.plan
}
