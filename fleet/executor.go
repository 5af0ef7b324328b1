package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// Executor runs a supervised run's workers as fleet runs
// (supervise.Executor): each worker is submitted to the Provider queue,
// executed by whichever worker process takes it, on any machine, and
// waited for here. The fleet run's id and idempotency key derive from
// the supervised run and the worker's node, and the id is journaled
// before the submission (supervise.Work.Bind): a supervisor resumed
// after its process died recovers the worker from that fleet run once it
// ended (Recover, supervise.Recoverer) instead of submitting the work
// again.
//
// What a worker spent is read from the ledgers of its fleet run's
// attempts (every attempt's, a dead worker's included); what they do not
// state stays unknown. A turn is counted once: an attempt that
// re-attached to the turn of the attempt before it (same environment)
// observed that turn again, replayed from its start, so the two state
// one turn's usage, not two (turnUsage). An attempt whose end went
// unrecorded (its kernel run reads interrupted, its ledger a floor) but
// whose events hold its turn's end states that turn's usage in them.
// Workers cannot ask their manager questions through the fleet, and
// supervise.Work's Observer is not called: the
// worker runs in another process. The trace context ctx carries (the
// worker's supervise node span, when the run is traced) travels with the
// fleet run (Submission.TraceParent): the worker process's spans of the
// attempt are that node span's children.
type Executor struct {
	// Fleet submits the workers and reads their runs.
	Fleet *Fleet
	// Provider is the queue (Spec.Provider) the workers are submitted
	// to.
	Provider string
	// PollInterval is how often a waiting worker's run is read; 0 is
	// 200ms.
	PollInterval time.Duration
	// TimeoutMillis bounds each attempt (Spec.TimeoutMillis).
	TimeoutMillis int64
}

// RuntimeFleet is the runtime Executor names (supervise.RuntimeNamer).
const RuntimeFleet = "fleet"

// Runtime reports RuntimeFleet.
func (e *Executor) Runtime() string { return RuntimeFleet }

// PropagatesTrace reports true: the node's trace context travels with
// the fleet run (Submission.TraceParent).
func (e *Executor) PropagatesTrace() bool { return true }

// ReportsUsage reports true: the attempts' ledgers state their usage,
// and what they do not stays unknown.
func (e *Executor) ReportsUsage() bool { return true }

