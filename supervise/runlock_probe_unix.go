//go:build unix

package supervise

import (
	"errors"
	"syscall"
)

// processAlive asks with signal 0 whether pid names a process on this
// host; known is false when the answer is neither yes nor no.
func processAlive(pid int) (alive, known bool) {
	switch err := syscall.Kill(pid, 0); {
	case err == nil, errors.Is(err, syscall.EPERM):
		// EPERM: it exists, under another user.
		return true, true
	case errors.Is(err, syscall.ESRCH):
		return false, true
	}
	return false, false
}
