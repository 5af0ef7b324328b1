package kernel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

// cancelMember is the run-document member a cancel request writes.
const cancelMember = "cancelRequested"

// leaseWatch bounds how often a live run looks for a cancel request.
const leaseWatch = 500 * time.Millisecond

// keepLease renews a live run's lease every third of ttl until the
// returned stop is called, so a reader sees the run interrupted only when
// the process that owns it died. It also watches the run record for a
// cancel request (RequestCancel, from any process) and calls cancel with
// its reason. A renewal that fails is retried at the next tick: the lease
// then lapses on its own, which is the truth. It runs on a timer, not a
// goroutine of its own, so a short run does not pay a goroutine's start
// and hand-over at its end; after stop returns, nothing more runs.
func keepLease(s store.Store, runID string, ttl time.Duration, now func() time.Time, cancel context.CancelCauseFunc) (stop func()) {
	l := &lease{s: s, runID: runID, ttl: ttl, now: now, cancel: cancel, renewEvery: ttl / 3, lastRenewal: time.Now()}
	l.tick = min(l.renewEvery, leaseWatch)
	l.mu.Lock()
	l.timer = time.AfterFunc(l.tick, l.beat)
	l.mu.Unlock()
	return l.stop
}

// lease is keepLease's state. mu is held through each beat, so stop waits
// for a beat in progress.
type lease struct {
	s                  store.Store
	runID              string
	ttl                time.Duration
	now                func() time.Time
	cancel             context.CancelCauseFunc
	renewEvery, tick   time.Duration
	mu                 sync.Mutex
	timer              *time.Timer
	lastRenewal        time.Time
	stopped, requested bool
}

func (l *lease) beat() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	defer l.timer.Reset(l.tick)
	if time.Since(l.lastRenewal) >= l.renewEvery-l.tick/2 {
		l.lastRenewal = time.Now()
		l.s.UpdateRun(context.Background(), l.runID, func(r *store.Run) error {
			if r.Status.Terminal() {
				return errRunEnded
			}
			r.LeaseUntil = l.now().Add(l.ttl)
			return nil
		})
	}
	if l.requested || l.cancel == nil {
		return
	}
	r, err := l.s.GetRun(context.Background(), l.runID)
	if err != nil {
		return
	}
	if v, ok := r.Doc.Get(cancelMember); ok {
		l.requested = true
		reason, _ := v.Get("reason")
		l.cancel(&CancelRequestedError{RunID: l.runID, Reason: reason.Str()})
	}
}

func (l *lease) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	l.timer.Stop()
}

var errRunEnded = errors.New("kernel: the run already ended")

// endRun records a run's one terminal state: its status and final
// document, its lease released. A run that already ended is left as it
// is, and that is an error.
func endRun(ctx context.Context, s store.Store, runID string, status store.Status, doc canonjson.Value) (store.Run, error) {
	return s.UpdateRun(ctx, runID, func(r *store.Run) error {
		if r.Status.Terminal() {
			return fmt.Errorf("run %s already ended as %s", r.ID, r.Status)
		}
		r.Status, r.LeaseUntil, r.Doc = status, time.Time{}, doc
		return nil
	})
}

// CancelRequestedError is the cancellation cause of a run cancelled by
// RequestCancel.
type CancelRequestedError struct {
	RunID  string
	Reason string
}

func (e *CancelRequestedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("cancel requested for run %s", e.RunID)
	}
	return fmt.Sprintf("cancel requested for run %s: %s", e.RunID, e.Reason)
}

// Effect is what a cancel request did.
type Effect string

// Cancel effects (spec §13's one effect vocabulary).
const (
	// EffectCancelRequested: the run is live; its owner will cancel it.
	EffectCancelRequested Effect = "cancel_requested"
	// EffectCancelled: the run had already ended cancelled.
	EffectCancelled Effect = "cancelled"
	// EffectNotLive: the run had already ended otherwise, or its owner
	// died (interrupted): there is nothing to cancel.
	EffectNotLive Effect = "not_live"
)

// RequestCancel asks the process that owns a live run to cancel it. The
// request is recorded in the run record, where the owner looks for it
// about twice a second; the owner then cancels the run, which ends
// cancelled (or in whatever state it reached first). Repeating a request
// is harmless. It never changes a run that has ended.
func RequestCancel(ctx context.Context, s store.Store, runID, reason string, now time.Time) (Effect, store.Run, error) {
	var ended store.Run
	r, err := s.UpdateRun(ctx, runID, func(r *store.Run) error {
		if status := store.Effective(*r, time.Now()); status.Terminal() {
			ended = *r
			ended.Status = status
			return errRunEnded
		}
		if _, ok := r.Doc.Get(cancelMember); ok {
			return nil
		}
		req := canonjson.ObjectValue([]canonjson.Member{
			{Name: "reason", Value: canonjson.StringValue(reason)},
			{Name: "at", Value: canonjson.StringValue(envelopeTime(now))},
		})
		r.Doc = r.Doc.With(cancelMember, req)
		return nil
	})
	switch {
	case errors.Is(err, errRunEnded):
		if ended.Status == store.StatusCancelled {
			return EffectCancelled, ended, nil
		}
		return EffectNotLive, ended, nil
	case err != nil:
		return "", r, fmt.Errorf("kernel: requesting cancellation of run %s: %w", runID, err)
	}
	return EffectCancelRequested, r, nil
}
