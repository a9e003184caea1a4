package game

import (
	"io"
	"testing"
	"time"

	"github.com/ragsync/ragsync/physics"
)

// masher is a new player who only mashes punch: pressed for 3 ticks, let
// go for 3 (10 presses a second), never walking, jumping or blocking.
type masher struct{ n int }

func (m *masher) Input() physics.Input {
	m.n++
	if m.n%6 < 3 {
		return physics.InputPunch
	}
	return 0
}

// offlineRound plays one round of the demo's arena in one world, with the
// game's own clock (60 ticks a game second): the masher's fighter 1
// against a bot of level at fighter 2, each hit applied to its victim, until
// a KO or the end of a round of length. It returns the winner (1 masher, 2
// bot, 0 a draw) and the game time the round lasted.
func offlineRound(t testing.TB, level BotLevel, seed uint64, length time.Duration) (winner int, lasted time.Duration) {
	a, err := newArena()
	if err != nil {
		t.Fatal(err)
	}
	w := a.world
	m := &masher{}
	bot := newLevelBot(level, seed)
	f1, f2 := w.Fighter(Fighter1), w.Fighter(Fighter2)
	ticks := int(length / physics.TickDuration)
	for i := range ticks {
		f1.SetInput(m.Input())
		f2.SetInput(bot.Input(w, Fighter2, Fighter1))
		w.Step()
		for _, h := range w.Hits() {
			if v := w.Fighter(h.Victim); v != nil {
				v.ApplyHit(h)
			}
		}
		if f1.HP() == 0 || f2.HP() == 0 {
			ticks = i + 1
			break
		}
	}
	lasted = time.Duration(ticks) * physics.TickDuration
	switch {
	case f1.HP() > f2.HP():
		return 1, lasted
	case f2.HP() > f1.HP():
		return 2, lasted
	}
	return 0, lasted
}

// TestMasherAgainstBotLevels plays 10 rounds per bot level against the
// masher (seeds 1..10, 60 s game-time rounds): a player who only mashes
// punch beats easy most of the time and normal sometimes, and hard beats
// the masher most of the time. The rounds are seeded, so the figures
// replay exactly (-v prints them).
func TestMasherAgainstBotLevels(t *testing.T) {
	const rounds = 10
	wins := map[BotLevel]int{}
	for _, level := range []BotLevel{BotEasy, BotNormal, BotHard} {
		var won, lost, drawn int
		var total time.Duration
		for seed := uint64(1); seed <= rounds; seed++ {
			w, d := offlineRound(t, level, seed, DefaultRoundLength)
			total += d
			switch w {
			case 1:
				won++
			case 2:
				lost++
			default:
				drawn++
			}
		}
		wins[level] = won
		t.Logf("bot %-6s: masher won %d/%d, lost %d, drew %d; mean round %.1f s of game time", level, won, rounds, lost, drawn,
			(total / rounds).Seconds())
	}
	if wins[BotEasy] < 7 {
		t.Errorf("the masher won %d/%d rounds against easy, want at least 7", wins[BotEasy], rounds)
	}
	if wins[BotNormal] < 1 || wins[BotNormal] > 8 {
		t.Errorf("the masher won %d/%d rounds against normal, want sometimes (1..8)", wins[BotNormal], rounds)
	}
	if wins[BotHard] > 3 {
		t.Errorf("the masher won %d/%d rounds against hard, want at most 3", wins[BotHard], rounds)
	}
	if !(wins[BotEasy] >= wins[BotNormal] && wins[BotNormal] >= wins[BotHard]) {
		t.Errorf("masher wins by level %v: want easy >= normal >= hard", wins)
	}
}

func TestParseBotLevel(t *testing.T) {
	for in, want := range map[string]BotLevel{"easy": BotEasy, "normal": BotNormal, "hard": BotHard, "true": DefaultBotLevel,
		"1": DefaultBotLevel, "false": BotOff, "0": BotOff, "": BotOff} {
		if got, err := ParseBotLevel(in); err != nil || got != want {
			t.Errorf("ParseBotLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseBotLevel("expert"); err == nil {
		t.Error("ParseBotLevel(expert): no error")
	}
}

// TestBotFlag: -bot takes a level after a space or '=', and alone is the
// default level; a word after it that is not a level stays an argument.
func TestBotFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want BotLevel
	}{
		{[]string{"-bot"}, DefaultBotLevel},
		{[]string{"-bot", "easy"}, BotEasy},
		{[]string{"-bot=hard"}, BotHard},
		{[]string{"--bot", "normal", "-headless"}, BotNormal},
		{[]string{"-bot=1"}, DefaultBotLevel},
		{[]string{"-headless"}, BotOff},
	} {
		c, err := ParseFlags(tc.args, io.Discard)
		if err != nil || c.Bot != tc.want {
			t.Errorf("ParseFlags(%q): bot %v, err %v; want %v", tc.args, c.Bot, err, tc.want)
		}
	}
	for _, bad := range [][]string{{"-bot=expert"}, {"-bot", "expert"}} {
		if _, err := ParseFlags(bad, io.Discard); err == nil {
			t.Errorf("ParseFlags(%q): no error", bad)
		}
	}
}
