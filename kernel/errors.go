package kernel

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/store"
)

// Reasons a run did not complete. RunError.Reason holds one of them.
const (
	// ReasonRefused: the run was refused before any spend (the provider
	// cannot honor the profile, the seat stage does not exist, the budget
	// has no room).
	ReasonRefused = "refused"
	// ReasonInBandError: the provider's stream reported a failure.
	ReasonInBandError = "in-band-error"
	// ReasonNoTerminal: the stream ended without a terminal event.
	ReasonNoTerminal = "no-terminal-event"
	// ReasonTransport: the stream broke.
	ReasonTransport = "transport"
	// ReasonModelMismatch: the platform served another model than the
	// profile requested.
	ReasonModelMismatch = "served-model-mismatch"
	// ReasonProvider: the provider failed to create the environment.
	ReasonProvider = "provider"
	// ReasonCancelled: the caller cancelled.
	ReasonCancelled = "cancelled"
	// ReasonTimedOut: the caller's deadline passed.
	ReasonTimedOut = "timed-out"
	// ReasonInvalidCost: the caller's pricing function returned a cost
	// that is not a finite non-negative number.
	ReasonInvalidCost = "invalid-cost"
	// ReasonDriver: a rounds driver failed (Plan, Decide or a selector
	// returned an error) or decided that the work failed.
	ReasonDriver = "driver"
	// ReasonLeaseLost: this process lost the run's lease (it was paused
	// or cut off from the store past the lease, or another holder took
	// the run over). Readers see the run interrupted; the store refused
	// what this process would have recorded after the loss.
	ReasonLeaseLost = "lease-lost"
	// ReasonPanic: the work panicked (the panic went on; the record says
	// so rather than staying running).
	ReasonPanic = "panic"
	// ReasonStoreFailed: the run's store failed or did not answer in time
	// (a *StoreError is the cause). A run whose record write failed
	// mid-run is failed — it cannot go on unrecorded; one whose terminal
	// write failed is interrupted: its lease is no longer renewed, so
	// readers see it interrupted once the lease lapses (or, if the write
	// landed after all, the terminal state it recorded).
	ReasonStoreFailed = "store-failed"
	// ReasonEnvironmentGone: a re-attached turn that was only to be
	// settled (Reattach.Settle) cannot be: its environment was destroyed,
	// and the turn's end with it is unknown.
	ReasonEnvironmentGone = "environment-gone"
	// ReasonCancelledWithHolder: a re-attached turn that was only to be
	// settled (Reattach.Settle) had ended cancelled though nobody asked
	// this run to stop: it was cut with its previous holder, or its
	// server abandoned it unread. Its work was never done and is not run
	// again.
	ReasonCancelledWithHolder = "cancelled-with-holder"
)

// StoreError is a store call a run depends on that failed or did not
// answer within its bound: recording the run (Op "create", bounded by
// the lease: a record that lands later would read interrupted at once),
// an event, its document or ledger mid-run (Op "record", bounded by the
// lease as last renewed when the write began: a write that lands later
// would land after the lease lapsed), its terminal state (Op "end",
// bounded by the cleanup timeout), or a runtime run's record after its
// end (Op "persist", RuntimeRun.Persist, bounded by the cleanup
// timeout). The run's front door returns it (for "create": nothing else
// was done) or a *RunError caused by it. Package retained returns it
// too, for every store call of a retained run (bounded by 30 s).
type StoreError struct {
	RunID string
	// Op names the call: "create", "record", "end", "persist"; "read"
	// for reading the run (ResumeSeated, a retained run's record);
	// "cancel" for binding a retained run's cancel operation.
	Op  string
	Err error
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("kernel: the store failed or did not answer for run %s (%s): %v; it must answer again before the run can be read or run again", e.RunID, e.Op, e.Err)
}

// Unwrap returns the store's error.
func (e *StoreError) Unwrap() error { return e.Err }

// ErrRefused matches a RunError whose run was refused before any spend.
var ErrRefused = errors.New("kernel: run refused before dispatch")

// RunError is the error of a run that did not complete: its terminal
// status (failed, cancelled, timed out or interrupted — never
// conflated), the reason, and the underlying cause. The run record holds
// the same facts.
type RunError struct {
	RunID  string
	Status store.Status
	Reason string
	Detail string
	Cause  error
}

func (e *RunError) Error() string {
	msg := "run"
	if e.RunID != "" {
		msg += " " + e.RunID
	}
	msg += fmt.Sprintf(" %s (%s)", e.Status, e.Reason)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the cause, and ErrRefused for refusals.
func (e *RunError) Unwrap() []error {
	errs := []error{}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	if e.Reason == ReasonRefused {
		errs = append(errs, ErrRefused)
	}
	return errs
}

// contextError is the error of work whose context ended: timed out when
// its deadline passed, cancelled otherwise (naming the RequestCancel that
// caused it, if one did). It is nil while ctx is live.
func contextError(ctx context.Context, runID string) *RunError {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &RunError{RunID: runID, Status: store.StatusTimedOut, Reason: ReasonTimedOut, Detail: "the caller's deadline passed", Cause: ctx.Err()}
	case ctx.Err() != nil:
		detail, cause := "the caller cancelled", context.Cause(ctx)
		if requested, ok := errors.AsType[*CancelRequestedError](cause); ok {
			detail = requested.Error()
		}
		return &RunError{RunID: runID, Status: store.StatusCancelled, Reason: ReasonCancelled, Detail: detail, Cause: cause}
	}
	return nil
}
