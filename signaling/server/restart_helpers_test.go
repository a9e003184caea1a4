package server

import (
	"testing"

	"github.com/ragsync/ragsync/signaling"
)

// restartSecret is the secret shared by the servers of a restart test.
var restartSecret = []byte("0123456789abcdef0123456789abcdef")

// pairThenRestart pairs two clients on a server with restartSecret, shuts
// that server down, and starts another with the same secret, as an
// operator restarts one. It returns the new server's URL and the pairings
// the first server issued.
func pairThenRestart(t testing.TB) (url string, pa, pb signaling.Pairing) {
	t.Helper()
	s1, url1 := startServer(t, Config{Secret: restartSecret})
	a, b := dial(t, url1, signaling.ClientConfig{}), dial(t, url1, signaling.ClientConfig{})
	pa, pb = pairByCode(t, a, b)
	if err := s1.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	_, url = startServer(t, Config{Secret: restartSecret})
	return url, pa, pb
}
