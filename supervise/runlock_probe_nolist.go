//go:build !linux

package supervise

import "os"

// fileLocked: this system does not list its file locks.
func fileLocked(os.FileInfo) (held, listed bool) { return false, false }
