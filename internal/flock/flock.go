package flock

import "errors"

// ErrHeld matches TryLock's error when another open file holds the lock.
var ErrHeld = errors.New("flock: the file is locked by another open file")

// ErrUnsupported is TryLock's error where no advisory whole-file lock is
// implemented.
var ErrUnsupported = errors.New("flock: advisory file locks are not supported on this system")
