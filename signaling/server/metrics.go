package server

import (
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ragsync/ragsync/internal/httpgzip"
	"github.com/ragsync/ragsync/internal/promtext"
	"github.com/ragsync/ragsync/signaling"
)

// Prometheus metrics, served at /metrics from a registry of the Server's
// own (nothing is registered globally, so several servers can run in one
// process). Names start with ragsync_signal_; a few go_* metrics of the Go
// runtime and process_* metrics of the process are included (below). With
// Config.Node, every metric also has the label node.
//
//	ragsync_signal_clients                   gauge      open WebSocket connections
//	ragsync_signal_rooms                     gauge      rooms with one or two players
//	ragsync_signal_queued                    gauge      players waiting for quick match
//	ragsync_signal_addresses                 gauge      client addresses tracked by per-address limits
//	ragsync_signal_connections_total         counter    WebSocket connections accepted
//	ragsync_signal_pairings_total{kind}      counter    pairings made; kind is "code" or "quick"
//	ragsync_signal_pairing_wait_seconds{kind} histogram how long the first player waited for the second
//	ragsync_signal_pairing_latency_seconds   histogram from reading the request that completes a pairing
//	                                                    to each player's paired message being written
//	ragsync_signal_signals_relayed_total     counter    offers, answers and candidates relayed
//	ragsync_signal_messages_delayed_total    counter    messages held back by their address's message rate
//	ragsync_signal_relay_streams             gauge      relay streams open
//	ragsync_signal_relay_streams_total       counter    relay streams established (re-attachments included)
//	ragsync_signal_relay_bytes_total         counter    bytes carried by relay streams
//	ragsync_signal_refusals_total{code,reason} counter  error replies and refused connections, by error code
//	                                                    and reason: global, per_address, per_connection,
//	                                                    timeout, client_error or shutdown
//	ragsync_signal_turn_allocations          gauge      TURN allocations open
//	ragsync_signal_turn_allocations_total    counter    TURN allocations made
//	ragsync_signal_turn_refusals_total{reason} counter  TURN requests refused: auth, quota, peer (a permission
//	                                                    refused, or a relayed packet to or from the
//	                                                    server's own addresses dropped)
//
// Of the Go runtime and the process: a subset of what the Go and process
// collectors of Prometheus's Go client wrote, under the same names and
// types (internal/promtext's Registry.GoAndProcessMetrics; go_* from
// runtime/metrics, which does not stop the world):
//
//	go_info{version}                         gauge      1, labelled with the Go version
//	go_goroutines                            gauge      goroutines
//	go_threads                               gauge      OS threads of the process
//	go_sched_gomaxprocs_threads              gauge      GOMAXPROCS
//	go_memstats_heap_alloc_bytes             gauge      bytes of heap objects
//	go_memstats_alloc_bytes_total            counter    bytes allocated on the heap
//	go_memstats_sys_bytes                    gauge      bytes the Go runtime has mapped
//	go_memstats_next_gc_bytes                gauge      heap size the next GC starts at
//	go_gc_cycles_total                       counter    GC cycles completed
//	process_cpu_seconds_total                counter    user and system CPU time (the process_*
//	process_resident_memory_bytes            gauge      metrics on Linux only, from /proc/self)
//	process_virtual_memory_bytes             gauge
//	process_open_fds                         gauge
//	process_max_fds                          gauge
//	process_start_time_seconds               gauge
//
// They are written by internal/promtext in the Prometheus text format
// 0.0.4, served at most maxScrapes scrapes at a time (503 beyond) and
// gzipped when the scraper accepts it, as Prometheus does.
type metrics struct {
	reg     *promtext.Registry
	scrapes chan struct{} // a token per scrape being served

	pairings       *promtext.CounterVec
	pairingWait    *promtext.HistogramVec
	pairingLatency *promtext.Histogram
	refusals       *promtext.CounterVec
	turnAllocs     atomic.Int64
	turnAllocsTot  *promtext.Counter
	turnRefusals   *promtext.CounterVec
}

// maxScrapes is how many /metrics requests are served at once.
const maxScrapes = 4

// Refusal reasons (the reason label of ragsync_signal_refusals_total).
const (
	reasonGlobal        = "global"         // a server-wide limit
	reasonPerAddress    = "per_address"    // a per-address limit
	reasonPerConnection = "per_connection" // a per-connection limit (rate, size, slow consumer)
	reasonTimeout       = "timeout"        // idle or wait timeout
	reasonClient        = "client_error"   // a bad or ill-timed message
	reasonShutdown      = "shutdown"       // the server is stopping
)

// defaultReason is the reason of codes that have only one.
func defaultReason(code signaling.ErrorCode) string {
	switch code {
	case signaling.ErrTooManyRooms, signaling.ErrServerFull, signaling.ErrTooManyRelays:
		return reasonGlobal
	case signaling.ErrTooManyConns, signaling.ErrTooManyHandshakes, signaling.ErrTooManyFailedJoins:
		return reasonPerAddress
	case signaling.ErrRateLimited, signaling.ErrMessageTooBig, signaling.ErrSlowConsumer:
		return reasonPerConnection
	case signaling.ErrIdleTimeout, signaling.ErrPeerTimeout:
		return reasonTimeout
	case signaling.ErrShuttingDown:
		return reasonShutdown
	}
	return reasonClient
}

