//go:build !linux

package promtext

// processMetrics registers no process_* metrics outside Linux, and has no
// thread count.
func processMetrics(*Registry) (threads func() (float64, bool)) { return nil }
