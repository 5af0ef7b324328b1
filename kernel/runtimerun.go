package kernel

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// KindRuntime is the kind of a run recorded by StartRuntimeRun.
const KindRuntime = "runtime"

// LedgerRuntime is a runtime run's closing ledger entry: the usage of
// every model call it observed.
const LedgerRuntime = "runtime"

// RuntimeEventLLMCall is the one runtime event type that changes a
// runtime run's cost.
const RuntimeEventLLMCall = "llm_call"

// RuntimeRunOptions configure StartRuntimeRun.
type RuntimeRunOptions struct {
	// WorkspaceID and TaskID are required: the workspace the work
	// belongs to and the task it does.
	WorkspaceID string
	TaskID      string
	// Optional annotations carried on the record.
	SessionID, AgentID, ScenarioID, Domain string
	// RunID is the run's id; empty is "<TaskID>:<8 random base-36
	// digits>".
	RunID string
	// Store, when set, records the run durably from the moment it
	// starts: a running row under this process's lease (a run whose
	// process dies reads as interrupted), a ledger entry per observed
	// model call and the closing entry, and the terminal record. Without
	// one the run lives in memory and Persist does nothing.
	Store store.Store
	// LeaseTTL and CleanupTimeout are the lifecycle's (DefaultLeaseTTL,
	// DefaultCleanupTimeout when zero); they apply with a Store.
	LeaseTTL       time.Duration
	CleanupTimeout time.Duration
	Logger         *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// RuntimeEvent is one thing that happened in a runtime run. Only events
// of type RuntimeEventLLMCall count toward its cost; Usage keeps what is
// unknown unknown (an unreported channel is never zero).
type RuntimeEvent struct {
	Type  string
	Model string
	Usage ledger.Usage
}

// RuntimeCost is what a runtime run spent as it observed it.
type RuntimeCost struct {
	// Usage sums the observed model calls: exactly zero with none;
	// unknown on a channel no call reported, a floor on one that some
	// calls reported and others did not.
	Usage Usage `json:"usage"`
	// LLMCalls counts the observed model calls.
	LLMCalls int `json:"llmCalls"`
	// WallMs is the run's wall time: start to completion, or to now
	// while it runs.
	WallMs int64 `json:"wallMs"`
}

// RuntimeCompletion is how a runtime run ended.
type RuntimeCompletion struct {
	// Status is completed, failed or cancelled.
	Status        store.Status
	ResultSummary string
	Error         string
	// Cost, when set, overrides the observed cost on each channel it
	// reports (an unreported channel keeps what was observed).
	Cost *ledger.Usage
	// Metadata is carried on the record (merged with Persist's).
	Metadata map[string]canonjson.Value
}

// RuntimeRecord is a runtime run's record: the row Row returns and the
// document a Store holds.
type RuntimeRecord struct {
	ID              string                     `json:"id"`
	WorkspaceID     string                     `json:"workspaceId"`
	SessionID       string                     `json:"sessionId,omitzero"`
	AgentID         string                     `json:"agentId,omitzero"`
	Domain          string                     `json:"domain,omitzero"`
	TaskID          string                     `json:"taskId"`
	ScenarioID      string                     `json:"scenarioId,omitzero"`
	Status          store.Status               `json:"status"`
	ResultSummary   string                     `json:"resultSummary,omitzero"`
	Error           string                     `json:"error,omitzero"`
	Cost            RuntimeCost                `json:"cost"`
	StartedAt       string                     `json:"startedAt"`
	CompletedAt     string                     `json:"completedAt,omitzero"`
	Metadata        map[string]canonjson.Value `json:"metadata,omitzero"`
	CancelRequested *CancelRequest             `json:"cancelRequested,omitzero"`
}

// DecodeRuntimeRecord reads a runtime run's document.
func DecodeRuntimeRecord(doc canonjson.Value) (*RuntimeRecord, error) {
	var r RuntimeRecord
	if err := canonjson.FromValue(doc, &r); err != nil {
		return nil, fmt.Errorf("kernel: the run document is not a runtime run's record: %w", err)
	}
	return &r, nil
}

// ErrRuntimeRunState matches every *RuntimeRunStateError.
var ErrRuntimeRunState = errors.New("kernel: runtime run state")

// RuntimeRunStateError is an operation the runtime run's state does not
// allow: completing an ended run with another status, or persisting a
// run that has not ended.
type RuntimeRunStateError struct {
	RunID  string
	Status store.Status
	Op     string
}

func (e *RuntimeRunStateError) Error() string {
	return fmt.Sprintf("kernel: runtime run %s is %s: cannot %s", e.RunID, e.Status, e.Op)
}

// Is makes errors.Is(err, ErrRuntimeRunState) match.
func (e *RuntimeRunStateError) Is(target error) bool { return target == ErrRuntimeRunState }

// RuntimeRun is a run record and cost ledger for work its caller drives
// itself (seed 003's startRuntimeRun). It is safe for concurrent use.
type RuntimeRun struct {
	opts    RuntimeRunOptions
	now     func() time.Time
	started time.Time
	ctx     context.Context
	stop    context.CancelCauseFunc
	life    *life // nil without a Store

	// record orders the ledger's snapshots as the calls were counted:
	// it is held from counting a call to recording its snapshot.
	record    sync.Mutex
	mu        sync.Mutex
	status    store.Status
	usage     ledger.Usage
	calls     int
	completed time.Time
	end       RuntimeCompletion
	meta      map[string]canonjson.Value
}

// StartRuntimeRun starts a runtime run. ctx bounds the run: once it
// ends, or the run's lease is lost, the run's remaining store calls are
// bounded by the cleanup timeout. With a Store the run is recorded
// running before it returns.
func StartRuntimeRun(ctx context.Context, opts RuntimeRunOptions) (*RuntimeRun, error) {
	var errs optionErrors
	if opts.WorkspaceID == "" {
		errs.add("WorkspaceID", "a workspace id is required")
	}
	if opts.TaskID == "" {
		errs.add("TaskID", "a task id is required")
	}
	lo := lifeOptions{Store: opts.Store, Kind: KindRuntime, LeaseTTL: opts.LeaseTTL, CleanupTimeout: opts.CleanupTimeout, Logger: opts.Logger}
	if opts.Store != nil {
		lo.check(&errs)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	if opts.RunID == "" {
		opts.RunID = opts.TaskID + ":" + base36(8)
	}
	r := &RuntimeRun{opts: opts, now: opts.Now, status: store.StatusRunning, usage: ledger.NoUsage()}
	if r.now == nil {
		r.now = time.Now
	}
	r.started = r.now()
	r.ctx, r.stop = context.WithCancelCause(ctx)
	if opts.Store != nil {
		lo.RunID = opts.RunID
		doc, err := canonjson.ToValue(r.recordLocked(nil))
		if err != nil {
			r.stop(err)
			return nil, fmt.Errorf("kernel: encoding runtime run %s: %w", opts.RunID, err)
		}
		// The lifecycle watches the caller's context, not the run's: a
		// cancel request ends the run's context, and the caller, who
		// drives the work, may take longer than the cleanup window to
		// wind it down before Complete records the end. A lost lease
		// starts the window itself (loseLease).
		if r.life, err = startLife(ctx, lo, doc, r.stop); err != nil {
			r.stop(err)
			return nil, err
		}
	}
	return r, nil
}

// ID is the run's id.
func (r *RuntimeRun) ID() string { return r.opts.RunID }

// Context is the run's context: cancelled when the context StartRuntimeRun
// was given ends, when another process requests the run's cancellation
// (RequestCancel; context.Cause is the *CancelRequestedError) or when this
// process loses the run's lease (the *LeaseLostError). Work the run
// drives should stop with it.
func (r *RuntimeRun) Context() context.Context { return r.ctx }

// Status is running until Complete, then the status it recorded
// (interrupted when the lease was lost).
func (r *RuntimeRun) Status() store.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// Observe notes one event. A model call (type RuntimeEventLLMCall) adds
// its usage and, with a Store, is recorded in the ledger before Observe
// returns; other events change nothing. Observing an ended run is a
// *RuntimeRunStateError. A ledger write that fails, or does not return
// before the lease (as last renewed when it began) ran out, is a
// *StoreError (Op "record"), or the *LeaseLostError once the lease is
// lost; the usage stays counted.
func (r *RuntimeRun) Observe(ev RuntimeEvent) error {
	if ev.Type != RuntimeEventLLMCall {
		return nil
	}
	if r.life != nil {
		r.record.Lock()
		defer r.record.Unlock()
	}
	r.mu.Lock()
	if r.status != store.StatusRunning {
		defer r.mu.Unlock()
		return &RuntimeRunStateError{RunID: r.opts.RunID, Status: r.status, Op: "observe a model call"}
	}
	if r.calls == 0 {
		// The first call's usage is the run's: a channel it did not
		// report is unknown, not a floor of nothing.
		r.usage = ev.Usage
	} else {
		r.usage = r.usage.Plus(ev.Usage)
	}
	r.calls++
	usage := r.usage
	r.mu.Unlock()
	if r.life == nil {
		return nil
	}
	// Entries are snapshots: the last one is the spend so far.
	if err := r.life.appendLedger([]canonjson.Value{progressEntry(usage, ev.Model)}, r.now()); err != nil {
		return r.recordError("model call", err)
	}
	return nil
}

// recordError types a failed record write of the live run: the
// *LeaseLostError once this process lost the run's lease, the store's
// refusal of the records themselves (store.ErrExists, store.ErrInvalid)
// as it is, otherwise a *StoreError of Op "record".
func (r *RuntimeRun) recordError(what string, err error) error {
	switch lost := r.life.leaseLost(); {
	case lost != nil:
		err = lost
	case errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrInvalid):
	default:
		err = &StoreError{RunID: r.opts.RunID, Op: "record", Err: err}
	}
	return fmt.Errorf("kernel: recording runtime run %s's %s: %w", r.opts.RunID, what, err)
}

// AppendEvents durably appends events to the run, fenced by its lease,
// and returns them with their sequences and cursors; without a Store it
// is an error (there is nowhere to keep them). Appending to an ended run
// is a *RuntimeRunStateError; a failed or unanswered write is typed as
// Observe's is.
func (r *RuntimeRun) AppendEvents(events []store.NewEvent) ([]store.Event, error) {
	if r.life == nil {
		return nil, fmt.Errorf("kernel: runtime run %s has no store to record events in", r.opts.RunID)
	}
	r.record.Lock()
	defer r.record.Unlock()
	if st := r.Status(); st != store.StatusRunning {
		return nil, &RuntimeRunStateError{RunID: r.opts.RunID, Status: st, Op: "record events"}
	}
	out, err := r.life.appendEvents(events)
	if err != nil {
		return nil, r.recordError("events", err)
	}
	return out, nil
}

// Confirm proves that this process holds the run's lease now: a write
// fenced by the lease generation, which also renews the lease, and that
// returned before the lease (as this process last renewed it) ran out.
// It returns the lease's new end, as this process's clock reads it: work
// that must happen at most once across the run's holders (a claim made
// elsewhere in the store) confirms first, and trusts the claim only if
// it returned before then. A lost lease is the *LeaseLostError; ctx
// bounds the write. Without a Store, or on an ended run, it is an error.
func (r *RuntimeRun) Confirm(ctx context.Context) (time.Time, error) {
	if r.life == nil {
		return time.Time{}, fmt.Errorf("kernel: runtime run %s has no store to hold a lease in", r.opts.RunID)
	}
	if st := r.Status(); st != store.StatusRunning {
		return time.Time{}, &RuntimeRunStateError{RunID: r.opts.RunID, Status: st, Op: "confirm its lease"}
	}
	until, err := r.life.confirm(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("kernel: confirming runtime run %s's lease: %w", r.opts.RunID, err)
	}
	return until, nil
}

// Cost returns what the run spent so far as observed.
func (r *RuntimeRun) Cost() RuntimeCost {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.costLocked()
}

func (r *RuntimeRun) costLocked() RuntimeCost {
	end := r.completed
	if end.IsZero() {
		end = r.now()
	}
	return RuntimeCost{Usage: Usage{r.usage}, LLMCalls: r.calls, WallMs: end.Sub(r.started).Milliseconds()}
}

// Complete ends the run with c.Status. Completing an ended run with the
// status it has is a no-op; with another, a *RuntimeRunStateError; with a
// live status, an *OptionsError. With a Store the closing ledger entry
// and the terminal record are written before it returns; if this
// process lost the run's lease meanwhile, the run is interrupted and
// Complete returns a *RunError with ReasonLeaseLost; if the store did not
// record the end, it is interrupted and the *RunError has
// ReasonStoreFailed (its cause a *StoreError).
func (r *RuntimeRun) Complete(c RuntimeCompletion) error {
	switch c.Status {
	case store.StatusCompleted, store.StatusFailed, store.StatusCancelled:
	default:
		return &OptionsError{Field: "Status", Problem: fmt.Sprintf("%q does not end a runtime run (completed, failed or cancelled)", c.Status)}
	}
	if r.life != nil {
		r.record.Lock()
		defer r.record.Unlock()
	}
	r.mu.Lock()
	if r.status != store.StatusRunning {
		defer r.mu.Unlock()
		if r.status == c.Status {
			return nil
		}
		return &RuntimeRunStateError{RunID: r.opts.RunID, Status: r.status, Op: "complete it as " + string(c.Status)}
	}
	if c.Cost != nil {
		r.usage = override(r.usage, *c.Cost)
	}
	r.status, r.completed, r.end = c.Status, r.now(), c
	r.meta = maps.Clone(c.Metadata)
	usage := r.usage
	rec := r.recordLocked(nil)
	r.mu.Unlock()
	defer r.stop(context.Canceled)
	if r.life == nil {
		return nil
	}
	l := r.life
	defer l.release()
	closing := canonjson.ObjectValue([]canonjson.Member{
		{Name: "kind", Value: str(LedgerRuntime)},
		{Name: "llmCalls", Value: canonjson.NumberValue(float64(rec.Cost.LLMCalls))},
		{Name: "status", Value: str(string(c.Status))},
		{Name: "usage", Value: UsageValue(usage)},
	})
	l.finishing()
	if err := l.appendClosing(closing, r.now()); err != nil && l.leaseLost() == nil {
		r.opts.logger().Warn("recording a runtime run's closing ledger entry", "run", r.opts.RunID, "err", err)
	}
	_, err := l.end(c.Status, func(lost *LeaseLostError) canonjson.Value {
		if lost != nil {
			rec.Status, rec.Error = store.StatusInterrupted, lost.Error()
			rec.Cost.Usage = Usage{usage.Floor()}
		}
		v, _ := canonjson.ToValue(rec)
		return v
	})
	if lost, ok := errors.AsType[*LeaseLostError](err); ok {
		r.mu.Lock()
		r.status = store.StatusInterrupted
		r.mu.Unlock()
		return &RunError{RunID: r.opts.RunID, Status: store.StatusInterrupted, Reason: ReasonLeaseLost, Detail: lost.Error(), Cause: lost}
	}
	if err != nil {
		// The end is unrecorded (a *RunError with ReasonStoreFailed): the
		// run reads interrupted once its lease lapses.
		r.mu.Lock()
		r.status = store.StatusInterrupted
		r.mu.Unlock()
	}
	return err
}

// override replaces each channel of u that c reports.
func override(u, c ledger.Usage) ledger.Usage {
	pick := func(a, b ledger.Amount[int64]) ledger.Amount[int64] {
		if b.Reported {
			return b
		}
		return a
	}
	u.InputTokens = pick(u.InputTokens, c.InputTokens)
	u.OutputTokens = pick(u.OutputTokens, c.OutputTokens)
	u.CacheReadTokens = pick(u.CacheReadTokens, c.CacheReadTokens)
	u.CacheWriteTokens = pick(u.CacheWriteTokens, c.CacheWriteTokens)
	u.ReasoningTokens = pick(u.ReasoningTokens, c.ReasoningTokens)
	if c.CostUSD.Reported {
		u.CostUSD = c.CostUSD
	}
	return u
}

// Row returns the run's record with meta merged over the completion's
// metadata.
func (r *RuntimeRun) Row(meta map[string]canonjson.Value) RuntimeRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recordLocked(meta)
}

