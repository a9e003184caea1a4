//go:build !js

package game

import (
	"net/http"

	"github.com/ragsync/ragsync/demo/webdist"
)

// siteHandler is what the embedded signaling server serves at /: the web
// demo.
func siteHandler() http.Handler { return webdist.Handler() }
