//go:build unix

package profile_test

import "syscall"

// cpuTime returns the CPU time (user and system, every thread) this
// process has used so far, in nanoseconds.
func cpuTime() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
