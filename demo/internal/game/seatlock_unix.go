//go:build unix && !js

package game

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting; it is released
// when f is closed or the process dies.
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
