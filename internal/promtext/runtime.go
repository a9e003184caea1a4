package promtext

import (
	"runtime"
	"runtime/metrics"
)

// GoAndProcessMetrics registers a few metrics of the Go runtime and, on
// Linux, of the process, with the names, types and meaning Prometheus's
// Go client gives them (its Go and process collectors write more):
//
//	go_info{version}               gauge    1, labelled with the Go version
//	go_goroutines                  gauge    goroutines that exist
//	go_threads                     gauge    OS threads of the process (Linux); elsewhere the Go
//	                                        runtime's threads (Go 1.26 and later; absent before)
//	go_sched_gomaxprocs_threads    gauge    GOMAXPROCS
//	go_memstats_heap_alloc_bytes   gauge    bytes of heap objects, live or not yet swept
//	go_memstats_alloc_bytes_total  counter  bytes allocated on the heap, ever
//	go_memstats_sys_bytes          gauge    bytes of memory the Go runtime has mapped
//	go_memstats_next_gc_bytes      gauge    the heap size the next GC cycle starts at
//	go_gc_cycles_total             counter  GC cycles completed
//	process_cpu_seconds_total      counter  user and system CPU time (Linux only, as are the
//	process_resident_memory_bytes  gauge    process_* metrics; read from /proc/self)
//	process_virtual_memory_bytes   gauge
//	process_open_fds               gauge
//	process_max_fds                gauge    the soft limit of open file descriptors
//	process_start_time_seconds     gauge    since the Unix epoch
//
// The go_* metrics come from runtime/metrics, which, unlike
// runtime.ReadMemStats, does not stop the world.
func (r *Registry) GoAndProcessMetrics() {
	r.funcMetric("go_info", "Information about the Go environment.", "gauge",
		[]labelPair{{"version", runtime.Version()}}, func() (float64, bool) { return 1, true })
	rt := func(name, help, typ, metric string) {
		if f := runtimeMetric(metric); f != nil {
			r.funcMetric(name, help, typ, nil, f)
		}
	}
	rt("go_goroutines", "Number of goroutines that currently exist.", "gauge", "/sched/goroutines:goroutines")
	rt("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting: the number of OS threads that can execute Go code at once.", "gauge", "/sched/gomaxprocs:threads")
	rt("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use (/memory/classes/heap/objects:bytes).", "gauge", "/memory/classes/heap/objects:bytes")
	rt("go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already (/gc/heap/allocs:bytes).", "counter", "/gc/heap/allocs:bytes")
	rt("go_memstats_sys_bytes", "Number of bytes obtained from system (/memory/classes/total:bytes).", "gauge", "/memory/classes/total:bytes")
	rt("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place (/gc/heap/goal:bytes).", "gauge", "/gc/heap/goal:bytes")
	rt("go_gc_cycles_total", "Number of completed GC cycles (/gc/cycles/total:gc-cycles).", "counter", "/gc/cycles/total:gc-cycles")

	if threads := processMetrics(r); threads != nil {
		r.funcMetric("go_threads", "Number of OS threads of the process.", "gauge", nil, threads)
	} else {
		rt("go_threads", "Number of OS threads the Go runtime owns.", "gauge", "/sched/threads/total:threads")
	}
}

// runtimeMetric returns a function reading the runtime metric name, or nil
// if this Go has no such metric or it is not a number.
func runtimeMetric(name string) func() (float64, bool) {
	read := func() (float64, bool) {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		switch s[0].Value.Kind() {
		case metrics.KindUint64:
			return float64(s[0].Value.Uint64()), true
		case metrics.KindFloat64:
			return s[0].Value.Float64(), true
		}
		return 0, false
	}
	if _, ok := read(); !ok {
		return nil
	}
	return read
}
