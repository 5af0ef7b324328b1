package supervise

import (
	"testing"
	"time"
)

// §9 await_event: omitted waits the default fence, a positive timeout
// waits that long up to the most, and a negative one ("unbounded") the
// most a wait may last.
func TestAwaitBound(t *testing.T) {
	for ms, want := range map[int64]time.Duration{
		0:                                  DefaultAwaitTimeout,
		1500:                               1500 * time.Millisecond,
		MaxAwaitTimeout.Milliseconds() * 2: MaxAwaitTimeout,
		-1:                                 MaxAwaitTimeout,
	} {
		if got := awaitBound(ms); got != want {
			t.Errorf("awaitBound(%d) = %v, want %v", ms, got, want)
		}
	}
}
