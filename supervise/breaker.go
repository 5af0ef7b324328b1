package supervise

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrBreakerTripped matches the cause a tripped restart-intensity
// breaker (Options.MaxRestarts) cancels the manager and the live workers
// with.
var ErrBreakerTripped = errors.New("supervise: the restart-intensity breaker tripped")

// ErrRunAborted matches the cause a caller's RootHandle.Abort cancels
// the manager and the live workers with.
var ErrRunAborted = errors.New("supervise: the run was aborted")

// restartBreaker counts the tree's downs within a sliding window (the
// reference's OTP intensity breaker): it never restarts anything.
type restartBreaker struct {
	max    int
	within time.Duration
	recent []time.Time // the downs within the window, oldest first
}

// down records a down at at and returns the downs within the window
// ending at at; one exactly within old still counts.
func (b *restartBreaker) down(at time.Time) int {
	b.recent = append(b.recent, at)
	cutoff := at.Add(-b.within)
	i := 0
	for i < len(b.recent) && b.recent[i].Before(cutoff) {
		i++
	}
	b.recent = b.recent[i:]
	return len(b.recent)
}

// countDown counts worker id's settlement in state toward the breaker
// and returns the trip it caused, nil when it caused none. Only a down
// while the root manager drives counts: the downs a stop, a
// cancellation, the deadline or the run's end cause are not restarts.
// c.spawnMu is held, so downs are counted in the journal's order.
func (c *Coordinator) countDown(id NodeID, state State) *BreakerTrip {
	if state != StateFailed && state != StateCancelled {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, root := c.breaker, c.root
	if b == nil || c.tripped != nil || c.abortWhy != "" || root.brainCtx == nil || root.brainCtx.Err() != nil {
		return nil
	}
	at := c.now()
	n := b.down(at)
	if n <= b.max {
		return nil
	}
	c.tripped = &BreakerTrip{Downs: n, MaxRestarts: b.max, WithinMS: b.within.Milliseconds(), AtMS: at.UnixMilli(), Node: id}
	return c.tripped
}

// tripBreaker journals trip, then aborts the run: the downs that
// tripped it already happened, so a record the journal refuses is a
// loss (JournalLossError), not a reason to let the storm go on.
func (c *Coordinator) tripBreaker(ctx context.Context, trip *BreakerTrip) {
	if err := c.log.appendOrLose(ctx, Record{Kind: KindBreakerTripped, Node: trip.Node, Breaker: trip}); err != nil {
		c.logger.Error("supervise: journaling the breaker's trip", "err", err)
	}
	c.logger.Warn("supervise: the restart-intensity breaker tripped", "downs", trip.Downs, "maxRestarts", trip.MaxRestarts,
		"withinMs", trip.WithinMS, "node", trip.Node)
	c.abortRun(fmt.Errorf("%w: %d workers went down within %dms, more than %d", ErrBreakerTripped, trip.Downs, trip.WithinMS, trip.MaxRestarts))
}

// abortByCaller is RootHandle.Abort: it journals the abort, then aborts
// the run. A run whose manager no longer drives is not live; one already
// aborted stays as it is.
func (c *Coordinator) abortByCaller(ctx context.Context, reason string) error {
	if reason == "" {
		reason = "root handle aborted"
	}
	reason = clip(reason, MaxReasonBytes)
	c.spawnMu.Lock() // admission and the abort in one order
	c.mu.Lock()
	root := c.root
	if root.brainCtx == nil || root.brainCtx.Err() != nil {
		c.mu.Unlock()
		c.spawnMu.Unlock()
		return ErrRootNotLive
	}
	if c.tripped != nil || c.abortWhy != "" {
		c.mu.Unlock()
		c.spawnMu.Unlock()
		return nil
	}
	c.abortWhy = reason
	c.mu.Unlock()
	c.scope.Abort()
	c.spawnMu.Unlock()
	if err := c.log.appendOrLose(ctx, Record{Kind: KindAborted, Reason: reason}); err != nil {
		c.logger.Error("supervise: journaling the abort", "err", err)
	}
	c.abortRun(fmt.Errorf("%w: %s", ErrRunAborted, reason))
	return nil
}

// abortRun aborts the scope (every later spawn is refused
// scope-aborted), stops the root manager and cancels every live worker,
// nested managers' subtrees included, with cause.
func (c *Coordinator) abortRun(cause error) {
	c.scope.Abort()
	root := c.root
	c.mu.Lock()
	fn := root.stopFn
	c.mu.Unlock()
	if fn != nil {
		fn(cause)
	}
	if root.cancelWork != nil {
		root.cancelWork(cause)
	}
}

// runAborted reports whether the run was aborted: its breaker tripped or
// its caller aborted it (in this process or, journaled, an earlier one).
func (c *Coordinator) runAborted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tripped != nil || c.abortWhy != ""
}