func newMetrics(s *Server) *metrics {
	const ns = "ragsync_signal_"
	m := &metrics{scrapes: make(chan struct{}, maxScrapes)}
	if s.cfg.Node != "" {
		m.reg = promtext.NewRegistry("node", s.cfg.Node)
	} else {
		m.reg = promtext.NewRegistry()
	}
	reg := m.reg
	gauge := func(name, help string, f func() float64) { reg.GaugeFunc(ns+name, help, f) }
	counter := func(name, help string, f func() float64) { reg.CounterFunc(ns+name, help, f) }
	locked := func(f func() int) func() float64 {
		return func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return float64(f())
		}
	}
	gauge("clients", "Open WebSocket connections.", locked(func() int { return len(s.clients) }))
	gauge("rooms", "Rooms with one or two players.", locked(func() int { return len(s.rooms) }))
	gauge("queued", "Players waiting for quick match.", locked(func() int { return len(s.queue) }))
	gauge("relay_streams", "Relay streams open.", locked(func() int { return len(s.relays) }))
	gauge("addresses", "Client addresses tracked by the per-address limits.", func() float64 { return float64(s.lim.size()) })
	counter("connections_total", "WebSocket connections accepted.", func() float64 { return float64(s.conns.Load()) })
	counter("messages_delayed_total", "Client messages held back by their address's message rate.", func() float64 { return float64(s.delayed.Load()) })
	counter("signals_relayed_total", "Offers, answers and candidates relayed between players.", func() float64 { return float64(s.relayed.Load()) })
	counter("relay_streams_total", "Relay streams established, re-attachments included.", func() float64 { return float64(s.relaysTotal.Load()) })
	counter("relay_bytes_total", "Bytes carried by relay streams, both directions.", func() float64 { return float64(s.relayBytes.Load()) })

	m.pairings = reg.CounterVec(ns+"pairings_total", "Pairings made, by kind (code or quick).", "kind")
	m.pairingWait = reg.HistogramVec(ns+"pairing_wait_seconds",
		"How long the first player of a pairing waited for the second (room created or queued to paired).",
		promtext.ExponentialBuckets(0.1, 2.5, 10), // 0.1 s … 6.4 min
		"kind")
	m.pairingLatency = reg.Histogram(ns+"pairing_latency_seconds",
		"Server latency of a pairing: from reading the request that completes it to each player's paired message being written.",
		promtext.ExponentialBuckets(0.0002, 2.5, 12)) // 0.2 ms … 12 s
	m.refusals = reg.CounterVec(ns+"refusals_total", "Error replies and refused connections, by error code and reason.", "code", "reason")
	reg.GaugeFunc(ns+"turn_allocations", "TURN allocations open.", func() float64 { return float64(m.turnAllocs.Load()) })
	m.turnAllocsTot = reg.Counter(ns+"turn_allocations_total", "TURN allocations made.")
	m.turnRefusals = reg.CounterVec(ns+"turn_refusals_total", "TURN requests refused, by reason (auth, quota, peer).", "reason")
	for _, k := range []string{"code", "quick"} {
		m.pairings.With(k)
	}
	reg.GoAndProcessMetrics()
	return m
}

// refusal counts an error reply or refused connection.
func (s *Server) refusal(code signaling.ErrorCode, reason string) {
	s.met.refusals.With(string(code), reason).Inc()
}

// MetricsHandler serves the server's Prometheus metrics (what /metrics
// serves), for mounting on an address of your own when Config.HideMetrics
// keeps them off the public one; behind Config.MetricsToken if set.
func (s *Server) MetricsHandler() http.Handler {
	return bearer(s.cfg.MetricsToken, s.met)
}

// gzips are gzip writers for the scrapes that accept gzip.
var gzips sync.Pool

// ServeHTTP serves the metrics in the text format, gzipped if the request
// accepts gzip, unless maxScrapes are being served already.
func (m *metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case m.scrapes <- struct{}{}:
		defer func() { <-m.scrapes }()
	default:
		writeHTTPError(w, http.StatusServiceUnavailable, &signaling.Error{Code: signaling.ErrUnavailable,
			Message: "/metrics is serving " + strconv.Itoa(maxScrapes) + " scrapes already; try again later"})
		return
	}
	var body bytes.Buffer
	m.reg.WriteTo(&body) // a bytes.Buffer does not fail
	h := w.Header()
	h.Set("Content-Type", promtext.ContentType)
	h.Add("Vary", "Accept-Encoding")
	if !httpgzip.Accepts(r.Header.Values("Accept-Encoding")) {
		h.Set("Content-Length", strconv.Itoa(body.Len()))
		w.Write(body.Bytes())
		return
	}
	h.Set("Content-Encoding", "gzip")
	zw, _ := gzips.Get().(*gzip.Writer)
	if zw == nil {
		zw = gzip.NewWriter(w)
	} else {
		zw.Reset(w)
	}
	zw.Write(body.Bytes())
	zw.Close()
	zw.Reset(nil)
	gzips.Put(zw)
}

// bearer guards h with "Authorization: Bearer <token>"; an empty token
// guards nothing.
func bearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			writeHTTPError(w, http.StatusUnauthorized, &signaling.Error{Code: signaling.ErrBadToken, Message: "/metrics needs Authorization: Bearer <metrics token>"})
			return
		}
		h.ServeHTTP(w, r)
	})
}
