package server

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/ragsync/ragsync/internal/leaktest"
	"github.com/ragsync/ragsync/internal/promtext"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/ragsync/ragsync/signaling"
)

// scrape fetches and parses url's /metrics.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// metric returns the value of the metric name whose labels include the
// given pairs (a histogram's sample count), and whether there is one.
func metric(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestMetrics(t *testing.T) {
	leaktest.Check(t)
	s, url := startServer(t, Config{})
	a, b, c := dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{}), dial(t, url, signaling.ClientConfig{})
	pa, pb := pairByCode(t, a, b)
	exchange(t, a, b)
	if err := c.QuickMatch(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.JoinRoom(ctxT(t), "ZZZZZZ"); err == nil {
		t.Fatal("join while queued")
	}
	d := dial(t, url, signaling.ClientConfig{})
	if err := d.JoinRoom(ctxT(t), "ZZZZZZ"); err == nil {
		t.Fatal("joined a room that does not exist")
	}
	r := dialRaw(t, url, "v=7")
	r.expectError(signaling.ErrUnsupportedVersion)
	ra, rb, err := dialRelayPair(t, signaling.ClientConfig{}, url, pa, pb)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, ra, rb, "0123456789")
	waitFor(t, func() bool { return s.Stats().RelayBytes == 20 && s.Stats().Clients == 4 })

	fams := scrape(t, url)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"ragsync_signal_clients", nil, 4},
		{"ragsync_signal_rooms", nil, 1},
		{"ragsync_signal_queued", nil, 1},
		{"ragsync_signal_connections_total", nil, 4},
		{"ragsync_signal_pairings_total", []string{"kind", "code"}, 1},
		{"ragsync_signal_pairings_total", []string{"kind", "quick"}, 0},
		{"ragsync_signal_pairing_wait_seconds", []string{"kind", "code"}, 1},
		{"ragsync_signal_pairing_latency_seconds", nil, 2},
		{"ragsync_signal_signals_relayed_total", nil, 5},
		{"ragsync_signal_relay_streams", nil, 1},
		{"ragsync_signal_relay_streams_total", nil, 1},
		{"ragsync_signal_relay_bytes_total", nil, 20},
		{"ragsync_signal_refusals_total", []string{"code", "room_not_found", "reason", "client_error"}, 1},
		{"ragsync_signal_refusals_total", []string{"code", "wrong_state", "reason", "client_error"}, 1},
		{"ragsync_signal_refusals_total", []string{"code", "unsupported_version", "reason", "client_error"}, 1},
		{"ragsync_signal_turn_allocations", nil, 0},
		{"ragsync_signal_addresses", nil, 1},
	} {
		if got, ok := metric(fams, tc.name, tc.labels...); !ok || got != tc.want {
			t.Errorf("%s%v = %v (present %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	present := []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "go_memstats_sys_bytes", "ragsync_signal_turn_allocations_total"}
	if runtime.GOOS == "linux" { // the process_* metrics are read from /proc
		present = append(present, "go_threads", "process_open_fds", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_start_time_seconds")
	}
	for _, name := range present {
		if _, ok := metric(fams, name); !ok {
			t.Errorf("%s missing", name)
		}
	}
	// The histograms' buckets are the documented ones: 0.1×2.5^i, 10 of
	// them, and 0.0002×2.5^i, 12, each with +Inf besides.
	for _, h := range []struct {
		name         string
		start        float64
		n            int
		observations uint64
	}{{"ragsync_signal_pairing_wait_seconds", 0.1, 10, 1}, {"ragsync_signal_pairing_latency_seconds", 0.0002, 12, 2}} {
		f := fams[h.name]
		if f.GetType() != dto.MetricType_HISTOGRAM {
			t.Errorf("%s: type %v", h.name, f.GetType())
			continue
		}
		hist := f.Metric[0].Histogram
		var bounds []float64
		prev := uint64(0)
		for _, b := range hist.Bucket {
			if !math.IsInf(b.GetUpperBound(), 1) {
				bounds = append(bounds, b.GetUpperBound())
			}
			if b.GetCumulativeCount() < prev {
				t.Errorf("%s: buckets not cumulative: %v", h.name, hist.Bucket)
			}
			prev = b.GetCumulativeCount()
		}
		if len(bounds) != h.n || prev != h.observations || hist.GetSampleCount() != h.observations {
			t.Errorf("%s: %d buckets (want %d), last %d, count %d (want %d)", h.name, len(bounds), h.n, prev, hist.GetSampleCount(), h.observations)
			continue
		}
		for i, b := range bounds {
			if want := h.start * math.Pow(2.5, float64(i)); math.Abs(b-want) > want*1e-12 {
				t.Errorf("%s: bucket %d bound %v, want %v", h.name, i, b, want)
			}
		}
	}
	if t.Failed() {
		return
	}

	// HideMetrics keeps them off the handler; MetricsHandler still serves.
	hidden, err := New(Config{HideMetrics: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hidden.Shutdown(context.Background()) })
	rec := httptest.NewRecorder()
	hidden.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 404 {
		t.Fatalf("hidden /metrics: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	hidden.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || !containsLine(rec.Body.String(), "ragsync_signal_clients 0") {
		t.Fatalf("MetricsHandler: %d %.200s", rec.Code, rec.Body.String())
	}
}

// TestMetricsNode: with Config.Node every metric, the runtime's included,
// carries the label node; a node name that is not short UTF-8 is refused.
func TestMetricsNode(t *testing.T) {
	s, err := New(Config{Node: "eu-1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, line := range []string{`ragsync_signal_clients{node="eu-1"} 0`, `ragsync_signal_pairings_total{kind="quick",node="eu-1"} 0`} {
		if !containsLine(body, line) {
			t.Errorf("no line %s in\n%.2000s", line, body)
		}
	}
	if strings.Contains(body, "\nragsync_signal_clients 0") || strings.Contains(body, "\ngo_goroutines ") {
		t.Errorf("a metric without the node label:\n%.2000s", body)
	}
	for _, bad := range []string{strings.Repeat("n", 65), "\xff"} {
		if _, err := New(Config{Node: bad}); err == nil {
			t.Errorf("node %q accepted", bad)
		}
	}
}

func containsLine(s, line string) bool {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if s[:i] == line {
			return true
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return false
}

// TestMetricsToken: with Config.MetricsToken, /metrics answers 401
// without the bearer token (or with a wrong one) and serves with it; a
// short token is refused.
func TestMetricsToken(t *testing.T) {
	const tok = "a metrics token of 32 characters"
	s, err := New(Config{MetricsToken: tok, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + tok + "x", tok} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		s.ServeHTTP(rec, req)
		if rec.Code != 401 || strings.Contains(rec.Body.String(), "ragsync_signal_clients") {
			t.Errorf("Authorization %q: %d %.200s", auth, rec.Code, rec.Body.String())
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	s.ServeHTTP(rec, req)
	if rec.Code != 200 || !containsLine(rec.Body.String(), "ragsync_signal_clients 0") {
		t.Fatalf("with the token: %d %.200s", rec.Code, rec.Body.String())
	}
	if _, err := New(Config{MetricsToken: "short"}); err == nil {
		t.Fatal("a 5-byte metrics token accepted")
	}
}

// TestMetricsHandler: /metrics is the text format 0.0.4, gzipped for a
// scraper that accepts gzip (as Prometheus does) and not otherwise; a
// fifth scrape while four are being served is answered 503 with a JSON
// error that says no more.
func TestMetricsHandler(t *testing.T) {
	s, err := New(Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	h := s.MetricsHandler()
	for _, tc := range []struct {
		accept string
		gzip   bool
	}{
		{"", false},
		{"identity", false},
		{"gzip", true},
		{"deflate, gzip;q=1.0, *;q=0.5", true},
		{"*", true},
		{"gzip;q=0", false},
		{"br, gzip; q=0.0", false},
	} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if tc.accept != "" {
			req.Header.Set("Accept-Encoding", tc.accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 || rec.Header().Get("Content-Type") != promtext.ContentType {
			t.Fatalf("Accept-Encoding %q: %d %q", tc.accept, rec.Code, rec.Header().Get("Content-Type"))
		}
		body := io.Reader(rec.Body)
		if got := rec.Header().Get("Content-Encoding") == "gzip"; got != tc.gzip {
			t.Errorf("Accept-Encoding %q: gzipped %v", tc.accept, got)
			continue
		}
		if tc.gzip {
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = zr
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(body)
		if err != nil {
			t.Fatalf("Accept-Encoding %q: parsing: %v", tc.accept, err)
		}
		if v, ok := metric(fams, "ragsync_signal_clients"); !ok || v != 0 {
			t.Errorf("Accept-Encoding %q: ragsync_signal_clients %v %v", tc.accept, v, ok)
		}
	}

	for range maxScrapes { // four scrapes being served
		s.met.scrapes <- struct{}{}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var e struct{ Type, Code, Message string }
	if err := json.Unmarshal(rec.Body.Bytes(), &e); rec.Code != 503 || err != nil || e.Code != string(signaling.ErrUnavailable) || strings.Contains(rec.Body.String(), "ragsync_signal") {
		t.Errorf("a fifth scrape: %d %q (%v)", rec.Code, rec.Body.String(), err)
	}
	<-s.met.scrapes
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Errorf("a scrape after one finished: %d", rec.Code)
	}
}