// Execute submits the worker and waits for its fleet run to end; when
// ctx ends first, the run is cancelled (best effort) and what it spent is
// unknown.
func (e *Executor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if e == nil || e.Fleet == nil || w.Profile == nil {
		return supervise.WorkResult{}, fmt.Errorf("fleet: executor: %w: needs a Fleet and the worker's profile", ErrInvalid)
	}
	pv, err := w.Profile.Value()
	if err != nil {
		return supervise.WorkResult{}, fmt.Errorf("fleet: executor: worker %s: %w", w.Node, err)
	}
	runID := workerRunID(w.RunID, w.Node)
	if w.Bind != nil {
		// The fleet run's id is journaled before it is submitted, so a
		// supervisor that dies while the worker runs leaves it
		// recoverable (Recover).
		if err := w.Bind(ctx, runID); err != nil {
			return supervise.WorkResult{Spent: nothingSpent()}, fmt.Errorf("fleet: executor: worker %s: %w", w.Node, err)
		}
	}
	sub, err := e.Fleet.Submit(ctx, Submission{
		// The supervised run's gate decides delivery, not the fleet.
		Spec:           Spec{Profile: pv, Task: w.Task, Provider: e.Provider, TimeoutMillis: e.TimeoutMillis, JudgedBy: w.JudgedBy()},
		RunID:          runID,
		IdempotencyKey: workerKey(w.RunID, w.Node),
		// The node's span (the supervise observer's, when traced): the
		// worker's spans continue it in the other process.
		TraceParent: TraceParent(ctx),
	})
	if err != nil {
		if refusedBeforeRecording(err) {
			// Refused before the run was recorded: nothing ran, nothing
			// was spent.
			return supervise.WorkResult{Spent: nothingSpent()}, fmt.Errorf("fleet: executor: worker %s: %w", w.Node, err)
		}
		// The run may be recorded and its job enqueued (an answer lost
		// after the commit): ask it to end, and leave what it spent
		// unknown, charged at the worker's ceiling; a resume reads the
		// fleet run (Recover).
		cancelCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		e.Fleet.Cancel(cancelCtx, runID, "the supervisor could not confirm the submission: "+err.Error())
		return supervise.WorkResult{}, fmt.Errorf("fleet: executor: worker %s (fleet run %s, submission unconfirmed): %w", w.Node, runID, err)
	}
	every := e.PollInterval
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r, err := e.Fleet.Get(ctx, sub.RunID)
		if err == nil && r.Status.Terminal() {
			return e.result(ctx, w, r)
		}
		select {
		case <-ctx.Done():
			cancelCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			e.Fleet.Cancel(cancelCtx, sub.RunID, "the supervisor stopped waiting: "+context.Cause(ctx).Error())
			// Spent is unknown (nil): it is charged at the worker's ceiling.
			return supervise.WorkResult{}, fmt.Errorf("fleet: executor: worker %s (fleet run %s): %w", w.Node, sub.RunID, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// workerKey is the idempotency key of a supervised worker's submission.
func workerKey(runID string, node supervise.NodeID) string {
	return "supervise/" + runID + "/" + string(node)
}

// workerRunID is the fleet run id of a supervised worker: derived from
// its supervised run and node, so that the supervisor can journal it
// before submitting (Work.Bind) and a resumed supervisor finds the run
// its dead predecessor submitted.
func workerRunID(runID string, node supervise.NodeID) string {
	sum := sha256.Sum256([]byte(workerKey(runID, node)))
	return "run-sv-" + hex.EncodeToString(sum[:12])
}

// Recover reports how the fleet run a resumed supervisor's worker was
// bound to ended (supervise.Recoverer): the supervisor that submitted it
// died while it ran, and the fleet ran it on. It never submits work: a
// run that is not in the fleet, or has not ended yet, leaves the worker
// in doubt with a reason that says what to do.
func (e *Executor) Recover(ctx context.Context, w supervise.RecoverWork) (supervise.Recovered, error) {
	if e == nil || e.Fleet == nil {
		return supervise.Recovered{}, fmt.Errorf("fleet: executor: %w: needs a Fleet to recover", ErrInvalid)
	}
	r, err := e.Fleet.Get(ctx, w.Execution)
	if errors.Is(err, store.ErrNotFound) {
		return supervise.Recovered{}, fmt.Errorf("fleet: executor: fleet run %s is not in this fleet (its supervisor may have died before submitting it): resume with the fleet the run used, or spawn the work again under a new key: %w", w.Execution, err)
	}
	if err != nil {
		return supervise.Recovered{}, fmt.Errorf("fleet: executor: reading fleet run %s: %w", w.Execution, err)
	}
	if !r.Status.Terminal() {
		return supervise.Recovered{}, fmt.Errorf("fleet: executor: fleet run %s is %s: resume the supervised run again once it ended", r.ID, r.Status)
	}
	res, runErr := e.result(ctx, supervise.Work{RunID: w.RunID, Node: w.Node}, r)
	out := supervise.Recovered{State: supervise.StateDone, Result: res}
	switch {
	case runErr == nil:
		return out, nil
	case r.Status == store.StatusCancelled:
		out.State = supervise.StateCancelled
	case r.Status == store.StatusCompleted:
		// Its attempts' records could not be read: the outcome is
		// known, what it spent is not readable — not recovered.
		return supervise.Recovered{}, runErr
	default:
		out.State = supervise.StateFailed
	}
	out.Reason = runErr.Error()
	return out, nil
}

// result is the worker's result from its ended fleet run.
func (e *Executor) result(ctx context.Context, w supervise.Work, r *Run) (supervise.WorkResult, error) {
	// turns are the turns the attempts ran, each with its environment
	// and usage (see turnUsage: one turn is counted once).
	type turn struct {
		env   string
		usage ledger.Usage
	}
	var turns []turn
	var served, teardown string
	for _, a := range r.Attempts {
		rec, err := kernel.ReadRun(ctx, e.Fleet.Store(), a.RunID)
		if errors.Is(err, store.ErrNotFound) {
			continue // never started: spent nothing
		}
		if err != nil {
			return supervise.WorkResult{}, fmt.Errorf("fleet: executor: worker %s: attempt %s: %w", w.Node, a.RunID, err)
		}
		spent := rec.Spend
		switch {
		case rec.Exact != nil && rec.Exact.Usage != nil:
			spent = rec.Exact.Usage.Usage
		case rec.Run.Status == store.StatusInterrupted:
			// Its end went unrecorded, so its ledger states a floor; a turn
			// whose end its events record (an attempt adopted so) states
			// its usage there, whole when it ran to its end.
			recorded, err := kernel.ReadRecordedTurn(ctx, e.Fleet.Store(), a.RunID)
			if err != nil {
				return supervise.WorkResult{}, fmt.Errorf("fleet: executor: worker %s: attempt %s: %w", w.Node, a.RunID, err)
			}
			if recorded.Ended() {
				spent = turnUsage(spent, recorded.Usage)
			}
		}
		env := ""
		if rec.Exact != nil {
			env = string(rec.Exact.EnvironmentID)
		}
		if n := len(turns); n > 0 && env != "" && turns[n-1].env == env {
			// Re-attached to the turn of the attempt before it.
			turns[n-1].usage = turnUsage(turns[n-1].usage, spent)
		} else {
			turns = append(turns, turn{env: env, usage: spent})
		}
		if rec.Exact != nil && rec.Exact.ServedModel != "" {
			served = string(rec.Exact.ServedModel)
		}
		if rec.Exact != nil && rec.Exact.TeardownUnconfirmed != "" {
			// An attempt's environment its kernel run could not confirm
			// destroyed: the worker holds its slot (§15 behaviour 51).
			if teardown != "" {
				teardown += "; "
			}
			teardown += "attempt " + a.RunID + ": " + rec.Exact.TeardownUnconfirmed
		}
	}
	var usage ledger.Usage
	for i, t := range turns {
		if i == 0 {
			usage = t.usage
		} else {
			usage = usage.Plus(t.usage)
		}
	}
	out := supervise.WorkResult{Spent: supervise.SpendOf(usage), ServedModel: served, Usage: &usage, TeardownUnconfirmed: teardown}
	if len(r.Attempts) == 0 {
		// Cancelled before any worker took it.
		out = supervise.WorkResult{Spent: nothingSpent()}
	}
	if r.Outcome != nil {
		out.Text = r.Outcome.Text
	}
	if r.Status != store.StatusCompleted {
		why := ""
		if r.Outcome != nil {
			why = ": " + r.Outcome.Error
		}
		err := fmt.Errorf("fleet: executor: worker %s: fleet run %s ended %s%s", w.Node, r.ID, r.Status, why)
		if r.Status == store.StatusInterrupted {
			// Its worker process died or lost the run: the fleet's
			// failure, not the worker's outcome.
			err = &supervise.InfraError{Err: err}
		}
		return out, err
	}
	return out, nil
}

// turnUsage is the usage of one turn two attempts observed: the earlier
// attempt ran it (or followed it) until its worker died or its stream
// broke, and the later one re-attached to it in the same environment,
// the provider replaying it from its start (the fleet names every
// attempt's turn after the run) — so what the later one observed
// includes what the earlier one reported. Counting both would count the
// turn twice. Each channel is the exact amount when either attempt saw
// it whole (the later one's when both did), else the larger floor, else
// unknown.
func turnUsage(earlier, later ledger.Usage) ledger.Usage {
	return ledger.Usage{
		InputTokens:      sameTurn(earlier.InputTokens, later.InputTokens),
		OutputTokens:     sameTurn(earlier.OutputTokens, later.OutputTokens),
		CacheReadTokens:  sameTurn(earlier.CacheReadTokens, later.CacheReadTokens),
		CacheWriteTokens: sameTurn(earlier.CacheWriteTokens, later.CacheWriteTokens),
		ReasoningTokens:  sameTurn(earlier.ReasoningTokens, later.ReasoningTokens),
		CostUSD:          sameTurn(earlier.CostUSD, later.CostUSD),
	}
}

// sameTurn is one channel of turnUsage.
func sameTurn[N int64 | float64](earlier, later ledger.Amount[N]) ledger.Amount[N] {
	switch {
	case later.Known():
		return later
	case earlier.Known():
		return earlier
	case !later.Reported:
		return earlier
	case !earlier.Reported || later.Value >= earlier.Value:
		return later
	}
	return earlier
}

// refusedBeforeRecording reports whether a Submit error refused the
// submission before its run was recorded: an invalid submission or an
// idempotency key bound to another request.
func refusedBeforeRecording(err error) bool {
	var conflict *ConflictError
	return errors.Is(err, ErrInvalid) || errors.As(err, &conflict)
}

// nothingSpent is the spend of work that never ran.
func nothingSpent() ledger.Spend {
	zero, none := int64(0), int64(0)
	return ledger.Spend{Tokens: &zero, Iterations: &none, MicroUSD: &zero}
}
