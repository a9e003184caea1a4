package promtext

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// userHZ is the unit of the times in /proc/self/stat: USER_HZ, 100 on
// every Linux architecture (as Prometheus's procfs assumes too).
const userHZ = 100

// processMetrics registers the process_* metrics, read from /proc/self at
// each write, and returns the process's thread count; what it cannot read
// when registering is left out.
func processMetrics(r *Registry) (threads func() (float64, bool)) {
	if _, ok := readStat(); !ok {
		return nil
	}
	stat := func(f func(procStat) float64) func() (float64, bool) {
		return func() (float64, bool) {
			st, ok := readStat()
			return f(st), ok
		}
	}
	r.funcMetric("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter", nil,
		stat(func(st procStat) float64 { return float64(st.utime+st.stime) / userHZ }))
	r.funcMetric("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", nil,
		stat(func(st procStat) float64 { return float64(st.rss) * float64(os.Getpagesize()) }))
	r.funcMetric("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", nil,
		stat(func(st procStat) float64 { return float64(st.vsize) }))
	if _, ok := openFDs(); ok {
		r.funcMetric("process_open_fds", "Number of open file descriptors.", "gauge", nil, openFDs)
	}
	if _, ok := maxFDs(); ok {
		r.funcMetric("process_max_fds", "Maximum number of open file descriptors.", "gauge", nil, maxFDs)
	}
	if start, ok := startTime(); ok {
		r.funcMetric("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge", nil,
			func() (float64, bool) { return start, true })
	}
	return stat(func(st procStat) float64 { return float64(st.threads) })
}

// procStat is what is used of /proc/self/stat.
type procStat struct {
	utime, stime uint64 // CPU time in user and kernel mode, in 1/userHZ s
	threads      uint64
	starttime    uint64 // after boot, in 1/userHZ s
	vsize        uint64 // bytes
	rss          int64  // pages
}

func readStat() (procStat, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(b)
}

// parseStat parses the contents of /proc/PID/stat.
func parseStat(b []byte) (procStat, bool) {
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses,
	// so the fields are counted from the last ')'; f[0] is field 3, state.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 22 {
		return procStat{}, false
	}
	var st procStat
	ok := true
	u := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 10, 64)
		ok = ok && err == nil
		return v
	}
	st.utime, st.stime = u(f[14-3]), u(f[15-3])
	st.threads = u(f[20-3])
	st.starttime = u(f[22-3])
	st.vsize = u(f[23-3])
	rss, err := strconv.ParseInt(f[24-3], 10, 64)
	st.rss = rss
	return st, ok && err == nil
}

// openFDs counts the entries of /proc/self/fd, less the one reading it.
func openFDs() (float64, bool) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(256)
		n += len(names)
		if err != nil || len(names) == 0 {
			break
		}
	}
	return float64(n - 1), n > 0
}

func maxFDs() (float64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return float64(rl.Cur), true
}

// startTime is the process's start in seconds since the Unix epoch: the
// boot time (btime of /proc/stat) plus the start after boot.
func startTime() (float64, bool) {
	st, ok := readStat()
	if !ok {
		return 0, false
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, found := strings.CutPrefix(line, "btime "); found {
			btime, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, false
			}
			return float64(btime) + float64(st.starttime)/userHZ, true
		}
	}
	return 0, false
}
