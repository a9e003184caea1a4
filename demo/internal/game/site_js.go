//go:build js

package game

import "net/http"

// siteHandler: a browser runs no server, and the web build must not embed
// itself (webdist holds the wasm).
func siteHandler() http.Handler { return nil }
