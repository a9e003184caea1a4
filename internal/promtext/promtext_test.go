package promtext

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// text returns what r writes.
func text(t testing.TB, r *Registry) string {
	t.Helper()
	var b strings.Builder
	n, err := r.WriteTo(&b)
	if err != nil || n != int64(b.Len()) {
		t.Fatalf("WriteTo: %d, %v; wrote %d", n, err, b.Len())
	}
	return b.String()
}

// parse parses s with Prometheus's own parser of the text format.
func parse(t testing.TB, s string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(s))
	if err != nil {
		t.Fatalf("Prometheus's parser: %v\n%s", err, s)
	}
	return fams
}

// TestGolden: families sorted by name, the vectors' series by label
// values, labels by name (the registry's included, le last), an empty
// vector left out, histogram buckets cumulative.
func TestGolden(t *testing.T) {
	r := NewRegistry("node", "n1")
	c := r.Counter("t_counter_total", "A counter.")
	c.Add(3)
	v := r.CounterVec("t_vec_total", "A vector: by zeta and alpha.", "zeta", "alpha")
	v.With("z2", "a1").Inc()
	v.With("z1", "a2").Add(2)
	v.With("z1", "a1")
	r.CounterVec("t_empty_total", "No series.", "x")
	h := r.Histogram("t_hist_seconds", "A histogram.", []float64{0.5, 1, 2.5})
	h.Observe(0.5)
	h.Observe(0.75)
	h.Observe(3)
	hv := r.HistogramVec("t_histvec", "A histogram vector.", []float64{1}, "kind")
	hv.With("b").Observe(2)
	hv.With("a").Observe(0.5)
	r.GaugeFunc("t_gauge", "A gauge.", func() float64 { return -1.5 })
	r.CounterFunc("a_first_total", "Sorted first.", func() float64 { return 1e21 })
	r.funcMetric("t_absent", "Left out when its function says so.", "gauge", nil, func() (float64, bool) { return 0, false })

	const want = `# HELP a_first_total Sorted first.
# TYPE a_first_total counter
a_first_total{node="n1"} 1e+21
# HELP t_counter_total A counter.
# TYPE t_counter_total counter
t_counter_total{node="n1"} 3
# HELP t_gauge A gauge.
# TYPE t_gauge gauge
t_gauge{node="n1"} -1.5
# HELP t_hist_seconds A histogram.
# TYPE t_hist_seconds histogram
t_hist_seconds_bucket{node="n1",le="0.5"} 1
t_hist_seconds_bucket{node="n1",le="1"} 2
t_hist_seconds_bucket{node="n1",le="2.5"} 2
t_hist_seconds_bucket{node="n1",le="+Inf"} 3
t_hist_seconds_sum{node="n1"} 4.25
t_hist_seconds_count{node="n1"} 3
# HELP t_histvec A histogram vector.
# TYPE t_histvec histogram
t_histvec_bucket{kind="a",node="n1",le="1"} 1
t_histvec_bucket{kind="a",node="n1",le="+Inf"} 1
t_histvec_sum{kind="a",node="n1"} 0.5
t_histvec_count{kind="a",node="n1"} 1
t_histvec_bucket{kind="b",node="n1",le="1"} 0
t_histvec_bucket{kind="b",node="n1",le="+Inf"} 1
t_histvec_sum{kind="b",node="n1"} 2
t_histvec_count{kind="b",node="n1"} 1
# HELP t_vec_total A vector: by zeta and alpha.
# TYPE t_vec_total counter
t_vec_total{alpha="a1",node="n1",zeta="z1"} 0
t_vec_total{alpha="a1",node="n1",zeta="z2"} 1
t_vec_total{alpha="a2",node="n1",zeta="z1"} 2
`
	got := text(t, r)
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if again := text(t, r); again != got {
		t.Fatalf("a second write differs:\n%s", again)
	}
	fams := parse(t, got)
	if f := fams["t_hist_seconds"]; f.GetType() != dto.MetricType_HISTOGRAM || f.Metric[0].Histogram.GetSampleCount() != 3 || f.Metric[0].Histogram.GetSampleSum() != 4.25 {
		t.Errorf("parsed histogram: %v", f)
	}
	if f := fams["t_vec_total"]; f.GetType() != dto.MetricType_COUNTER || len(f.Metric) != 3 {
		t.Errorf("parsed vector: %v", f)
	}

	// Without registry labels, a sample with no labels has no braces.
	r = NewRegistry()
	r.Counter("plain_total", "Plain.").Inc()
	r.Histogram("plain_seconds", "Plain.", []float64{1}).Observe(1)
	const plain = `# HELP plain_seconds Plain.
# TYPE plain_seconds histogram
plain_seconds_bucket{le="1"} 1
plain_seconds_bucket{le="+Inf"} 1
plain_seconds_sum 1
plain_seconds_count 1
# HELP plain_total Plain.
# TYPE plain_total counter
plain_total 1
`
	if got := text(t, r); got != plain {
		t.Fatalf("got\n%s\nwant\n%s", got, plain)
	}
	parse(t, plain)
}

