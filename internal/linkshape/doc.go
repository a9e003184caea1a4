// Package linkshape makes the loopback link of a test's own network
// namespace slow and lossy, for ragsync's real-process tests (issue 21:
// pairing with every packet delayed 150 ms each way and 30 % lost). The
// kernels we test on have no netem, so iptables' statistic match drops a
// share of the packets and nfqdelay (internal/tools/nfqdelay, an NFQUEUE
// program) holds the rest for a fixed delay.
//
// A packet between two sockets on lo crosses the OUTPUT hook once and the
// INPUT hook once (OUTPUT, POSTROUTING, the loopback device, PREROUTING,
// INPUT). The rules sit in INPUT: a DROP in OUTPUT fails the sender's
// write with EPERM, which a packet lost on a real link never does, while a
// DROP in INPUT is silent, as real loss is. Each one-way trip is dropped
// with probability Loss and otherwise held for Delay, once. A request and
// its reply take 2×Delay and both arrive with probability (1−Loss)².
//
// A test first moves itself into a namespace of its own, then shapes it:
//
//	func TestOnBadLink(t *testing.T) {
//		if !linkshape.Isolate(t) {
//			return // the test ran in its namespace, reported above
//		}
//		linkshape.Apply(t, linkshape.Shape{Delay: 150 * time.Millisecond, Loss: 0.3})
//		// start servers and peers on 127.0.0.1: every packet is shaped
//	}
//
// Isolate skips the test when it cannot make a namespace (no unshare,
// no root or user namespaces, no iptables) or under -short. Apply refuses
// to shape a namespace that has any interface but lo, so it can never
// touch the host's network. The package is for tests only (Linux).
package linkshape