func (r *RuntimeRun) recordLocked(meta map[string]canonjson.Value) RuntimeRecord {
	o := r.opts
	rec := RuntimeRecord{
		ID: o.RunID, WorkspaceID: o.WorkspaceID, SessionID: o.SessionID, AgentID: o.AgentID, Domain: o.Domain,
		TaskID: o.TaskID, ScenarioID: o.ScenarioID, Status: r.status, ResultSummary: r.end.ResultSummary,
		Error: r.end.Error, Cost: r.costLocked(), StartedAt: r.started.UTC().Format(time.RFC3339Nano),
	}
	if !r.completed.IsZero() {
		rec.CompletedAt = r.completed.UTC().Format(time.RFC3339Nano)
	}
	if len(r.meta)+len(meta) > 0 {
		rec.Metadata = maps.Clone(r.meta)
		if rec.Metadata == nil {
			rec.Metadata = make(map[string]canonjson.Value, len(meta))
		}
		maps.Copy(rec.Metadata, meta)
	}
	return rec
}

// Persist writes the ended run's record, with meta merged into its
// metadata (and kept for later rows), to the Store; without a Store it
// does nothing. Persisting a live run is a *RuntimeRunStateError. The
// write is bounded by ctx and by the cleanup timeout; a store that fails
// or does not answer within that is a *StoreError (Op "persist"). An
// ended run holds no lease to fence the write by, so it is fenced by the
// generation instead: a run another process has taken over since (a
// newer generation) is not this process's to write, and Persist returns
// the store's *FenceError (FenceSuperseded), changing nothing.
func (r *RuntimeRun) Persist(ctx context.Context, meta map[string]canonjson.Value) error {
	r.mu.Lock()
	if r.status == store.StatusRunning {
		defer r.mu.Unlock()
		return &RuntimeRunStateError{RunID: r.opts.RunID, Status: r.status, Op: "persist it before it is complete"}
	}
	if r.meta == nil && len(meta) > 0 {
		r.meta = make(map[string]canonjson.Value, len(meta))
	}
	maps.Copy(r.meta, meta)
	rec := r.recordLocked(nil)
	r.mu.Unlock()
	if r.life == nil {
		return nil
	}
	doc, err := canonjson.ToValue(rec)
	if err != nil {
		return fmt.Errorf("kernel: encoding runtime run %s: %w", r.opts.RunID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.life.cleanup)
	defer cancel()
	gen := r.life.fence.Generation
	_, err = r.opts.Store.UpdateRun(ctx, r.opts.RunID, func(run *store.Run) error {
		if run.Generation != gen {
			return &store.FenceError{RunID: run.ID, Generation: gen, Current: run.Generation, Reason: store.FenceSuperseded,
				Status: store.Effective(*run, time.Now()), LeaseUntil: run.LeaseUntil}
		}
		if run.Status != rec.Status {
			// The store says otherwise (the run was interrupted): keep
			// its status, record the metadata.
			old, derr := DecodeRuntimeRecord(run.Doc)
			if derr != nil {
				return derr
			}
			old.Metadata = rec.Metadata
			v, err := canonjson.ToValue(old)
			if err != nil {
				return err
			}
			run.Doc = v
			return nil
		}
		run.Doc = keepCancelRequest(run.Doc, doc)
		return nil
	})
	if err != nil {
		if !errors.Is(err, store.ErrFenced) && !errors.Is(err, store.ErrInvalid) {
			err = &StoreError{RunID: r.opts.RunID, Op: "persist", Err: err}
		}
		return fmt.Errorf("kernel: persisting runtime run %s: %w", r.opts.RunID, err)
	}
	return nil
}

func (o RuntimeRunOptions) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// base36 returns n uniformly random base-36 digits.
func base36(n int) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	out := make([]byte, 0, n)
	var b [16]byte
	for len(out) < n {
		rand.Read(b[:])
		for _, c := range b {
			// 252 is the largest multiple of 36 below 256: no bias.
			if c < 252 && len(out) < n {
				out = append(out, digits[c%36])
			}
		}
	}
	return string(out)
}
