package server

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/ragsync/ragsync/signaling"
)

// Prometheus metrics, served at /metrics from a registry of the Server's
// own (nothing is registered globally, so several servers can run in one
// process). Names start with ragsync_signal_; the Go runtime's go_* and
// the process's process_* metrics are included. With Config.Node, every
// metric also has the label node.
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
type metrics struct {
	reg *prometheus.Registry

	pairings       *prometheus.CounterVec
	pairingWait    *prometheus.HistogramVec
	pairingLatency prometheus.Histogram
	refusals       *prometheus.CounterVec
	turnAllocs     prometheus.Gauge
	turnAllocsTot  prometheus.Counter
	turnRefusals   *prometheus.CounterVec
}

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
	const ns = "ragsync_signal"
	m := &metrics{reg: prometheus.NewRegistry()}
	var reg prometheus.Registerer = m.reg
	if s.cfg.Node != "" {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"node": s.cfg.Node}, reg)
	}
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, f))
	}
	counter := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, f))
	}
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

	m.pairings = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "pairings_total", Help: "Pairings made, by kind (code or quick)."}, []string{"kind"})
	m.pairingWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: ns, Name: "pairing_wait_seconds",
		Help:    "How long the first player of a pairing waited for the second (room created or queued to paired).",
		Buckets: prometheus.ExponentialBuckets(0.1, 2.5, 10), // 0.1 s … 6.4 min
	}, []string{"kind"})
	m.pairingLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: ns, Name: "pairing_latency_seconds",
		Help:    "Server latency of a pairing: from reading the request that completes it to each player's paired message being written.",
		Buckets: prometheus.ExponentialBuckets(0.0002, 2.5, 12), // 0.2 ms … 12 s
	})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "refusals_total", Help: "Error replies and refused connections, by error code and reason."}, []string{"code", "reason"})
	m.turnAllocs = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "turn_allocations", Help: "TURN allocations open."})
	m.turnAllocsTot = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "turn_allocations_total", Help: "TURN allocations made."})
	m.turnRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "turn_refusals_total", Help: "TURN requests refused, by reason (auth, quota, peer)."}, []string{"reason"})
	for _, k := range []string{"code", "quick"} {
		m.pairings.WithLabelValues(k)
	}
	reg.MustRegister(m.pairings, m.pairingWait, m.pairingLatency, m.refusals, m.turnAllocs, m.turnAllocsTot, m.turnRefusals,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// refusal counts an error reply or refused connection.
func (s *Server) refusal(code signaling.ErrorCode, reason string) {
	s.met.refusals.WithLabelValues(string(code), reason).Inc()
}

// MetricsHandler serves the server's Prometheus metrics (what /metrics
// serves), for mounting on an address of your own when Config.HideMetrics
// keeps them off the public one; behind Config.MetricsToken if set.
func (s *Server) MetricsHandler() http.Handler {
	return bearer(s.cfg.MetricsToken, promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{ErrorLog: nil, MaxRequestsInFlight: 4}))
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
