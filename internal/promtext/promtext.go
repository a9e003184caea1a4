// Package promtext keeps a process's Prometheus metrics and writes them in
// the Prometheus text exposition format, version 0.0.4 (Content-Type
// ContentType), with no dependency outside the standard library. It is what
// the signaling server serves at /metrics; it replaces
// github.com/prometheus/client_golang, whose protobuf, procfs and
// prometheus/common dependencies cost a cold build of the demo about 10 s
// of compiling.
//
// A Registry holds metric families: counters, counter and histogram vectors
// keyed by label values, gauges and counters read from a function at each
// scrape, and GoAndProcessMetrics's go_* and process_* metrics. Counting
// (Counter.Inc, Histogram.Observe, and the vectors' With on a label set
// that exists) is safe for concurrent use, uses atomics only and does not
// allocate. Registering is meant for start-up: a name or label that is not
// valid, or taken, panics.
//
// Registry.WriteTo writes every family sorted by name, each as a # HELP
// and a # TYPE line and its samples, the samples of a vector sorted by
// label values; a vector with no series yet is left out. Labels are
// written sorted by name (a histogram's le last); label values and HELP
// text are escaped as the format asks (\\, \n, and \" in label values),
// and bytes that are not UTF-8 are written as U+FFFD.
package promtext

