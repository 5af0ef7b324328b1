//go:build unix

package verify

import (
	"io/fs"
	"syscall"
)

// noFollow makes creating a file fail on a symbolic link.
const noFollow = syscall.O_NOFOLLOW

// nonBlock keeps opening a FIFO or a device from waiting for a writer;
// it changes nothing for a regular file.
const nonBlock = syscall.O_NONBLOCK

// hardLinked reports whether a regular file has another name (a link
// count other than one) or its link count is unknown.
func hardLinked(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return !ok || st.Nlink != 1
}
