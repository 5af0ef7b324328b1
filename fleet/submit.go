package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// RunArgs is the River job of a fleet run: the run id and the digest of
// its admitted request. The request itself is in the run's record.
type RunArgs struct {
	RunID      string `json:"run_id"`
	SpecDigest string `json:"spec_digest"`
}

// Kind implements river.JobArgs.
func (RunArgs) Kind() string { return "agentrt.run" }

// Submission is a run to submit.
type Submission struct {
	Spec Spec
	// IdempotencyKey, when set, makes the submission idempotent: the
	// same key with the same Spec returns the run it first submitted; with
	// another Spec it is a *ConflictError.
	IdempotencyKey string
	// RunID names the run; "" makes one up. A keyed retry returns the id
	// the key first recorded.
	RunID string
	// TraceParent, when set, is the W3C traceparent of the span the run
	// belongs to (TraceParent of the submitter's context: fleet.Executor
	// gives its supervise node's), recorded with the run so that every
	// attempt's spans, whichever worker executes them, are that span's
	// children in its trace. It is not part of the Spec: a keyed retry
	// from a resumed submitter, whose span differs, is no conflict, and
	// the first recorded stays. An invalid one is refused (ErrInvalid).
	TraceParent string
}

// Submitted is what Submit did.
type Submitted struct {
	RunID string
	// Replayed reports that the idempotency key had already submitted
	// this run (nothing new was recorded).
	Replayed bool
	// JobID is the River job's id.
	JobID int64
}

// Submit records a pending fleet run and enqueues its job; it returns
// at once with the run's id. A retry with the same idempotency key
// returns the same run, and never enqueues a second job (River unique
// jobs by arguments), even when the first try died between recording
// the run and enqueueing it.
func (f *Fleet) Submit(ctx context.Context, sub Submission) (Submitted, error) {
	_, digest, err := sub.Spec.check()
	if err != nil {
		return Submitted{}, fmt.Errorf("fleet: submit: %w", err)
	}
	if sub.TraceParent != "" {
		if _, err := parseTraceParent(sub.TraceParent); err != nil {
			return Submitted{}, fmt.Errorf("fleet: submit: %w", err)
		}
	}
	runID := sub.RunID
	if runID == "" {
		runID = kernel.NewID("run")
	}
	out := Submitted{RunID: runID}
	if sub.IdempotencyKey != "" {
		rec := store.Idempotency{Scope: IdempotencyScope, Key: sub.IdempotencyKey, RequestDigest: digest,
			Result: canonjson.ObjectValue([]canonjson.Member{{Name: "runId", Value: canonjson.StringValue(runID)}}), CreatedAt: f.now()}
		got, created, err := f.store.ClaimIdempotency(ctx, rec)
		if err != nil {
			return Submitted{}, fmt.Errorf("fleet: submit: %w", err)
		}
		if !created {
			v, _ := got.Result.Get("runId")
			if got.RequestDigest != digest {
				return Submitted{}, &ConflictError{Key: sub.IdempotencyKey, RunID: v.Str(), Digest: got.RequestDigest, Got: digest}
			}
			out.RunID, out.Replayed = v.Str(), true
		}
	}
	spec, err := canonjson.ToValue(sub.Spec)
	if err != nil {
		return Submitted{}, fmt.Errorf("fleet: submit: %w", err)
	}
	members := []canonjson.Member{
		{Name: docSpec, Value: spec},
		{Name: docSpecDigest, Value: canonjson.StringValue(digest)},
	}
	if sub.IdempotencyKey != "" {
		members = append(members, canonjson.Member{Name: docKey, Value: canonjson.StringValue(sub.IdempotencyKey)})
	}
	if sub.TraceParent != "" {
		members = append(members, canonjson.Member{Name: docTrace, Value: canonjson.StringValue(sub.TraceParent)})
	}
	doc := canonjson.ObjectValue(members)
	_, err = f.store.CreateRun(ctx, store.Run{ID: out.RunID, Kind: Kind, Status: store.StatusPending, Doc: doc})
	switch {
	case errors.Is(err, store.ErrExists):
		// A replay finds the run its first try recorded, and enqueues it
		// again below (unique); a run of that id that another submission
		// recorded is never taken over — nor its key left bound to it.
		if serr := f.sameSubmission(ctx, out.RunID, sub.IdempotencyKey, digest); serr != nil {
			if sub.IdempotencyKey != "" && !out.Replayed {
				f.releaseKey(ctx, sub.IdempotencyKey)
			}
			return Submitted{}, fmt.Errorf("fleet: submit: run %s: %w", out.RunID, serr)
		}
		if !out.Replayed {
			return Submitted{}, fmt.Errorf("fleet: submit: run %s: %w", out.RunID, err)
		}
	case err != nil:
		return Submitted{}, fmt.Errorf("fleet: submit: %w", err)
	}
	res, err := f.river.Insert(ctx, RunArgs{RunID: out.RunID, SpecDigest: digest}, &river.InsertOpts{
		Queue:       sub.Spec.Provider,
		MaxAttempts: MaxJobAttempts,
		UniqueOpts:  river.UniqueOpts{ByArgs: true},
	})
	if undefinedTable(err) {
		err = &NotMigratedError{Schema: f.schema, Err: err}
		if sub.IdempotencyKey == "" {
			// Nothing will retry this run: it ends here, saying why, rather
			// than waiting pending for a job that does not exist. (A keyed
			// submission stays pending: its retry enqueues it.)
			f.abandon(ctx, out.RunID, err)
		}
		return Submitted{}, fmt.Errorf("fleet: submit: enqueueing run %s: %w", out.RunID, err)
	}
	if err != nil {
		if sub.IdempotencyKey == "" {
			// Nothing retries an unkeyed submission: a run left pending
			// without its job would wait forever, and the caller's retry
			// makes another. It ends failed, saying why (a job inserted
			// though its answer was lost finds it ended and runs nothing).
			f.abandon(ctx, out.RunID, err)
		}
		return Submitted{}, fmt.Errorf("fleet: submit: enqueueing run %s: %w", out.RunID, err)
	}
	out.JobID = res.Job.ID
	f.log.Info("run submitted", "run", out.RunID, "job", out.JobID, "queue", sub.Spec.Provider, "replayed", out.Replayed, "duplicate_job", res.UniqueSkippedAsDuplicate)
	return out, nil
}

