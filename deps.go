//go:build tools

// This file is never built. It pins, for go mod tidy, the versions of
// dependencies that packages still being written will import: pion/webrtc
// v4.2.20 is the newest release the module proxy resolves here, and box2d
// v1.0.2 is the only one. Delete an import once real code imports it.
package ragsync

import (
	_ "github.com/ByteArena/box2d"
	_ "github.com/coder/websocket"
	_ "github.com/hajimehoshi/ebiten/v2"
	_ "github.com/hajimehoshi/ebiten/v2/vector"
	_ "github.com/pion/ice/v4"
	_ "github.com/pion/logging"
	_ "github.com/pion/transport/v4/vnet"
	_ "github.com/pion/webrtc/v4"
	_ "golang.org/x/image/font/basicfont"
)
