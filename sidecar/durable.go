package sidecar

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/store"
)

// durableKind is one kind of operation the server runs at most once per
// key across restarts: the store scopes of its key's intent, of each
// attempt and of each attempt's outcome, and the noun its errors use.
type durableKind struct {
	intent, attempt, outcome, noun string
}

// The kinds of durable operation. Their scopes are stable: a server
// reads the records an older one wrote.
var (
	kindCreate = durableKind{intent: "sidecar.create", attempt: "sidecar.create.attempt", outcome: "sidecar.create.outcome", noun: "create"}
	kindSpawn  = durableKind{intent: "sidecar.exact.spawn", attempt: "sidecar.exact.spawn.attempt", outcome: "sidecar.exact.spawn.outcome", noun: "spawn"}
)

// maxAttempts bounds the failed attempts one key may have.
const maxAttempts = 16

// outcomeRecord is the stored outcome of one attempt: exactly one member
// is set.
type outcomeRecord struct {
	Environment *wire.Environment `json:"environment,omitzero"`
	Process     *spawnedProcess   `json:"process,omitzero"`
	Failed      *string           `json:"failed,omitzero"`
	InDoubt     *bool             `json:"inDoubt,omitzero"`
}

// spawnedProcess is what a spawn attempt records: the pid it started.
type spawnedProcess struct {
	PID int64 `json:"pid"`
}

// errStoreFailed: a call to the server's store failed or did not answer
// within its bound (Options.CallTimeout). Nothing was answered from the
// store; the client may retry with the same key once it answers, and is
// then replayed, never given a second environment or process.
var errStoreFailed = errors.New("the server's store failed or did not answer in time; retry with the same key once it answers")

// storeCall bounds one store call of a durable operation by bound, even
// when ctx has no deadline (or was detached from the client's), and
// marks its failure errStoreFailed.
func storeCall[T any](ctx context.Context, bound time.Duration, call func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	v, err := call(ctx)
	if err != nil && !errors.Is(err, store.ErrInvalid) {
		err = fmt.Errorf("%w: %w", errStoreFailed, err)
	}
	return v, err
}

// claimed is ClaimIdempotency's answer.
type claimed struct {
	rec     store.Idempotency
	created bool
}

// claimKey is ClaimIdempotency bounded by storeCall.
func claimKey(ctx context.Context, st store.Store, bound time.Duration, rec store.Idempotency) (claimed, error) {
	return storeCall(ctx, bound, func(ctx context.Context) (claimed, error) {
		got, created, err := st.ClaimIdempotency(ctx, rec)
		return claimed{got, created}, err
	})
}

// errOutcomeUnknown: an earlier attempt under the key started and its
// outcome is unknown (its server died mid-way); it is not run again.
var errOutcomeUnknown = errors.New("an earlier attempt with this key started and its outcome is unknown")

// runOnce runs op at most once for key across every server sharing st.
// Each store call is bounded by bound (a store that stops answering gets
// an errStoreFailed, never a hung request).
// The key's intent record refuses another digest before any effect
// (contract.ErrIdempotencyConflict, wrapped by the caller's check); each
// attempt is claimed before op runs and its outcome recorded after, so a
// later call — also on a restarted server — replays a recorded success
// (replayed true), tries again after a recorded failure, and answers
// errOutcomeUnknown for an attempt that started and recorded nothing.
// An attempt another server declared in doubt before op's success was
// recorded is undone (undo gets op's record) and answered
// errOutcomeUnknown: what it made is handed to nobody, so it must not
// live on.
func runOnce(ctx context.Context, st store.Store, bound time.Duration, kind durableKind, key, digest string,
	op func(ctx context.Context) (outcomeRecord, error), undo func(outcomeRecord)) (rec outcomeRecord, replayed bool, err error) {
	intent, err := claimKey(ctx, st, bound, store.Idempotency{Scope: kind.intent, Key: key, RequestDigest: digest})
	if err != nil {
		return outcomeRecord{}, false, fmt.Errorf("recording the %s: %w", kind.noun, err)
	}
	if intent.rec.RequestDigest != digest {
		return outcomeRecord{}, false, errDigestConflict
	}
	for n := 1; n <= maxAttempts; n++ {
		ak := attemptKey(key, n)
		attempt, err := claimKey(ctx, st, bound, store.Idempotency{Scope: kind.attempt, Key: ak, RequestDigest: digest})
		if err != nil {
			return outcomeRecord{}, false, fmt.Errorf("recording the %s: %w", kind.noun, err)
		}
		if attempt.created {
			rec, err := attemptOnce(ctx, st, bound, kind, ak, digest, op, undo)
			return rec, false, err
		}
		// Someone made attempt n: its outcome decides. An attempt with no
		// outcome is in doubt, and is recorded so from now on.
		got, err := claimOutcome(ctx, st, bound, kind, ak, digest, outcomeRecord{InDoubt: ptr(true)})
		if err != nil {
			return outcomeRecord{}, false, err
		}
		switch {
		case got.Failed != nil:
			continue
		case got.InDoubt != nil:
			return outcomeRecord{}, false, errOutcomeUnknown
		default:
			return got, true, nil
		}
	}
	return outcomeRecord{}, false, fmt.Errorf("%d %s attempts with key %q failed", maxAttempts, kind.noun, key)
}