// sameSubmission checks that the recorded fleet run runID is the
// submission of key (none: "") and spec digest: nil when it is, else an
// error matching store.ErrExists naming what differs.
func (f *Fleet) sameSubmission(ctx context.Context, runID, key, digest string) error {
	r, err := f.store.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	k, _ := r.Doc.Get(docKey)
	d, _ := r.Doc.Get(docSpecDigest)
	if r.Kind != Kind || k.Str() != key || d.Str() != digest {
		return fmt.Errorf("%w: it is another submission's (key %q, spec %s)", store.ErrExists, k.Str(), d.Str())
	}
	return nil
}

// releaseKey removes the idempotency record a submission claimed and
// could not use, so the key is not left bound to another's run.
func (f *Fleet) releaseKey(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := f.store.DeleteIdempotency(ctx, []store.IdempotencyKey{{Scope: IdempotencyScope, Key: key}}); err != nil {
		f.log.Warn("could not release an idempotency key bound to another submission's run", "key", key, "err", err)
	}
}

// Cancel asks for a fleet run to end cancelled: a pending run ends at
// once; a running one's worker is asked to cancel its attempt (the
// request is recorded in the run, so it holds across takeovers). The
// effect is the kernel's cancel vocabulary.
func (f *Fleet) Cancel(ctx context.Context, runID, reason string) (kernel.Effect, error) {
	return CancelRun(ctx, f.store, runID, reason, f.now())
}

// CancelRun is Fleet.Cancel for a caller that holds only the run store
// (a CLI that shares the fleet's database but runs no River client): it
// needs nothing from River, since a worker that later receives the job of
// a run that ended completes it as a no-op. A run of another kind is
// refused with ErrNotFleetRun.
func CancelRun(ctx context.Context, st store.Store, runID, reason string, now time.Time) (kernel.Effect, error) {
	var ended store.Status
	r, err := st.UpdateRun(ctx, runID, func(r *store.Run) error {
		ended = ""
		if r.Kind != Kind {
			return ErrNotFleetRun
		}
		if r.Status == store.StatusPending {
			r.Status = store.StatusCancelled
			v, err := canonjson.ToValue(Outcome{Status: string(store.StatusCancelled), Error: "cancelled before a worker ran it: " + reason})
			if err != nil {
				return err
			}
			r.Doc = r.Doc.With(docOutcome, v)
			ended = store.StatusCancelled
		}
		return nil
	})
	if err != nil {
		return kernel.EffectUnknown, fmt.Errorf("fleet: cancel %s: %w", runID, err)
	}
	if ended != "" {
		return kernel.EffectCancelled, nil
	}
	effect, _, err := kernel.RequestCancel(ctx, st, runID, reason, now)
	if err != nil || effect != kernel.EffectCancelRequested {
		return effect, err
	}
	attempts, err := attemptsOf(r)
	if err == nil && len(attempts) > 0 {
		// Best effort: the worker forwards the request too.
		kernel.RequestCancel(ctx, st, attempts[len(attempts)-1].RunID, reason, now)
	}
	return effect, nil
}

// undefinedTable reports whether err is PostgreSQL's answer to a query
// on a table or schema that does not exist: River's, not migrated.
func undefinedTable(err error) bool {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	return ok && (pe.Code == "42P01" || pe.Code == "3F000")
}

// abandon ends a pending run that could not be enqueued as failed, with
// why; best effort (the caller reports the first error).
func (f *Fleet) abandon(ctx context.Context, runID string, why error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := f.store.UpdateRun(ctx, runID, func(r *store.Run) error {
		if r.Status != store.StatusPending {
			return nil
		}
		v, err := canonjson.ToValue(Outcome{Status: string(store.StatusFailed), Error: "its job could not be enqueued: " + why.Error()})
		if err != nil {
			return err
		}
		r.Status, r.Doc = store.StatusFailed, r.Doc.With(docOutcome, v)
		return nil
	})
	if err != nil {
		f.log.Warn("could not end a run that was never enqueued", "run", runID, "err", err)
	}
}
