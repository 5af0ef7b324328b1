//go:build !unix

package profile_test

// cpuTime is unknown here.
func cpuTime() (int64, bool) { return 0, false }