// TestEscaping: label values escape backslash, double quote and newline;
// HELP escapes backslash and newline only; bytes that are not UTF-8 are
// written as U+FFFD; Prometheus's parser reads the values back.
func TestEscaping(t *testing.T) {
	const odd = "a\"b\\c\nd"
	r := NewRegistry("node", `say "hi"`)
	r.CounterVec("e_total", "Help with \\ a backslash,\na newline and \"quotes\".", "v").With(odd).Inc()
	r.CounterVec("u_total", "Not UTF-8.", "v").With("x\xffy").Inc()
	const want = `# HELP e_total Help with \\ a backslash,\na newline and "quotes".
# TYPE e_total counter
e_total{node="say \"hi\"",v="a\"b\\c\nd"} 1
# HELP u_total Not UTF-8.
# TYPE u_total counter
u_total{node="say \"hi\"",v="x` + "\uFFFD" + `y"} 1
`
	got := text(t, r)
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	fams := parse(t, got)
	f := fams["e_total"]
	if f.GetHelp() != "Help with \\ a backslash,\na newline and \"quotes\"." {
		t.Errorf("parsed help %q", f.GetHelp())
	}
	labels := map[string]string{}
	for _, l := range f.Metric[0].Label {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["v"] != odd || labels["node"] != `say "hi"` {
		t.Errorf("parsed labels %q", labels)
	}
}

// TestHistogramBuckets: a bucket counts observations up to and including
// its bound; the written buckets are cumulative, +Inf counting all, and
// _count equals it; NaN and values above the last bound count in +Inf
// only.
func TestHistogramBuckets(t *testing.T) {
	r := NewRegistry()
	h := r.Histogram("h", "H.", ExponentialBuckets(1, 2, 4)) // 1 2 4 8
	for _, v := range []float64{-1, 0, 1, 1.5, 2, 2, 3.9, 4, 8, 8.0001, 100, math.Inf(1)} {
		h.Observe(v)
	}
	want := []string{
		`h_bucket{le="1"} 3`,     // -1 0 1
		`h_bucket{le="2"} 6`,     // 1.5 2 2
		`h_bucket{le="4"} 8`,     // 3.9 4
		`h_bucket{le="8"} 9`,     // 8
		`h_bucket{le="+Inf"} 12`, // 8.0001 100 +Inf
		`h_sum +Inf`,
		`h_count 12`,
	}
	got := text(t, r)
	if !strings.Contains(got, strings.Join(want, "\n")+"\n") {
		t.Fatalf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	h.Observe(math.NaN())
	if got := text(t, r); !strings.Contains(got, "h_bucket{le=\"8\"} 9\nh_bucket{le=\"+Inf\"} 13\nh_sum NaN\nh_count 13\n") {
		t.Fatalf("after NaN:\n%s", got)
	}

	// The documented layouts of the signaling server's histograms.
	if b := ExponentialBuckets(0.1, 2.5, 10); len(b) != 10 || b[0] != 0.1 || math.Abs(b[9]-0.1*math.Pow(2.5, 9)) > 1e-9 {
		t.Errorf("ExponentialBuckets(0.1, 2.5, 10) = %v", b)
	}
	le := newBuckets(ExponentialBuckets(0.0002, 2.5, 12)).le
	if strings.Join(le, " ") != "0.0002 0.0005 0.00125 0.003125 0.0078125 0.01953125 0.048828125 0.1220703125 0.30517578125 0.762939453125 1.9073486328125 4.76837158203125 +Inf" {
		t.Errorf("le labels %v (as Prometheus's client wrote them)", le)
	}
}

// TestConcurrent: counting from many goroutines, new label sets included,
// while the registry is written and more families registered, loses
// nothing (and, under -race, races with nothing).
func TestConcurrent(t *testing.T) {
	r := NewRegistry("node", "n")
	v := r.CounterVec("c_total", "C.", "k", "j")
	hv := r.HistogramVec("h", "H.", []float64{1, 2}, "k")
	const workers, n = 8, 2000
	var wg sync.WaitGroup
	done := make(chan struct{})
	var writes sync.WaitGroup
	writes.Add(1)
	go func() {
		defer writes.Done()
		for i := 0; ; i++ {
			if i < 20 {
				r.Counter(fmt.Sprintf("late_%d_total", i), "Registered while writing.").Inc()
			} else {
				select {
				case <-done:
					return
				default:
				}
			}
			// Not text and parse: they would call t.Fatal off the test's goroutine.
			var b strings.Builder
			r.WriteTo(&b)
			p := expfmt.NewTextParser(model.UTF8Validation)
			if _, err := p.TextToMetricFamilies(strings.NewReader(b.String())); err != nil {
				t.Errorf("Prometheus's parser: %v\n%s", err, b.String())
				return
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				k := fmt.Sprint(i % 5)
				v.With(k, "x").Inc()
				v.With(k, fmt.Sprint(w)).Add(2)
				hv.With(k).Observe(float64(i % 3))
			}
		}()
	}
	wg.Wait()
	close(done)
	writes.Wait()

	fams := parse(t, text(t, r))
	var sum float64
	for _, m := range fams["c_total"].Metric {
		sum += m.Counter.GetValue()
	}
	if want := float64(workers * n * 3); sum != want {
		t.Errorf("counters add up to %v, want %v", sum, want)
	}
	if got := len(fams["c_total"].Metric); got != 5*(workers+1) {
		t.Errorf("%d counter series, want %d", got, 5*(workers+1))
	}
	var count uint64
	var hsum float64
	for _, m := range fams["h"].Metric {
		count += m.Histogram.GetSampleCount()
		hsum += m.Histogram.GetSampleSum()
		if b := m.Histogram.Bucket; b[len(b)-1].GetCumulativeCount() != m.Histogram.GetSampleCount() {
			t.Errorf("+Inf bucket %d, count %d", b[len(b)-1].GetCumulativeCount(), m.Histogram.GetSampleCount())
		}
	}
	// i%3 over n values of i: n/3 (rounded) each of 0, 1, 2.
	wantSum := 0.0
	for i := range n {
		wantSum += float64(i % 3)
	}
	if count != workers*n || hsum != workers*wantSum {
		t.Errorf("histograms: count %d sum %v, want %d %v", count, hsum, workers*n, workers*wantSum)
	}
	for i := range 20 {
		if _, ok := fams[fmt.Sprintf("late_%d_total", i)]; !ok {
			t.Errorf("late_%d_total missing", i)
		}
	}
}

// TestNoAllocs: counting on a series that exists allocates nothing.
func TestNoAllocs(t *testing.T) {
	r := NewRegistry("node", "n")
	c := r.Counter("c_total", "C.")
	v1 := r.CounterVec("v1_total", "V1.", "k")
	v2 := r.CounterVec("v2_total", "V2.", "code", "reason")
	h := r.Histogram("h", "H.", ExponentialBuckets(0.0002, 2.5, 12))
	hv := r.HistogramVec("hv", "HV.", ExponentialBuckets(0.1, 2.5, 10), "kind")
	v1.With("quick")
	v2.With("room_not_found", "client_error")
	hv.With("code")
	code := "room_not_found"
	for name, f := range map[string]func(){
		"Counter.Inc":                   func() { c.Inc() },
		"CounterVec.With(1 label).Inc":  func() { v1.With("quick").Inc() },
		"CounterVec.With(2 labels).Inc": func() { v2.With(code, "client_error").Inc() },
		"Histogram.Observe":             func() { h.Observe(0.01) },
		"HistogramVec.With.Observe":     func() { hv.With("code").Observe(3) },
	} {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: %v allocations", name, a)
		}
	}
}

// TestPanics: a name or label that is not valid, taken or reserved, or the
// wrong number of label values, panics.
func TestPanics(t *testing.T) {
	for name, f := range map[string]func(r *Registry){
		"empty name":       func(r *Registry) { r.Counter("", "") },
		"bad name":         func(r *Registry) { r.Counter("a-b", "") },
		"digit first":      func(r *Registry) { r.Counter("1a", "") },
		"twice":            func(r *Registry) { r.Counter("a", ""); r.GaugeFunc("a", "", nil) },
		"histogram _count": func(r *Registry) { r.Counter("h_count", ""); r.Histogram("h", "", []float64{1}) },
		"bad label":        func(r *Registry) { r.CounterVec("a", "", "a:b") },
		"reserved label":   func(r *Registry) { r.CounterVec("a", "", "__x") },
		"label twice":      func(r *Registry) { r.CounterVec("a", "", "x", "x") },
		"registry's label": func(r *Registry) { r.CounterVec("a", "", "node") },
		"le":               func(r *Registry) { r.HistogramVec("a", "", []float64{1}, "le") },
		"buckets":          func(r *Registry) { r.Histogram("a", "", []float64{2, 1}) },
		"infinite bucket":  func(r *Registry) { r.Histogram("a", "", []float64{1, math.Inf(1)}) },
		"label values":     func(r *Registry) { r.CounterVec("a", "", "x").With("1", "2") },
		"odd const labels": func(*Registry) {
			//lint:ignore SA5012 the panic on an odd count is what is tested
			NewRegistry("node")
		},
		"bad const label":   func(*Registry) { NewRegistry("no de", "x") },
		"exponential":       func(*Registry) { ExponentialBuckets(1, 1, 3) },
		"exponential start": func(*Registry) { ExponentialBuckets(0, 2, 3) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f(NewRegistry("node", "n"))
		}()
	}
}

// TestGoAndProcessMetrics: the go_* metrics, and on Linux the process_*
// ones, are there with Prometheus's types and plausible values.
func TestGoAndProcessMetrics(t *testing.T) {
	r := NewRegistry()
	r.GoAndProcessMetrics()
	fams := parse(t, text(t, r))
	want := map[string]dto.MetricType{
		"go_info":                       dto.MetricType_GAUGE,
		"go_goroutines":                 dto.MetricType_GAUGE,
		"go_sched_gomaxprocs_threads":   dto.MetricType_GAUGE,
		"go_memstats_heap_alloc_bytes":  dto.MetricType_GAUGE,
		"go_memstats_alloc_bytes_total": dto.MetricType_COUNTER,
		"go_memstats_sys_bytes":         dto.MetricType_GAUGE,
		"go_memstats_next_gc_bytes":     dto.MetricType_GAUGE,
		"go_gc_cycles_total":            dto.MetricType_COUNTER,
	}
	if runtime.GOOS == "linux" {
		want["go_threads"] = dto.MetricType_GAUGE
		want["process_cpu_seconds_total"] = dto.MetricType_COUNTER
		want["process_resident_memory_bytes"] = dto.MetricType_GAUGE
		want["process_virtual_memory_bytes"] = dto.MetricType_GAUGE
		want["process_open_fds"] = dto.MetricType_GAUGE
		want["process_max_fds"] = dto.MetricType_GAUGE
		want["process_start_time_seconds"] = dto.MetricType_GAUGE
	}
	value := func(name string) float64 {
		m := fams[name].Metric[0]
		if m.Counter != nil {
			return m.Counter.GetValue()
		}
		return m.Gauge.GetValue()
	}
	for name, typ := range want {
		f := fams[name]
		if f == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s: type %v, want %v", name, f.GetType(), typ)
		}
	}
	if t.Failed() {
		return
	}
	for name, min := range map[string]float64{
		"go_goroutines":                1,
		"go_sched_gomaxprocs_threads":  1,
		"go_memstats_heap_alloc_bytes": 1,
		"go_memstats_sys_bytes":        1,
	} {
		if v := value(name); v < min {
			t.Errorf("%s = %v", name, v)
		}
	}
	if v := value("go_memstats_sys_bytes"); v < value("go_memstats_heap_alloc_bytes") {
		t.Errorf("go_memstats_sys_bytes %v < heap %v", v, value("go_memstats_heap_alloc_bytes"))
	}
	if runtime.GOOS == "linux" {
		for _, name := range []string{"go_threads", "process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds"} {
			if v := value(name); v < 1 {
				t.Errorf("%s = %v", name, v)
			}
		}
		if value("process_open_fds") > value("process_max_fds") {
			t.Errorf("process_open_fds %v > process_max_fds %v", value("process_open_fds"), value("process_max_fds"))
		}
		if l := fams["go_info"].Metric[0].Label; len(l) != 1 || l[0].GetName() != "version" || l[0].GetValue() != runtime.Version() {
			t.Errorf("go_info labels %v", l)
		}
	}
}

