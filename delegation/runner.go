package delegation

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/journal"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// loop is one runner: it claims and runs delegations until the queue
// closes, looking again when a submission kicks it or every
// ScanInterval (for claims that lapsed elsewhere).
func (q *Queue) loop() {
	defer q.wg.Done()
	t := time.NewTicker(q.cfg.ScanInterval)
	defer t.Stop()
	for {
		for q.base.Err() == nil && q.Failure() == nil {
			d, ok := q.claimNext()
			if !ok || !q.run(d) {
				break // nothing to claim, or wait for the next scan
			}
		}
		select {
		case <-q.base.Done():
			return
		case <-q.kick:
		case <-t.C:
		}
	}
}

// errNotClaimable: someone else claimed it, or it ended, in between.
var errNotClaimable = errors.New("delegation: not claimable")

// claimNext claims the oldest running delegation whose claim lapsed, or
// else the oldest pending one.
func (q *Queue) claimNext() (Delegation, bool) {
	ctx, cancel := context.WithTimeoutCause(q.base, q.cfg.StoreTimeout, errStoreTimeout)
	defer cancel()
	for _, status := range []store.Status{store.StatusRunning, store.StatusPending} {
		runs, err := q.cfg.Store.ListRuns(ctx, store.ListOptions{Kind: Kind, Status: status})
		if err != nil {
			if q.base.Err() == nil {
				q.cfg.Logger.Warn("delegation: listing the queue", "err", err)
			}
			return Delegation{}, false
		}
		slices.Reverse(runs) // oldest first
		for _, r := range runs {
			if status == store.StatusRunning && !q.lapsed(r) {
				continue
			}
			d, err := q.claim(ctx, r.ID)
			if err == nil {
				return d, true
			}
			if !errors.Is(err, errNotClaimable) && q.base.Err() == nil {
				q.cfg.Logger.Warn("delegation: claiming", "task_id", r.ID, "err", err)
			}
		}
	}
	return Delegation{}, false
}

// lapsed reports whether a running delegation's claim lapsed.
func (q *Queue) lapsed(r store.Run) bool {
	d, err := decodeRun(r)
	if err != nil {
		return false // never take over what cannot be read
	}
	return d.Claim == nil || q.cfg.Now().After(d.Claim.Until)
}

// claim takes a pending delegation, or a running one whose claim lapsed,
// by compare-and-set.
func (q *Queue) claim(ctx context.Context, id string) (Delegation, error) {
	r, err := q.update(ctx, id, func(r *store.Run, d *Delegation) error {
		now := q.cfg.Now()
		switch {
		case r.Status == store.StatusPending:
		case r.Status == store.StatusRunning && (d.Claim == nil || now.After(d.Claim.Until)):
		default:
			return errNotClaimable
		}
		r.Status = store.StatusRunning
		d.Attempts++
		d.Claim = &Claim{Owner: q.cfg.Owner, Until: now.Add(q.cfg.ClaimTTL)}
		if d.StartedAt == nil {
			d.StartedAt = &now
		}
		return nil
	})
	if err != nil {
		return Delegation{}, err
	}
	q.notify()
	return decodeRun(r)
}

