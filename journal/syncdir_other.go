//go:build !unix || solaris || aix

package journal

// syncDir is a no-op where a directory cannot be opened for fsync.
func syncDir(string) error { return nil }