func BenchmarkCounterInc(b *testing.B) {
	c := NewRegistry().Counter("c_total", "C.")
	b.ReportAllocs()
	for b.Loop() {
		c.Inc()
	}
}

func BenchmarkCounterVecWithInc(b *testing.B) {
	v := NewRegistry("node", "n").CounterVec("c_total", "C.", "code", "reason")
	code := "room_not_found"
	v.With(code, "client_error")
	b.ReportAllocs()
	for b.Loop() {
		v.With(code, "client_error").Inc()
	}
}

func BenchmarkHistogramObserve(b *testing.B) {
	h := NewRegistry().Histogram("h", "H.", ExponentialBuckets(0.0002, 2.5, 12))
	b.ReportAllocs()
	for b.Loop() {
		h.Observe(0.01)
	}
}

func BenchmarkHistogramVecWithObserve(b *testing.B) {
	hv := NewRegistry().HistogramVec("h", "H.", ExponentialBuckets(0.1, 2.5, 10), "kind")
	hv.With("quick")
	b.ReportAllocs()
	for b.Loop() {
		hv.With("quick").Observe(3)
	}
}

// BenchmarkCounterVecWithIncParallel: every core counting on the same
// series.
func BenchmarkCounterVecWithIncParallel(b *testing.B) {
	v := NewRegistry().CounterVec("c_total", "C.", "kind")
	v.With("quick")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v.With("quick").Inc()
		}
	})
}

// BenchmarkWriteTo: a scrape of a registry like the signaling server's.
func BenchmarkWriteTo(b *testing.B) {
	r := NewRegistry("node", "eu-1")
	for i := range 12 {
		r.GaugeFunc(fmt.Sprintf("g%d", i), "G.", func() float64 { return float64(i) })
	}
	v := r.CounterVec("refusals_total", "R.", "code", "reason")
	for i := range 10 {
		v.With(fmt.Sprint("code", i), "client_error").Inc()
	}
	r.HistogramVec("wait_seconds", "W.", ExponentialBuckets(0.1, 2.5, 10), "kind").With("code").Observe(1)
	r.Histogram("latency_seconds", "L.", ExponentialBuckets(0.0002, 2.5, 12)).Observe(0.01)
	r.GoAndProcessMetrics()
	var w strings.Builder
	b.ReportAllocs()
	for b.Loop() {
		w.Reset()
		r.WriteTo(&w)
	}
	b.ReportMetric(float64(w.Len()), "bytes/scrape")
}
