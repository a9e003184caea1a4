package promtext

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// A Counter is a count that only goes up.
type Counter struct{ v atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.v.Add(1) }

// Add adds n.
func (c *Counter) Add(n uint64) { c.v.Add(n) }

// A CounterVec is a family of counters, one for each set of label values.
type CounterVec struct{ v vec[Counter] }

// With returns the counter of the given label values, in the order the
// labels were registered in, creating it (at zero) the first time.
func (v *CounterVec) With(values ...string) *Counter { return v.v.with(values) }

// A Histogram counts observations in buckets and keeps their sum.
type Histogram struct {
	b      *buckets
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf's
	sum    atomic.Uint64   // math.Float64bits of the sum
}

// Observe adds v.
func (h *Histogram) Observe(v float64) {
	// The first bucket whose bound is at least v; NaN falls in +Inf's.
	up := h.b.upper
	i, j := 0, len(up)
	for i < j {
		m := int(uint(i+j) >> 1)
		if !(up[m] >= v) {
			i = m + 1
		} else {
			j = m
		}
	}
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// append appends the histogram's samples: cumulative buckets, +Inf
// included, then _sum and _count. _count is the +Inf bucket's count, so
// the two agree even while observations go on; the sum may include an
// observation the buckets do not yet, or the reverse.
func (h *Histogram) append(b []byte, name, lbl string) []byte {
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		b = append(b, name...)
		b = append(b, "_bucket{"...)
		if lbl != "" {
			b = append(b, lbl...)
			b = append(b, ',')
		}
		b = append(b, `le="`...)
		b = append(b, h.b.le[i]...)
		b = append(b, `"} `...)
		b = appendUint(b, cum)
	}
	b = appendFloat(appendName(b, name, "_sum", lbl), math.Float64frombits(h.sum.Load()))
	return appendUint(appendName(b, name, "_count", lbl), cum)
}

// A HistogramVec is a family of histograms, one for each set of label
// values.
type HistogramVec struct{ v vec[Histogram] }

// With returns the histogram of the given label values, in the order the
// labels were registered in, creating it (empty) the first time.
func (v *HistogramVec) With(values ...string) *Histogram { return v.v.with(values) }

// buckets are a histogram's bucket bounds, shared by the histograms of a
// vector.
type buckets struct {
	upper []float64 // increasing, finite
	le    []string  // the le label of each bucket, "+Inf" last
}

func newBuckets(upper []float64) *buckets {
	for i, u := range upper {
		if math.IsNaN(u) || math.IsInf(u, 0) || i > 0 && u <= upper[i-1] {
			panic("promtext: histogram buckets must be finite and increasing")
		}
	}
	b := &buckets{upper: slices.Clone(upper)}
	for _, u := range upper {
		b.le = append(b.le, strconv.FormatFloat(u, 'g', -1, 64))
	}
	b.le = append(b.le, "+Inf")
	return b
}

func newHistogram(b *buckets) *Histogram {
	return &Histogram{b: b, counts: make([]atomic.Uint64, len(b.upper)+1)}
}

// ExponentialBuckets returns n bucket bounds, start and each the previous
// times factor (computed as Prometheus's client does, so the le labels are
// the same as its).
func ExponentialBuckets(start, factor float64, n int) []float64 {
	if n < 1 || start <= 0 || factor <= 1 {
		panic("promtext: ExponentialBuckets wants n ≥ 1, start > 0, factor > 1")
	}
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}

// vec is the series of a vector, one for each set of label values. Looking
// up a series that exists reads an atomic pointer to an immutable map with
// a key built on the stack; adding one copies the map under a mutex.
type vec[T any] struct {
	n     int       // labels
	names []string  // label names, as registered
	order []int     // label indexes sorted by name: the order written in
	reg   *Registry // for the registry's labels
	new   func() *T
	mu    sync.Mutex // held while adding a series
	state atomic.Pointer[vecState[T]]
}

type vecState[T any] struct {
	byKey  map[string]*T
	sorted []*series[T] // by label values, in the order written
}

type series[T any] struct {
	values []string // label values in the order written
	lbl    string   // the rendered labels, the registry's included
	m      *T
}

func (v *vec[T]) init(r *Registry, names []string, reserved string, newT func() *T) {
	ls := make([]labelPair, len(names))
	for i, n := range names {
		ls[i].name = n
	}
	checkLabels(append(ls, r.constLabels...), reserved)
	v.n, v.names, v.reg, v.new = len(names), slices.Clone(names), r, newT
	v.order = make([]int, len(names))
	for i := range v.order {
		v.order[i] = i
	}
	slices.SortFunc(v.order, func(a, b int) int {
		if names[a] < names[b] {
			return -1
		}
		return 1
	})
	v.state.Store(&vecState[T]{byKey: map[string]*T{}})
}

// with returns the series of values, adding it if it is new. It does not
// allocate when the series exists (and its key fits in 128 bytes).
func (v *vec[T]) with(values []string) *T {
	if len(values) != v.n {
		panicLabelCount(len(values), v.n)
	}
	var buf [128]byte
	k := buf[:0]
	if len(values) == 1 {
		k = append(k, values[0]...)
	} else {
		for _, s := range values {
			k = binary.AppendUvarint(k, uint64(len(s)))
			k = append(k, s...)
		}
	}
	if m, ok := v.state.Load().byKey[string(k)]; ok {
		return m
	}
	return v.add(string(k), values)
}

func panicLabelCount(got, want int) {
	panic("promtext: " + strconv.Itoa(got) + " label values for " + strconv.Itoa(want) + " labels")
}

// add adds the series of values, whose key is key, unless another
// goroutine has just done so.
func (v *vec[T]) add(key string, values []string) *T {
	v.mu.Lock()
	defer v.mu.Unlock()
	old := v.state.Load()
	if m, ok := old.byKey[key]; ok {
		return m
	}
	s := &series[T]{values: make([]string, v.n), m: v.new()}
	extra := make([]labelPair, v.n)
	for i, j := range v.order {
		s.values[i] = values[j]
		extra[i] = labelPair{v.names[j], values[j]}
	}
	s.lbl = v.reg.labels(extra)
	st := &vecState[T]{byKey: make(map[string]*T, len(old.byKey)+1)}
	for k, m := range old.byKey {
		st.byKey[k] = m
	}
	st.byKey[key] = s.m
	i, _ := slices.BinarySearchFunc(old.sorted, s.values, func(e *series[T], vs []string) int { return slices.Compare(e.values, vs) })
	st.sorted = slices.Insert(slices.Clone(old.sorted), i, s)
	v.state.Store(st)
	return s.m
}
