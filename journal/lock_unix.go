//go:build unix && !solaris && !aix

package journal

import (
	"errors"
	"os"
	"syscall"
)

var errWouldBlock = syscall.EWOULDBLOCK

// lock takes f's exclusive advisory lock without waiting. The lock belongs
// to the open file, so a second Open in the same process is refused too,
// and it dies with the process, however it ends.
func lock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// unlock gives f's lock up. Closing f alone does not when a copy of its
// descriptor lives on: a child forked while f was open holds one until
// it execs, and the lock belongs to the open file they share.
func unlock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// syncDir makes a new entry in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
