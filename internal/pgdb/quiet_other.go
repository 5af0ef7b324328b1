//go:build !unix || solaris || aix

package pgdb

import "syscall"

// socketQuiet cannot peek at a socket on this platform: it says quiet,
// leaving the check to pgx's ping after a second idle.
func socketQuiet(syscall.Conn) bool { return true }
