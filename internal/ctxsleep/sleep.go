package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends; it reports whether d passed. A d of
// zero or less does not wait: it reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
