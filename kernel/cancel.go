package kernel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

// cancelMember is the run-document member a cancel request writes.
const cancelMember = "cancelRequested"

// leaseWatch bounds how often a live run looks for a cancel request.
const leaseWatch = 500 * time.Millisecond

var errRunEnded = errors.New("kernel: the run already ended")

// ErrNotKernelRun is matched (errors.Is) by the *ForeignKindError of a
// cancel request for a run another package owns.
var ErrNotKernelRun = errors.New("kernel: the run is not cancelled through the kernel")

// foreignKinds are the run kinds other packages own, each with its own
// cancel path; the kernel cannot import them (layer rule), so the kinds
// are spelled here and a test pins them to their owners' constants. Any
// other kind is a run the kernel's lifecycle drives (execute, tool-loop,
// rounds, runtime, seated, or a caller-chosen kind of Execute/RunToolLoop)
// or a fleet run, whose worker forwards the recorded request.
var foreignKinds = map[string]string{
	"retained":          "a retained run is owned by its provider: agentrt runs cancel RUN --provider …",
	"delegation":        "cancel a delegation through its queue (delegation.Queue.Cancel, or the manager's delegation cancel tool)",
	"supervise-journal": "cancel a supervised run through its run directory: agentrt supervise cancel RUN-DIR --operation-id ID, or agentrt top",
}

// ForeignKindError is RequestCancel's refusal of a run whose kind the
// kernel does not cancel. It matches ErrNotKernelRun.
type ForeignKindError struct {
	RunID string
	Kind  string
	// Use says how runs of this kind are cancelled.
	Use string
}

func (e *ForeignKindError) Error() string {
	return fmt.Sprintf("kernel: run %s is a %s run, which the kernel does not cancel (it cancels execute, tool-loop, rounds, runtime, seated and fleet runs); %s", e.RunID, e.Kind, e.Use)
}

// Is reports whether target is ErrNotKernelRun.
func (e *ForeignKindError) Is(target error) bool { return target == ErrNotKernelRun }

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
	// EffectUnknown: whether the cancel took effect is not known (the
	// request could not be recorded, or its outcome was not observed).
	// It is never reported as a success.
	EffectUnknown Effect = "unknown"
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
// is harmless. It never changes a run that has ended, and it refuses
// (*ForeignKindError, errors.Is ErrNotKernelRun; effect unknown) a run of
// a kind another package owns, leaving its record unchanged.
func RequestCancel(ctx context.Context, s store.Store, runID, reason string, now time.Time) (Effect, store.Run, error) {
	var ended store.Run
	r, err := s.UpdateRun(ctx, runID, func(r *store.Run) error {
		if use, ok := foreignKinds[r.Kind]; ok {
			return &ForeignKindError{RunID: r.ID, Kind: r.Kind, Use: use}
		}
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
	case errors.Is(err, ErrNotKernelRun):
		return EffectUnknown, r, err
	case errors.Is(err, errRunEnded):
		if ended.Status == store.StatusCancelled {
			return EffectCancelled, ended, nil
		}
		return EffectNotLive, ended, nil
	case err != nil:
		return EffectUnknown, r, fmt.Errorf("kernel: requesting cancellation of run %s: %w", runID, err)
	}
	return EffectCancelRequested, r, nil
}
