//go:build unix && !solaris && !aix

package journal

import (
	"os"
	"syscall"
)

// dupFile duplicates f's descriptor: the copy refers to the same open
// file, as a forked child's inherited descriptor does.
func dupFile(f *os.File) (func() error, error) {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return nil, err
	}
	return func() error { return syscall.Close(fd) }, nil
}
