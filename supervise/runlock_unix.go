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

// unflock gives f's lock up. Closing f alone does not when a copy of its
// descriptor lives on: a child forked while f was open (a worker's CLI,
// a harness) holds one until it execs, and the lock belongs to the open
// file they share.
func unflock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
