package delegation

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/store"
)

// errStoreTimeout is the cause of a store call that outlived the queue's
// bound on it (Config.StoreTimeout): the store stopped answering.
var errStoreTimeout = errors.New("delegation: the store did not answer in time")

// StoreFailedError is the queue's first store failure: a store call
// that failed, or did not answer within Config.StoreTimeout. From then
// on the queue refuses new delegations (store-failed) and Close returns
// it: the queue must be restarted once the store answers again. What
// the store already holds stays as it is; a delegation that was running
// keeps its record, and the next queue resumes it.
type StoreFailedError struct {
	// Op is the store call that failed.
	Op  string
	Err error
}

func (e *StoreFailedError) Error() string {
	return fmt.Sprintf("delegation: the store failed (%s: %v); the queue refuses new delegations until it is restarted", e.Op, e.Err)
}

// Unwrap returns the store's error.
func (e *StoreFailedError) Unwrap() error { return e.Err }

// watchedStore is the queue's view of Config.Store: every call is
// bounded by Config.StoreTimeout, and the first one that fails is
// recorded as the queue's store failure (Queue.Failure).
type watchedStore struct {
	store.Store
	q *Queue
}

// call bounds ctx for one store call.
func (w watchedStore) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, w.q.cfg.StoreTimeout, errStoreTimeout)
}

// observe records err as the queue's failure when it says the store
// failed, not that the record is missing, exists, changed meanwhile or
// was refused, nor that the caller gave up.
func (w watchedStore) observe(ctx context.Context, op string, err error) error {
	switch {
	case err == nil,
		errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrExists), errors.Is(err, store.ErrConflict),
		errors.Is(err, store.ErrTerminal), errors.Is(err, store.ErrFenced), errors.Is(err, errUnchanged),
		errors.Is(err, errNotClaimable), errors.Is(err, errLost):
		return err
	}
	if _, ok := errors.AsType[*Refusal](err); ok {
		return err
	}
	if _, ok := errors.AsType[*CorruptRecordError](err); ok {
		return err
	}
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errStoreTimeout) {
		return err // the caller's context ended: not the store's failure
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("%w: %w", errStoreTimeout, err)
	}
	w.q.fail(&StoreFailedError{Op: op, Err: err})
	return err
}

func (w watchedStore) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	ctx, cancel := w.call(ctx)
	defer cancel()
	out, err := w.Store.CreateRun(ctx, r)
	return out, w.observe(ctx, "create", err)
}

func (w watchedStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	ctx, cancel := w.call(ctx)
	defer cancel()
	out, err := w.Store.GetRun(ctx, id)
	return out, w.observe(ctx, "get", err)
}

func (w watchedStore) UpdateRun(ctx context.Context, id string, fn func(*store.Run) error) (store.Run, error) {
	ctx, cancel := w.call(ctx)
	defer cancel()
	out, err := w.Store.UpdateRun(ctx, id, fn)
	return out, w.observe(ctx, "update", err)
}

func (w watchedStore) ListRuns(ctx context.Context, o store.ListOptions) ([]store.Run, error) {
	ctx, cancel := w.call(ctx)
	defer cancel()
	out, err := w.Store.ListRuns(ctx, o)
	return out, w.observe(ctx, "list", err)
}

func (w watchedStore) ClaimIdempotency(ctx context.Context, rec store.Idempotency) (store.Idempotency, bool, error) {
	ctx, cancel := w.call(ctx)
	defer cancel()
	out, created, err := w.Store.ClaimIdempotency(ctx, rec)
	return out, created, w.observe(ctx, "claim idempotency key", err)
}

func (w watchedStore) DeleteRun(ctx context.Context, id string) error {
	ctx, cancel := w.call(ctx)
	defer cancel()
	return w.observe(ctx, "delete", w.Store.DeleteRun(ctx, id))
}
