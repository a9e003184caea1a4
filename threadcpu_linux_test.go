package ragsync

import "golang.org/x/sys/unix"

// threadCPU returns the CPU time the calling OS thread has used, and true;
// the caller locks its goroutine to the thread (runtime.LockOSThread).
// Unlike the wall clock it does not count the time other processes of a
// busy machine take the core.
func threadCPU() (int64, bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0, false
	}
	return ts.Nano(), true
}
