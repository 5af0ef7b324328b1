//go:build !unix || solaris || aix

package flock

import "os"

// TryLock returns ErrUnsupported: no advisory whole-file lock is
// implemented on this system.
func TryLock(*os.File) error { return ErrUnsupported }

// Unlock does nothing: no lock was taken.
func Unlock(*os.File) error { return nil }
