//go:build !js

package transport

import "github.com/pion/transport/v5"

// Net is pion/transport's Net.
type Net = transport.Net