// run runs one claimed attempt of d to its end, or until the queue
// closes or the claim is lost. It returns false when it handed d back
// for a process that still holds its journal: the runner then waits for
// its next scan instead of claiming it again at once.
func (q *Queue) run(d Delegation) (next bool) {
	ctx, cancel := context.WithCancelCause(q.base)
	defer cancel(errFinished)
	q.mu.Lock()
	q.live[d.TaskID] = cancel
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.live, d.TaskID)
		q.mu.Unlock()
	}()
	log := q.cfg.Logger.With("task_id", d.TaskID, "attempt", d.Attempts)

	if q.base.Err() != nil {
		// Claimed just as the queue began to close: hand it back.
		q.release(d.TaskID, nil)
		return false
	}
	// Resume what an earlier attempt journaled; never start over what
	// an earlier attempt may have begun without a journal here.
	rctx, rcancel := q.storeCtx()
	journaled, jerr := supervise.RunDirJournaled(rctx, d.RunDir)
	rcancel()
	journaled = journaled && jerr == nil
	if d.Attempts > 1 && !journaled {
		why := "found no journal"
		if jerr != nil && !errors.Is(jerr, fs.ErrNotExist) {
			why = "could not read the journal (" + jerr.Error() + ")"
		}
		q.end(d.TaskID, nil, store.StatusInterrupted, nil, false, fmt.Sprintf(
			"attempt %d %s in %s to resume from; an earlier attempt was claimed and may have done work no record here shows, so it is not run again (submit it anew to start over)", d.Attempts, why, d.RunDir))
		log.Warn("delegation: interrupted: nothing to resume from")
		return true
	}

	var rec *traceRecorder
	if q.cfg.Observer != nil {
		if obs := q.cfg.Observer(); obs != nil {
			rec = newTraceRecorder(obs, q.cfg.Now)
		}
	}
	c := newClaimFence(d.Claim.Until, q.cfg.ClaimTTL, q.cfg.Now)
	hbDone := make(chan struct{})
	go q.heartbeat(ctx, d.TaskID, rec, c, cancel, hbDone)
	res, err := q.supervise(ctx, d, rec, c.held)
	if errors.Is(err, supervise.ErrOutcomeNotJournaled) || errors.Is(err, supervise.ErrJournalIncomplete) {
		// The run ended and its result is real, but its journal does not
		// hold all of it: the store's end below is then its record (an
		// ended delegation is never resumed from its journal).
		log.Warn("delegation: the run's journal is incomplete", "err", err)
		err = nil
	}
	cause := context.Cause(ctx)
	cancel(errFinished)
	<-hbDone

	switch {
	case errors.Is(cause, errShutdown):
		q.release(d.TaskID, rec)
		log.Info("delegation: handed back at shutdown")
	case errors.Is(cause, errLost), errors.Is(cause, errLapsed), errors.Is(err, supervise.ErrSpawnLogLost):
		// The run wrote nothing once the claim was not surely this
		// queue's; whoever claims it next (a lapsed claim is claimable by
		// any queue) resumes it from its journal.
		log.Warn("delegation: the claim was lost or lapsed; its next holder answers for it", "err", context.Cause(ctx))
	case isLocked(err):
		// A process that lost its claim still holds the journal: hand
		// the delegation back; a later scan resumes it once that process
		// noticed and let go.
		q.release(d.TaskID, rec)
		log.Warn("delegation: the journal is still held by another process; handed back")
		return false
	case err != nil:
		var exists *supervise.RunExistsError
		msg := "the supervised run could not run: " + err.Error()
		if errors.As(err, &exists) {
			msg += " (the run dir holds another run's journal)"
		}
		q.end(d.TaskID, rec, store.StatusFailed, nil, journaled, msg)
	default:
		status := store.StatusFailed
		if res.Status == supervise.StatusWinner {
			status = store.StatusCompleted
		}
		q.end(d.TaskID, rec, status, resultOf(res), res.Resumed, "")
	}
	return true
}

// supervise runs d's supervised run (resuming its journal when there is
// one).
func (q *Queue) supervise(ctx context.Context, d Delegation, rec *traceRecorder, held func() error) (res supervise.SupervisedResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the supervised run panicked: %v", p)
		}
	}()
	b := d.Budget
	o := supervise.Options{
		Budget:           ledger.Budget{Tokens: &b.Tokens, Iterations: &b.Iterations},
		PerWorker:        q.cfg.PerWorker,
		MaxLiveWorkers:   q.cfg.MaxLiveWorkers,
		Profiles:         q.cfg.Profiles,
		AuthoredProfiles: q.cfg.AuthoredProfiles,
		AllowedModels:    q.cfg.AllowedModels,
		Deliverable:      q.cfg.Deliverable,
		Executor:         q.cfg.Executor,
		MaxTurns:         q.cfg.MaxTurns,
		RunDir:           d.RunDir,
		RunID:            d.TaskID,
		Resume:           true,
		// A process killed after its run ended (its finished record
		// journaled, the store's end not yet written) is resumed to
		// the journaled result, not re-run; a run this queue's own
		// shutdown or a lost claim interrupted is driven on.
		ReturnEnded: true,
		SettleGrace: q.cfg.SettleGrace,
		Held:        held,
		Logger:      q.cfg.Logger,
	}
	if rec != nil {
		o.Observer = rec
	}
	if d.StartedAt != nil {
		o.Deadline = d.StartedAt.Add(q.cfg.MaxRunTime)
	}
	if b.USD != nil {
		micro := int64(math.Round(*b.USD * 1e6))
		o.Budget.MicroUSD = &micro
	}
	if o.PerWorker.Tokens == nil {
		share := b.Tokens / int64(max(1, min(4, len(q.cfg.Profiles)*2)))
		one := int64(1)
		o.PerWorker = ledger.Budget{Tokens: &share, Iterations: &one}
	}
	if q.cfg.Brain != nil {
		if o.Brain, err = q.cfg.Brain(d.Intent); err != nil {
			return res, fmt.Errorf("the manager's brain: %w", err)
		}
	} else if o.Router, err = q.cfg.Router(d.Intent); err != nil {
		return res, fmt.Errorf("the manager's model: %w", err)
	}
	return supervise.Supervise(ctx, q.cfg.Manager, d.Intent, o)
}

// heartbeat renews the claim every third of its length. It cancels the
// run when the delegation was cancelled (by any process), when another
// holder took it over, or when renewals failed for longer than the
// claim lasts (another queue may take it over then).
func (q *Queue) heartbeat(ctx context.Context, id string, rec *traceRecorder, claim *claimFence, cancel context.CancelCauseFunc, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(q.cfg.ClaimTTL / 3)
	defer t.Stop()
	renewed := q.cfg.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := claim.held(); err != nil {
			// Paused past the claim (or renewals too slow): the run may
			// be another queue's by now. It already writes nothing more
			// (the fence); stop it rather than renew a claim whose run
			// another process may be driving.
			cancel(err)
			return
		}
		var stop error
		var until time.Time
		sctx, scancel := context.WithTimeoutCause(ctx, min(q.cfg.StoreTimeout, q.cfg.ClaimTTL/3), errStoreTimeout)
		_, err := q.update(sctx, id, func(r *store.Run, d *Delegation) error {
			stop = nil
			switch {
			case r.Status == store.StatusCancelled:
				stop = errCancelled
			case r.Status != store.StatusRunning || d.Claim == nil || d.Claim.Owner != q.cfg.Owner:
				stop = errLost
			}
			if stop != nil {
				return errUnchanged
			}
			d.Claim.Until = q.cfg.Now().Add(q.cfg.ClaimTTL)
			until = d.Claim.Until
			// A running delegation shows its trace as soon as it has one.
			if traceID, root := rec.ids(); traceID != "" {
				d.TraceID, d.ParentSpanID = traceID, root
			}
			return nil
		})
		scancel()
		switch {
		case stop != nil:
			cancel(stop)
			return
		case err == nil:
			renewed = q.cfg.Now()
			claim.renewed(until)
		case ctx.Err() != nil:
			return
		default:
			q.cfg.Logger.Warn("delegation: renewing the claim", "task_id", id, "err", err)
			if q.cfg.Now().Sub(renewed) >= q.cfg.ClaimTTL {
				cancel(errLost)
				return
			}
		}
	}
}

// claimFence is the time fence of one attempt's claim: the run writes
// to its journal only while the claim, as last written by this queue,
// has not run out by this process's clock (less a margin for the clocks
// of the queues that may claim it next). A process paused past its
// claim learns that the claim was taken over only when its heartbeat
// next reaches the store; the fence refuses its writes before then.
type claimFence struct {
	until  atomic.Int64 // unix nanoseconds
	margin time.Duration
	now    func() time.Time
}

func newClaimFence(until time.Time, ttl time.Duration, now func() time.Time) *claimFence {
	c := &claimFence{margin: ttl / 10, now: now}
	c.until.Store(until.UnixNano())
	return c
}

