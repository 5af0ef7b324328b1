package kernel

import (
	"context"
	"time"

	"github.com/agentrt/agentrt/store"
)

// keepLease renews a live run's lease every third of ttl until the
// returned stop is called, so a reader sees the run interrupted only when
// the process that owns it died. A renewal that fails is retried at the
// next tick: the lease then lapses on its own, which is the truth.
func keepLease(s store.Store, runID string, ttl time.Duration, now func() time.Time) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				s.UpdateRun(context.Background(), runID, func(r *store.Run) error {
					if r.Status.Terminal() {
						return nil
					}
					r.LeaseUntil = now().Add(ttl)
					return nil
				})
			}
		}
	}()
	return func() { close(quit); <-done }
}
