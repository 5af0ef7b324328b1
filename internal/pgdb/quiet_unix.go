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
	// Control, not Read: Read takes the socket's read lock, which pgx's
	// background reader may hold in a Read of this idle connection that
	// ends only when the server speaks — the check would wait for it.
	// A peek with MSG_DONTWAIT neither blocks nor takes anything, so it
	// needs no lock. (Bytes such a reader already took are its to
	// judge: what is left on the socket, the end of the stream after a
	// FATAL, still reads as not quiet.)
	quiet := false
	var buf [1]byte
	err = raw.Control(func(fd uintptr) {
		_, _, perr := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		quiet = errors.Is(perr, unix.EAGAIN) || errors.Is(perr, unix.EWOULDBLOCK)
	})
	return err == nil && quiet
}
