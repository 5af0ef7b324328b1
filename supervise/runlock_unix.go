//go:build unix && !solaris && !aix

package supervise

import (
	"errors"
	"os"
	"syscall"
)

var errLockHeld = syscall.EWOULDBLOCK

// flockNB takes f's exclusive advisory lock without waiting; the lock
// belongs to the open file and dies with the process.
func flockNB(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
