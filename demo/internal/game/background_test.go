package game

import (
	"log/slog"
	"testing"
	"time"
)

func TestBackgroundMessage(t *testing.T) {
	for _, hidden := range []bool{true, false} {
		b := appendBackground(nil, hidden)
		if got, ok := parseBackground(b); !ok || got != hidden {
			t.Errorf("%v: round trip %x gives %v, %v", hidden, b, got, ok)
		}
	}
	for _, b := range [][]byte{nil, {bgKind}, {bgKind, bgVersion}, {bgKind, bgVersion, 2}, {bgKind, 2, 1}, {bgKind, bgVersion, 1, 0}, {MsgKind, bgVersion, 1}} {
		if _, ok := parseBackground(b); ok {
			t.Errorf("%x accepted", b)
		}
	}
}

// The rival's "hidden" holds for bgHold after the last one, and "shown"
// ends it at once.
func TestRivalInBackground(t *testing.T) {
	p := &Player{log: slog.New(slog.DiscardHandler)}
	t0 := time.Unix(1000, 0)
	p.onBackground(true, t0)
	if !p.RivalInBackground() {
		t.Fatal("hidden: not in the background")
	}
	p.bgTick(t0.Add(bgHold - time.Millisecond))
	if !p.RivalInBackground() {
		t.Error("within bgHold: not in the background")
	}
	p.onBackground(true, t0.Add(bgRepeat)) // repeated: holds on
	p.bgTick(t0.Add(bgHold))
	if !p.RivalInBackground() {
		t.Error("repeated: not in the background")
	}
	p.bgTick(t0.Add(bgRepeat + bgHold))
	if p.RivalInBackground() {
		t.Error("bgHold after the last: still in the background")
	}
	p.onBackground(true, t0.Add(10*time.Second))
	p.onBackground(false, t0.Add(10*time.Second+time.Millisecond))
	if p.RivalInBackground() {
		t.Error("shown: still in the background")
	}
}
