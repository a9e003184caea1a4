//go:build js

package transport

// Net stands in for pion/transport's Net, which a browser does not use.
type Net interface{}
