//go:build !js

package http

import "net/http"

type (
	Client = http.Client
	Header = http.Header
)

// DefaultClient is http.DefaultClient.
var DefaultClient = http.DefaultClient
