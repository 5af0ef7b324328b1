//go:build unix && !solaris && !aix

package flock

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// TryLock takes f's exclusive lock without waiting. A lock another open
// file holds (another process, or another open of the file in this one)
// is an error matching ErrHeld.
func TryLock(f *os.File) error {
	err := retry(func() error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) })
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%w: %w", ErrHeld, err)
	}
	return err
}

// Unlock gives f's lock up, for every descriptor that shares its open
// file; closing f alone does not while a forked child holds a copy.
func Unlock(f *os.File) error {
	return retry(func() error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) })
}

// retry calls op again while a signal interrupts it.
func retry(op func() error) error {
	for {
		if err := op(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
