// Package transport is what Config takes of pion/transport: Net. Natively
// it is pion's (an alias). In a js/wasm build it stands in for it and is
// not used (the browser does its own ICE): pion's interface names
// *net.Dialer, which links the net package's dialer and DNS resolver into
// the web build.
package transport
