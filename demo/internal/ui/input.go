package ui

import (
	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/inpututil"

	"github.com/ragsync/ragsync/physics"
)

// keys is one tick's keyboard state, mapped to the game's controls.
type keys struct {
	fighter  physics.Input
	confirm  bool // R or Enter: rematch, new rival, retry
	hud      bool // F1 pressed
	ghost    bool // F2 pressed
	controls bool // F3 or H pressed
	quit     bool // Esc
}

// binding maps keys to one fighter control; any of them held sets it.
var bindings = []struct {
	in   physics.Input
	keys []ebiten.Key
}{
	{physics.InputLeft, []ebiten.Key{ebiten.KeyA, ebiten.KeyArrowLeft}},
	{physics.InputRight, []ebiten.Key{ebiten.KeyD, ebiten.KeyArrowRight}},
	{physics.InputJump, []ebiten.Key{ebiten.KeyW, ebiten.KeyArrowUp}},
	{physics.InputBlock, []ebiten.Key{ebiten.KeyS, ebiten.KeyArrowDown}},
	{physics.InputPunch, []ebiten.Key{ebiten.KeyJ}},
	{physics.InputKick, []ebiten.Key{ebiten.KeyK}},
}

// readKeys reads the keyboard. Held keys are sent every tick: the fighter
// itself acts on the press of jump, punch and kick.
func readKeys() keys {
	var k keys
	for _, b := range bindings {
		for _, key := range b.keys {
			if ebiten.IsKeyPressed(key) {
				k.fighter |= b.in
			}
		}
	}
	// Left and right together cancel out.
	if k.fighter.Has(physics.InputLeft | physics.InputRight) {
		k.fighter &^= physics.InputLeft | physics.InputRight
	}
	k.confirm = inpututil.IsKeyJustPressed(ebiten.KeyR) || inpututil.IsKeyJustPressed(ebiten.KeyEnter) ||
		inpututil.IsKeyJustPressed(ebiten.KeyNumpadEnter)
	k.hud = inpututil.IsKeyJustPressed(ebiten.KeyF1)
	k.ghost = inpututil.IsKeyJustPressed(ebiten.KeyF2)
	k.controls = inpututil.IsKeyJustPressed(ebiten.KeyF3) || inpututil.IsKeyJustPressed(ebiten.KeyH)
	k.quit = inpututil.IsKeyJustPressed(ebiten.KeyEscape)
	return k
}
