//go:build tools

// This file is never built. It pins, for go mod tidy, the versions of the
// dependencies the demo (still being written) imports. Delete it once the
// demo imports them.

package ragsync

import (
	_ "github.com/hajimehoshi/ebiten/v2"
	_ "github.com/hajimehoshi/ebiten/v2/vector"
	_ "golang.org/x/image/font/basicfont"
)
