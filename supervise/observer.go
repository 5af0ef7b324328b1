package supervise

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
)

// Observer watches a supervised run as it happens (spec runtime §10's
// supervisor hooks, opt-in: Options.Observer nil installs nothing).
// Package telemetry turns it into OpenTelemetry spans.
//
// RunStarted is called once the run is journaled (new or resumed) and
// RunEnded exactly once after it, on every return of Supervise: with
// the result once it is final, or, where Supervise returns an error
// instead of a result (ErrSpawnLogLost, a finished run's OnResume
// failing), with a result that has only RunID and Resumed (no Status);
// between them NodeStarted and
// NodeSettled are called for each worker this process runs, from the
// workers' goroutines, so an Observer must be safe for concurrent use.
// Workers a resumed run replays from its journal are not started again
// and are not reported. A panic in an Observer is logged and contained:
// it never changes the run.
type Observer interface {
	// RunStarted returns the context the run goes on under: ctx itself,
	// or one derived from it (trace.ContextWithSpan) carrying the
	// observer's trace context to the brain and the workers.
	RunStarted(ctx context.Context, run RunStart) context.Context
	// NodeStarted returns the context the worker's executor runs under
	// (derived from ctx as RunStarted's is) and the kernel.Observer of
	// the worker's run (nil: none), which Work.Observer carries to the
	// executor.
	NodeStarted(ctx context.Context, node NodeInfo) (context.Context, kernel.Observer)
	// NodeSettled sees how a worker settled.
	NodeSettled(ctx context.Context, s NodeSettled)
	// RunEnded sees the run's result as its caller will.
	RunEnded(ctx context.Context, res SupervisedResult)
}

// RunStart is what an Observer learns when a supervised run starts.
type RunStart struct {
	RunID string
	// Manager is the manager profile's name ("" when it has none).
	Manager string
	// Resumed says the run continues an earlier process's journal.
	Resumed bool
	// Budget is the run's pool.
	Budget ledger.Budget
	// JournalGeneration is the lease generation at which this process
	// holds a journal kept in a store (Options.SpawnStore): the
	// HeldRecord.Generation of every record it appends, told apart from
	// a later holder's after a take-over. 0 for a run dir's journal,
	// which one process holds under its file lock.
	JournalGeneration int64
}

// NodeSettled is how one worker settled.
type NodeSettled struct {
	// Node is the node as the scope holds it after settlement.
	Node NodeInfo
	// State is the settled state; Reason says why a worker failed or
	// was cancelled.
	State  State
	Reason string
	// Spent is what the executor reported: a nil quantity is unknown
	// (the pool charged the worker's ceiling for it).
	Spent ledger.Spend
	// Usage is the worker's usage channel by channel, when the executor
	// reported it (WorkResult.Usage); nil: unknown.
	Usage       *ledger.Usage
	ServedModel string
	// Infra says a worker that did not settle done went down for an
	// infrastructure reason (IsInfra of its executor's error, or its
	// executor panicked) rather than its own outcome.
	Infra bool
	// Delivered says the deliverable check passed; Verdict is its
	// verdict (nil: not checked, or the check failed).
	Delivered bool
	Verdict   *kernel.Verdict
	OutRef    string
	Duration  time.Duration
}

// observing calls an Observer with its panics contained; a nil
// *observing calls nothing.
type observing struct {
	o   Observer
	log *slog.Logger
}

func (w *observing) contain(hook string) {
	if p := recover(); p != nil {
		w.log.Warn("supervise: the run's observer panicked", "hook", hook, "panic", p)
	}
}

func (w *observing) runStarted(ctx context.Context, s RunStart) (out context.Context) {
	if w == nil {
		return ctx
	}
	out = ctx
	defer w.contain("RunStarted")
	if got := w.o.RunStarted(ctx, s); got != nil {
		out = got
	}
	return out
}

func (w *observing) nodeStarted(ctx context.Context, n NodeInfo) (out context.Context, ko kernel.Observer) {
	if w == nil {
		return ctx, nil
	}
	out = ctx
	defer w.contain("NodeStarted")
	got, ko := w.o.NodeStarted(ctx, n)
	if got != nil {
		out = got
	}
	return out, ko
}

func (w *observing) nodeSettled(ctx context.Context, s NodeSettled) {
	if w == nil {
		return
	}
	defer w.contain("NodeSettled")
	w.o.NodeSettled(ctx, s)
}

func (w *observing) runEnded(ctx context.Context, res SupervisedResult) {
	if w == nil {
		return
	}
	defer w.contain("RunEnded")
	w.o.RunEnded(ctx, res)
}