import (
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// ContentType is the Content-Type of what Registry.WriteTo writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// A Registry is a set of metric families with, optionally, labels every
// sample of the registry carries (such as the name of the process among
// several of a deployment). Its methods are safe for concurrent use.
type Registry struct {
	constLabels []labelPair // sorted by name

	mu       sync.Mutex
	families []*family       // sorted by name; copied, never changed, on registration
	taken    map[string]bool // family and sample names in use
	size     atomic.Int64    // bytes the last write wrote
}

type labelPair struct{ name, value string }

// family is one metric family: its # HELP and # TYPE lines and a function
// appending its samples.
type family struct {
	name   string
	header string
	write  func(b []byte) []byte
}

// NewRegistry returns an empty registry whose samples all carry the given
// labels, given as name, value pairs.
func NewRegistry(constLabels ...string) *Registry {
	if len(constLabels)%2 != 0 {
		panic("promtext: NewRegistry wants label name, value pairs")
	}
	r := &Registry{taken: map[string]bool{}}
	for i := 0; i < len(constLabels); i += 2 {
		r.constLabels = append(r.constLabels, labelPair{constLabels[i], constLabels[i+1]})
	}
	checkLabels(r.constLabels, "")
	slices.SortFunc(r.constLabels, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	return r
}

// Counter registers a counter with no labels of its own.
func (r *Registry) Counter(name, help string) *Counter {
	c := new(Counter)
	lbl := r.labels(nil)
	r.register(name, help, "counter", nil, func(b []byte) []byte {
		return appendUint(appendName(b, name, "", lbl), c.v.Load())
	})
	return c
}

// CounterVec registers a family of counters, one for each set of values of
// the given labels.
func (r *Registry) CounterVec(name, help string, labels ...string) *CounterVec {
	v := &CounterVec{}
	v.v.init(r, labels, "", func() *Counter { return new(Counter) })
	r.register(name, help, "counter", nil, func(b []byte) []byte {
		for _, s := range v.v.state.Load().sorted {
			b = appendUint(appendName(b, name, "", s.lbl), s.m.v.Load())
		}
		return b
	})
	return v
}

// Histogram registers a histogram with no labels of its own and the given
// bucket upper bounds (increasing, finite; the +Inf bucket is added).
func (r *Registry) Histogram(name, help string, buckets []float64) *Histogram {
	checkLabels(r.constLabels, "le")
	h := newHistogram(newBuckets(buckets))
	lbl := r.labels(nil)
	r.register(name, help, "histogram", histSuffixes, func(out []byte) []byte {
		return h.append(out, name, lbl)
	})
	return h
}

// HistogramVec registers a family of histograms with the given bucket upper
// bounds, one for each set of values of the given labels (not le).
func (r *Registry) HistogramVec(name, help string, buckets []float64, labels ...string) *HistogramVec {
	bk := newBuckets(buckets)
	v := &HistogramVec{}
	v.v.init(r, labels, "le", func() *Histogram { return newHistogram(bk) })
	r.register(name, help, "histogram", histSuffixes, func(b []byte) []byte {
		for _, s := range v.v.state.Load().sorted {
			b = s.m.append(b, name, s.lbl)
		}
		return b
	})
	return v
}

// GaugeFunc registers a gauge whose value f returns at each write.
func (r *Registry) GaugeFunc(name, help string, f func() float64) {
	r.funcMetric(name, help, "gauge", nil, func() (float64, bool) { return f(), true })
}

// CounterFunc registers a counter whose value f returns at each write; f
// must not decrease.
func (r *Registry) CounterFunc(name, help string, f func() float64) {
	r.funcMetric(name, help, "counter", nil, func() (float64, bool) { return f(), true })
}

// funcMetric registers a family of one sample, with the extra labels,
// whose value f returns; when f returns false the family is left out of
// that write.
func (r *Registry) funcMetric(name, help, typ string, extra []labelPair, f func() (float64, bool)) {
	checkLabels(extra, "")
	lbl := r.labels(extra)
	r.register(name, help, typ, nil, func(b []byte) []byte {
		v, ok := f()
		if !ok {
			return b
		}
		return appendFloat(appendName(b, name, "", lbl), v)
	})
}

var histSuffixes = []string{"_bucket", "_sum", "_count"}

// register adds a family, panicking if its name or one of its sample names
// is not valid or taken.
func (r *Registry) register(name, help, typ string, suffixes []string, write func([]byte) []byte) {
	if !validName(name, true) {
		panic("promtext: metric name " + strconv.Quote(name) + " is not valid")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	names := []string{name}
	for _, s := range suffixes {
		names = append(names, name+s)
	}
	for _, n := range names {
		if r.taken[n] {
			panic("promtext: metric name " + strconv.Quote(n) + " registered twice")
		}
	}
	for _, n := range names {
		r.taken[n] = true
	}
	h := append([]byte("# HELP "), name...)
	h = append(h, ' ')
	h = appendEscaped(h, help, false)
	h = append(h, "\n# TYPE "...)
	h = append(h, name...)
	h = append(h, ' ')
	h = append(h, typ...)
	h = append(h, '\n')
	f := &family{name: name, header: string(h), write: write}
	i, _ := slices.BinarySearchFunc(r.families, name, func(f *family, n string) int { return strings.Compare(f.name, n) })
	r.families = slices.Insert(slices.Clip(r.families), i, f) // a new array: writes may be reading the old one
}

// WriteTo writes every family in the text format, in one Write.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	fams := r.families
	r.mu.Unlock()

	b := make([]byte, 0, r.size.Load()+512)
	for _, f := range fams {
		start := len(b)
		b = append(b, f.header...)
		samples := len(b)
		b = f.write(b)
		if len(b) == samples {
			b = b[:start] // no samples: leave the family out
		}
	}
	r.size.Store(int64(len(b)))
	n, err := w.Write(b)
	return int64(n), err
}

// labels renders the registry's labels and extra (sorted by name
// together) as name="value" pairs separated by commas.
func (r *Registry) labels(extra []labelPair) string {
	all := append(slices.Clone(r.constLabels), extra...)
	slices.SortFunc(all, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(all); i++ {
		if all[i].name == all[i-1].name {
			panic("promtext: label " + strconv.Quote(all[i].name) + " twice")
		}
	}
	var b []byte
	for i, p := range all {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p.name...)
		b = append(b, '=', '"')
		b = appendEscaped(b, p.value, true)
		b = append(b, '"')
	}
	return string(b)
}

// checkLabels panics if a label name is not valid, is reserved, or is
// there twice.
func checkLabels(ls []labelPair, reserved string) {
	for i, l := range ls {
		if !validName(l.name, false) || strings.HasPrefix(l.name, "__") {
			panic("promtext: label name " + strconv.Quote(l.name) + " is not valid")
		}
		if l.name == reserved {
			panic("promtext: label name " + strconv.Quote(l.name) + " is reserved")
		}
		for _, m := range ls[:i] {
			if m.name == l.name {
				panic("promtext: label " + strconv.Quote(l.name) + " twice")
			}
		}
	}
}

// validName reports whether s is a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)
// or, without colons, a label name.
func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || colon && c == ':' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// appendEscaped appends s escaped for a HELP line (backslash and newline)
// or, with quote, a label value (double quotes too). Bytes that are not
// UTF-8 become U+FFFD.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
		i++
	}
	return b
}

// appendName appends a sample's name, name+suffix, its labels in braces if
// any, and the space before the value.
func appendName(b []byte, name, suffix, lbl string) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if lbl != "" {
		b = append(b, '{')
		b = append(b, lbl...)
		b = append(b, '}')
	}
	return append(b, ' ')
}

// appendUint appends v and the line's newline.
func appendUint(b []byte, v uint64) []byte {
	return append(strconv.AppendUint(b, v, 10), '\n')
}

// appendFloat appends v as the format writes values (+Inf, -Inf, NaN
// included) and the line's newline.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		b = append(b, "+Inf"...)
	case math.IsInf(v, -1):
		b = append(b, "-Inf"...)
	case math.IsNaN(v):
		b = append(b, "NaN"...)
	default:
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, '\n')
}