// renewed moves the fence to a renewal's new end.
func (c *claimFence) renewed(until time.Time) {
	if !until.IsZero() {
		c.until.Store(until.UnixNano())
	}
}

// held is nil while the claim surely lasts, else errLapsed.
func (c *claimFence) held() error {
	if c.now().Before(time.Unix(0, c.until.Load()).Add(-c.margin)) {
		return nil
	}
	return errLapsed
}

// storeCtx bounds a store call the queue makes on its own, also while
// it closes.
func (q *Queue) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(context.WithoutCancel(q.base), q.cfg.StoreTimeout, errStoreTimeout)
}

// end records how an attempt ended, while this queue still holds the
// claim. A delegation cancelled meanwhile keeps its state and gains the
// result.
func (q *Queue) end(id string, rec *traceRecorder, status store.Status, res *Result, resumed bool, failure string) {
	ctx, cancel := q.storeCtx()
	defer cancel()
	_, err := q.update(ctx, id, func(r *store.Run, d *Delegation) error {
		switch {
		case r.Status == store.StatusCancelled:
		case r.Status != store.StatusRunning || d.Claim == nil || d.Claim.Owner != q.cfg.Owner:
			return errLost
		default:
			r.Status = status
			now := q.cfg.Now()
			d.EndedAt = &now
		}
		d.Result, d.Claim = res, nil
		d.Resumed = d.Resumed || resumed
		rec.apply(d)
		if failure != "" {
			d.Failure = failure
		}
		return nil
	})
	if err != nil {
		q.cfg.Logger.Warn("delegation: recording the end", "task_id", id, "err", err)
	}
	q.notify()
	q.kickEviction()
}

// release hands a running delegation back at shutdown: its claim lapses
// now, so the next queue resumes it at once.
func (q *Queue) release(id string, rec *traceRecorder) {
	ctx, cancel := q.storeCtx()
	defer cancel()
	_, err := q.update(ctx, id, func(r *store.Run, d *Delegation) error {
		if r.Status != store.StatusRunning || d.Claim == nil || d.Claim.Owner != q.cfg.Owner {
			return errUnchanged
		}
		d.Claim.Until = q.cfg.Now().Add(-time.Millisecond)
		rec.apply(d)
		return nil
	})
	if err != nil {
		q.cfg.Logger.Warn("delegation: releasing the claim", "task_id", id, "err", err)
	}
}

// resultOf is the record of a supervised run's result; unknown spend
// stays null.
func resultOf(res supervise.SupervisedResult) *Result {
	s := res.Spent
	out := &Result{Status: string(res.Status), Reason: string(res.Reason), Workers: len(res.Tree), Down: res.DownCount,
		SpentTotal: Spent{MS: res.MS, Charged: Charged{Tokens: s.Tokens, Iterations: s.Iterations, USD: float64(s.MicroUSD) / 1e6}}}
	if s.TokensKnown {
		out.SpentTotal.Tokens = &s.Tokens
	}
	if s.IterationsKnown {
		out.SpentTotal.Iterations = &s.Iterations
	}
	if s.USDKnown {
		usd := float64(s.MicroUSD) / 1e6
		out.SpentTotal.USD = &usd
	}
	if w := res.Winner; w != nil {
		out.Out, out.OutRef = w.Text, w.OutRef
		if len(out.Out) > MaxOutBytes {
			out.Out, out.OutTruncated = clip(out.Out, MaxOutBytes), true
		}
	}
	if e := res.Error; e != nil {
		out.Error = &ErrorInfo{Name: e.Name, Message: e.Message}
	}
	for _, g := range res.SpendGaps {
		out.SpendGaps = append(out.SpendGaps, string(g.ID))
	}
	return out
}

// isLocked reports whether err is a run another process holds: its run
// dir (supervise.lock), its journal file, or its store journal's lease.
func isLocked(err error) bool {
	_, ok := errors.AsType[*journal.LockedError](err)
	return ok || errors.Is(err, supervise.ErrSpawnLogHeld)
}