// attemptKey is the store key of attempt n of the operation keyed key.
func attemptKey(key string, n int) string { return key + "#" + strconv.Itoa(n) }

// errDigestConflict: the key's intent holds another request digest.
var errDigestConflict = errors.New("the key names a different request")

// attemptOnce runs op as attempt attemptKey and records its outcome,
// even when the client went away (each record bounded by bound). A claim
// of the outcome that failed or went unanswered may have landed: the
// store is asked once more before what op made is undone, so that an
// outcome it did record is answered, not destroyed.
func attemptOnce(ctx context.Context, st store.Store, bound time.Duration, kind durableKind, attemptKey, digest string,
	op func(ctx context.Context) (outcomeRecord, error), undo func(outcomeRecord)) (outcomeRecord, error) {
	mine, err := op(ctx)
	detached := context.WithoutCancel(ctx)
	if err != nil {
		msg := err.Error()
		if _, rerr := claimOutcome(detached, st, bound, kind, attemptKey, digest, outcomeRecord{Failed: &msg}); rerr != nil {
			return outcomeRecord{}, errors.Join(err, rerr)
		}
		return outcomeRecord{}, err
	}
	got, err := claimOutcome(detached, st, bound, kind, attemptKey, digest, mine)
	if err != nil {
		// The claim failed or did not answer in time, and may have landed
		// all the same: a retry would then replay what op made. Ask once
		// more: claiming the attempt in doubt reads the outcome recorded,
		// or records that nobody is handed it.
		got, err = claimOutcome(detached, st, bound, kind, attemptKey, digest, outcomeRecord{InDoubt: ptr(true)})
		if err != nil {
			// The store cannot say whether op's outcome was recorded: what
			// op made is undone, handed to nobody. Should the claim have
			// landed after all, a retry replays it and learns its state
			// (an environment's is unknown): a truthful answer, where a
			// resource kept for an outcome nobody can read would be paid
			// for by nobody's decision.
			undo(mine)
			return outcomeRecord{}, err
		}
	}
	if sameOutcome(got, mine) {
		return mine, nil
	}
	// Another server declared this attempt in doubt first, or this one
	// did once its own claim went unanswered: what op made is handed out
	// to nobody.
	undo(mine)
	return outcomeRecord{}, errOutcomeUnknown
}

// sameOutcome reports whether two records are the same canonical value.
func sameOutcome(a, b outcomeRecord) bool {
	va, errA := canonjson.ToValue(a)
	vb, errB := canonjson.ToValue(b)
	return errA == nil && errB == nil && canonjson.Equal(va, vb)
}

// claimOutcome records rec as the outcome of attemptKey unless one is
// recorded, and returns the recorded one.
func claimOutcome(ctx context.Context, st store.Store, bound time.Duration, kind durableKind, attemptKey, digest string, rec outcomeRecord) (outcomeRecord, error) {
	v, err := canonjson.ToValue(rec)
	if err != nil {
		return outcomeRecord{}, err
	}
	got, err := claimKey(ctx, st, bound, store.Idempotency{Scope: kind.outcome, Key: attemptKey, RequestDigest: digest, Result: v})
	if err != nil {
		return outcomeRecord{}, fmt.Errorf("recording the %s outcome: %w", kind.noun, err)
	}
	var out outcomeRecord
	if err := canonjson.FromValue(got.rec.Result, &out); err != nil {
		return outcomeRecord{}, fmt.Errorf("reading the %s outcome: %w", kind.noun, err)
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }
