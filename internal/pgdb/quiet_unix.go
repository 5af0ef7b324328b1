//go:build unix && !solaris && !aix

package pgdb

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// socketQuiet peeks at the socket without blocking and without taking
// anything from it: true when nothing is waiting to be read, false when
// bytes or the end of the stream are (or the peek failed).
func socketQuiet(sc syscall.Conn) bool {
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	quiet := false
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		_, _, perr := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		quiet = errors.Is(perr, unix.EAGAIN) || errors.Is(perr, unix.EWOULDBLOCK)
		return true
	})
	return err == nil && quiet
}
