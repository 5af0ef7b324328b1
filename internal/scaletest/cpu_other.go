//go:build !unix

package scaletest

import "time"

// cpuTime is unknown here.
func cpuTime() (time.Duration, bool) { return 0, false }
