//go:build unix && !solaris && !aix

package journal

import "syscall"

// HoldFileLikeAForkedChild duplicates the journal's file descriptor, as
// a child process forked while the journal is open holds a copy of it
// until it execs, and returns the close of that copy.
func (j *Journal) HoldFileLikeAForkedChild() (closeCopy func() error, err error) {
	fd, err := syscall.Dup(int(j.f.Fd()))
	if err != nil {
		return nil, err
	}
	return func() error { return syscall.Close(fd) }, nil
}
