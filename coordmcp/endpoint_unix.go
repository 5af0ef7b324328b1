//go:build unix

package coordmcp

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openFlags open the endpoint file without following a symbolic link
// and without waiting on a FIFO.
const openFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// untrusted says why an opened endpoint file is not one the supervising
// process published ("" when it is): a regular file owned by this user,
// readable and writable by nobody else.
func untrusted(fi fs.FileInfo) string {
	if !fi.Mode().IsRegular() {
		return "is not a regular file"
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Sprintf("has mode %#o: other users may read or write it, so it is not the supervising process's (which writes it 0600)", perm)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "has no owner to check"
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Sprintf("is owned by user %d, not this user (%d): another user's run is not relayed", st.Uid, uid)
	}
	return ""
}
