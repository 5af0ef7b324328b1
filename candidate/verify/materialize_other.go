//go:build !unix

package verify

import "io/fs"

// noFollow is 0 where O_NOFOLLOW does not exist; files are still created
// exclusively in a fresh directory.
const noFollow = 0

// nonBlock is 0 where O_NONBLOCK does not exist; openRegular's Stat
// still keeps it from opening anything but a regular file.
const nonBlock = 0

// hardLinked is true where the link count cannot be read: the re-scan
// then refuses rather than assume a file has one name.
func hardLinked(fs.FileInfo) bool { return true }
