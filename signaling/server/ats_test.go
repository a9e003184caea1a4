package server

import "github.com/nats-io/nats-server/v2/server/ats"

// The embedded NATS server's access-time ticker is one goroutine per
// process, started by the first server and stopped by the last. Started
// here, outside any test's synctest bubble, it stays out of them: a
// bubble holding it would never be idle, and its virtual clock would
// never move.
func init() { ats.Register() }
