package retained

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/boundediter"
	"github.com/agentrt/agentrt/store"
)

// Run is the handle of one retained run: a client of the provider's
// session bound to the run's exact control reference. It holds no state
// the run needs; dropping it loses nothing, and ReconnectRetainedRun
// builds an equal one in any process.
type Run struct {
	ref      ControlRef
	provider contract.Provider
	env      contract.Environment
	session  contract.Session
	store    store.Store
	now      func() time.Time
	log      *slog.Logger
}

// ControlRef returns the run's claim ticket.
func (r *Run) ControlRef() ControlRef { return r.ref }

// Capabilities returns the capability document that governs the run: the
// environment's own, else the provider's.
func (r *Run) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	if c := r.env.Capabilities(); c != nil {
		return c, nil
	}
	return r.provider.Capabilities(ctx)
}

// attach opens the session of ref in env and checks it is bound to
// exactly that run.
//
// When the session reports the run's native session and the record
// (recorded: what it holds) does not name it yet, it is bound to the
// record (NSO-02); a store that cannot record it now is logged, and the
// next attach binds it.
func attach(ctx context.Context, p contract.Provider, s store.Store, env contract.Environment, ref ControlRef, recorded *NativeRecord, now func() time.Time, log *slog.Logger) (*Run, error) {
	opener, ok := env.(contract.SessionOpener)
	if !ok {
		return nil, fmt.Errorf("%w: environment %s cannot reopen sessions", ErrNotRetainable, env.ID())
	}
	want := ref.Run.Ref()
	sess, err := opener.Session(ctx, ref.Run.SessionID, &want)
	if err != nil {
		return nil, fmt.Errorf("retained: reopening session %s of run %s: %w", ref.Run.SessionID, ref.Run.RunID, err)
	}
	got := sess.ControlRef()
	if got == nil || !contract.SameRunControlRef(*got, want) {
		return nil, mismatch("reopened session's control reference", want, got)
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Run{ref: ref, provider: p, env: env, session: sess, store: s, now: now, log: log}
	if err := r.bindNative(ctx, recorded); err != nil {
		log.WarnContext(ctx, "retained: could not record the run's native session", "run", ref.Record, "error", err)
	}
	return r, nil
}

// bindNative records the native session the run's session reports, when
// recorded does not name it already (NSO-02).
func (r *Run) bindNative(ctx context.Context, recorded *NativeRecord) error {
	nr, ok := r.session.(contract.NativeSessionReporter)
	if !ok {
		return nil
	}
	obs, ok, err := nr.ObservedNativeSession(ctx)
	if err != nil || !ok || obs == nil {
		return err
	}
	// The provider's word is checked as strictly as its event would be.
	if _, err := contract.NewNativeSessionObserved(obs.Provider, obs.NativeSessionID); err != nil {
		return fmt.Errorf("the provider reported a malformed native session: %w", err)
	}
	want := NativeRecord{ExecutionID: r.ref.Run.ExecutionID, Provider: obs.Provider, NativeSessionID: obs.NativeSessionID}
	if recorded != nil && *recorded == want {
		return nil
	}
	return updateDocument(ctx, r.store, r.ref.Record, func(d *document, _ *store.Run) error {
		d.Native = &want
		return nil
	})
}

// Snapshot is a run's status as observed at one moment.
type Snapshot struct {
	// RunID is the run-store record id.
	RunID      string
	ControlRef contract.ExactRunControlRef
	// Status is nil when the provider cannot say (unknown is never a
	// guess).
	Status     *contract.SessionStatus
	ObservedAt time.Time
	// Effect is contract.EffectNotLive once the status is terminal (the
	// run can no longer change) and contract.EffectUnknown otherwise.
	Effect string
	// Reason says why Status is nil, when it is.
	Reason string
}

// Terminal reports whether the snapshot shows a run that can no longer
// change.
func (s Snapshot) Terminal() bool { return s.Status != nil && s.Status.Terminal() }

// Bounds of StatusWait.
const (
	// MaxStatusWait bounds one StatusWait long-poll.
	MaxStatusWait = 5 * time.Minute
	// StatusPollInterval is how often StatusWait asks the provider again.
	StatusPollInterval = 25 * time.Millisecond
)

// Status observes the run's status once. A terminal status is also
// written to the run record, so store readers see how the run ended;
// when the store fails or does not answer within 30 s, the snapshot is
// returned with a *kernel.StoreError (Op "end"): the status is true, its
// record is not made.
func (r *Run) Status(ctx context.Context) (Snapshot, error) {
	return r.StatusWait(ctx, 0)
}

// StatusWait is the handle's status({waitMs}) (spec runtime §3.8): a
// bounded long-poll. It observes the run and, while the status is not
// terminal, asks the provider again every StatusPollInterval until it is
// or wait has passed, and returns the last snapshot: a live run after
// the wait is an answer, not an error. An unknown status is not terminal
// (asking again is the point), and stays unknown (Status nil) if the
// wait ends on it. wait 0 is one observation; a negative wait or one over
// MaxStatusWait is refused (ErrInvalidOptions) before the provider is
// asked. ctx ending stops the wait with ctx's error; a provider call that
// fails ends it with that error.
func (r *Run) StatusWait(ctx context.Context, wait time.Duration) (Snapshot, error) {
	if wait < 0 || wait > MaxStatusWait {
		return Snapshot{}, fmt.Errorf("%w: a status wait of %v is outside 0..%v", ErrInvalidOptions, wait, MaxStatusWait)
	}
	deadline := time.Now().Add(wait)
	tick := time.NewTimer(0)
	defer tick.Stop()
	for {
		snap, err := r.observe(ctx)
		if err != nil || snap.Terminal() {
			return snap, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return snap, nil
		}
		tick.Reset(min(StatusPollInterval, left))
		select {
		case <-ctx.Done():
			return snap, fmt.Errorf("retained: waiting for the status of run %s: %w", r.ref.Run.RunID, ctx.Err())
		case <-tick.C:
		}
	}
}

// observe asks the provider for the run's status once.
func (r *Run) observe(ctx context.Context) (Snapshot, error) {
	return r.observeWithin(ctx, storeTimeout)
}

// observeWithin is observe whose record of a terminal status is bounded
// by bound.
func (r *Run) observeWithin(ctx context.Context, bound time.Duration) (Snapshot, error) {
	snap := Snapshot{RunID: r.ref.Record, ControlRef: r.ref.Run, Effect: contract.EffectUnknown}
	st, ok, err := r.session.Status(ctx)
	snap.ObservedAt = r.now()
	if err != nil {
		return snap, fmt.Errorf("retained: status of run %s: %w", r.ref.Run.RunID, err)
	}
	if !ok || st == contract.SessionUnknown {
		snap.Reason = "the provider does not know the run's status"
		return snap, nil
	}
	snap.Status = &st
	if st.Terminal() {
		snap.Effect = contract.EffectNotLive
	}
	return snap, r.settleWithin(ctx, st, bound)
}

// settle writes a terminal session status to the run record, once,
// within storeTimeout: a store that fails or does not answer is a
// *kernel.StoreError.
func (r *Run) settle(ctx context.Context, st contract.SessionStatus) error {
	return r.settleWithin(ctx, st, storeTimeout)
}

// settleWithin is settle bounded by bound.
func (r *Run) settleWithin(ctx context.Context, st contract.SessionStatus, bound time.Duration) error {
	var final store.Status
	switch st {
	case contract.SessionCompleted:
		final = store.StatusCompleted
	case contract.SessionFailed:
		final = store.StatusFailed
	case contract.SessionCancelled:
		final = store.StatusCancelled
	default:
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	_, err := r.store.UpdateRun(cctx, r.ref.Record, func(run *store.Run) error {
		if run.Status.Terminal() {
			return errSettled
		}
		run.Status = final
		return nil
	})
	if err == nil || errors.Is(err, errSettled) {
		return nil
	}
	r.log.WarnContext(ctx, "retained: could not record the run's end", "run", r.ref.Record, "status", final, "error", err)
	return storeFailure(ctx, r.ref.Record, "end", err)
}

var errSettled = errors.New("already settled")

// Cursor is an exclusive replay position: the id and sequence of the last
// event the caller received. The zero Cursor is the start.
type Cursor struct {
	Cursor   string `json:"cursor"`
	Sequence int64  `json:"sequence"`
}

// Event is one event of the run with its position.
type Event struct {
	// Sequence numbers the run's events 1, 2, 3… without gaps.
	Sequence int64
	// Cursor is the event's id: Cursor{Cursor, Sequence} resumes after it.
	Cursor string
	Event  contract.EnvironmentEvent
}

// After is the cursor that resumes after e.
func (e Event) After() Cursor { return Cursor{Cursor: e.Cursor, Sequence: e.Sequence} }

// Events yields the run's events strictly after after, then live ones
// until the run ends. Sequences are positions in the provider's replay,
// so every client numbers the same event the same way. The anchor is
// checked before anything is skipped: the event at after.Sequence must
// have id after.Cursor, and the replay must reach it; otherwise a
// *ReplayError ends the stream and nothing is silently skipped. An event
// without an id, or repeating one, is a *ReplayError too.
//
// The stream ends when ctx does, even if the provider's does not: within
// EventsGrace an *EventsStoppedError ends it, naming the cursor to resume
// from, and a provider's stream that returns once ctx ended is never
// taken for the run's end.
func (r *Run) Events(ctx context.Context, after Cursor) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if after.Sequence < 0 || (after.Sequence == 0) != (after.Cursor == "") {
			yield(Event{}, &ReplayError{Sequence: after.Sequence, Reason: "a cursor needs both an event id and a positive sequence, or neither"})
			return
		}
		seen := map[string]bool{}
		var seq int64
		last := after
		stopped := func() bool {
			if ctx.Err() == nil {
				return false
			}
			yield(Event{}, &EventsStoppedError{RunID: r.ref.Run.RunID, After: last, Err: ctx.Err()})
			return true
		}
		for ev, err := range boundediter.Seq2(ctx, r.session.Events(ctx, "", r.ref.Run.ExecutionID), EventsGrace) {
			if stopped() {
				return
			}
			if err != nil {
				yield(Event{}, fmt.Errorf("retained: events of run %s: %w", r.ref.Run.RunID, err))
				return
			}
			seq++
			if ev.ID == nil || *ev.ID == "" {
				yield(Event{}, &ReplayError{Sequence: seq, Reason: "the provider sent an event without an id"})
				return
			}
			id := *ev.ID
			if seen[id] {
				yield(Event{}, &ReplayError{Sequence: seq, Reason: fmt.Sprintf("event id %q repeats", id)})
				return
			}
			seen[id] = true
			switch {
			case seq < after.Sequence:
				continue
			case seq == after.Sequence:
				if id != after.Cursor {
					yield(Event{}, &ReplayError{Sequence: seq, Reason: fmt.Sprintf("the anchor changed: the event here is %q, not %q", id, after.Cursor)})
					return
				}
				continue
			}
			if !yield(Event{Sequence: seq, Cursor: id, Event: ev}, nil) {
				return
			}
			last = Cursor{Cursor: id, Sequence: seq}
		}
		if stopped() {
			return
		}
		if seq < after.Sequence {
			yield(Event{}, &ReplayError{Sequence: after.Sequence, Reason: fmt.Sprintf("the run ended after %d events, before the anchor", seq)})
		}
	}
}

// Result waits for the run's result and records how it ended. When the
// store fails or does not answer within 30 s, the result is returned
// with a *kernel.StoreError (Op "end"): the run ended, its record does
// not say so yet.
func (r *Run) Result(ctx context.Context) (*contract.TurnResult, error) {
	res, err := r.session.Result(ctx)
	if err != nil {
		return nil, fmt.Errorf("retained: result of run %s: %w", r.ref.Run.RunID, err)
	}
	if st, ok, err := r.session.Status(ctx); err == nil && ok {
		if err := r.settle(ctx, st); err != nil {
			return res, err
		}
	}
	return res, nil
}

// RespondToInteraction answers an interaction request of the run.
func (r *Run) RespondToInteraction(ctx context.Context, cmd *contract.InteractionResponseCommand) (*contract.InteractionAcknowledgement, error) {
	ir, ok := r.session.(contract.InteractionResponder)
	if !ok {
		return nil, ErrNoInteractions
	}
	ack, err := ir.RespondToInteraction(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("retained: answering an interaction of run %s: %w", r.ref.Run.RunID, err)
	}
	return ack, nil
}

// CancelRequest asks for the cancellation of a retained run.
type CancelRequest struct {
	// OperationID names the operation: the same request again is replayed,
	// never applied twice.
	OperationID string
	// Reason, optional, travels to the provider (1..2048 characters).
	Reason *string
	// StoreTimeout bounds each run-store call of the cancellation —
	// binding the operation id, recording how the run ended — even for a
	// caller without a deadline: 0 is DefaultCancelStoreTimeout; more
	// than 30 s is refused (ErrInvalidOptions).
	StoreTimeout time.Duration
	// ProviderTimeout bounds the provider's answer to the cancellation,
	// even for a caller without a deadline: 0 is
	// DefaultCancelProviderTimeout. A provider that does not answer in
	// time leaves the outcome unknown (the request may have reached it;
	// the same operation id asks again).
	ProviderTimeout time.Duration
}

// DefaultCancelProviderTimeout bounds a retained run's provider's answer
// to a cancellation when the request sets no ProviderTimeout.
const DefaultCancelProviderTimeout = 30 * time.Second

// DefaultCancelStoreTimeout bounds each run-store call of Run.Cancel when
// the request sets no StoreTimeout: a store that stops answering makes
// the cancellation's outcome unknown within seconds, not a minute.
const DefaultCancelStoreTimeout = 5 * time.Second

// CancelOutcome is the answer to a cancellation. Status is accepted,
// replayed, conflict or unknown (contract.Status*); Effect is known
// (cancel_requested, cancelled, not_live) only for accepted and replayed.
type CancelOutcome struct {
	OperationID   string
	RequestDigest string
	Status        string
	Effect        string
	// ExistingRequestDigest, on a conflict, is the digest of the request
	// the operation id is already bound to.
	ExistingRequestDigest *string
	// Message explains a conflict or an unknown outcome.
	Message *string
	// Snapshot is the run's status observed after the answer.
	Snapshot Snapshot
}

// CancelUnknownError is a cancellation whose outcome is unknown: the run
// store did not bind the operation id in time (nothing was sent to the
// provider, but the binding may still land), or the provider failed or
// answered another request. The run may or may not be cancelled; it is
// never reported cancelled. Retrying with the same OperationID is safe:
// the provider applies it once. Its CancelOutcome has Status and Effect
// unknown. errors.Is(err, ErrCancelUnknown) matches it.
type CancelUnknownError struct {
	RunID       string
	OperationID string
	// Sent says whether the request reached the provider.
	Sent bool
	// Err is the store's (*kernel.StoreError) or the provider's error.
	Err error
}

// ErrCancelUnknown matches every *CancelUnknownError.
var ErrCancelUnknown = errors.New("retained: the cancellation's outcome is unknown")

func (e *CancelUnknownError) Error() string {
	if !e.Sent {
		return fmt.Sprintf("retained: cancel operation %s of run %s: its outcome is unknown (the run store did not bind it; nothing was sent to the provider); retry with the same operation id once the store answers: %v", e.OperationID, e.RunID, e.Err)
	}
	return fmt.Sprintf("retained: cancel operation %s of run %s: its outcome is unknown; retry with the same operation id (the provider applies it once): %v", e.OperationID, e.RunID, e.Err)
}

// Unwrap returns the cause.
func (e *CancelUnknownError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCancelUnknown) match.
func (e *CancelUnknownError) Is(target error) bool { return target == ErrCancelUnknown }

// cancelScope prefixes the idempotency scope binding a run's
// cancellation operation ids to their request digests.
const cancelScope = "retained.cancel/"

// Cancel cancels the run under an operation id. The operation id is bound
// to the request's digest in the run store before the provider is asked:
// a different request under a bound id is a conflict with no effect, in
// any process. Each store call is bounded by req.StoreTimeout (default
// DefaultCancelStoreTimeout): a store that fails or does not answer in
// time makes the outcome unknown — a *CancelUnknownError wrapping the
// *kernel.StoreError, with Status and Effect unknown — and nothing
// reaches the provider. The provider's acknowledgement must answer
// exactly this request; a failed or unmatched answer is an unknown
// outcome too, never a confirmed cancellation. Without a durable
// cancellation contract Cancel is refused (ErrNoCancellation).
func (r *Run) Cancel(ctx context.Context, req CancelRequest) (CancelOutcome, error) {
	rc, ok := r.session.(contract.RunCanceller)
	if !ok {
		return CancelOutcome{}, ErrNoCancellation
	}
	bound := req.StoreTimeout
	if bound == 0 {
		bound = DefaultCancelStoreTimeout
	}
	if bound < 0 || bound > storeTimeout {
		return CancelOutcome{}, fmt.Errorf("%w: a cancel store timeout of %v is outside (0, %v]", ErrInvalidOptions, bound, storeTimeout)
	}
	creq, err := contract.NewRunCancellationRequest(req.OperationID, r.ref.Run, req.Reason)
	if err != nil {
		return CancelOutcome{}, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	out := CancelOutcome{OperationID: creq.OperationID, RequestDigest: creq.RequestDigest}
	unknown := func(sent bool, cause error) (CancelOutcome, error) {
		e := &CancelUnknownError{RunID: r.ref.Run.RunID, OperationID: creq.OperationID, Sent: sent, Err: cause}
		msg := e.Error()
		out.Status, out.Effect, out.Message = contract.StatusUnknown, contract.EffectUnknown, &msg
		return out, e
	}
	cctx, cancel := context.WithTimeout(ctx, bound)
	existing, _, err := r.store.ClaimIdempotency(cctx, store.Idempotency{Scope: cancelScope + r.ref.Record, Key: creq.OperationID, RequestDigest: creq.RequestDigest})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return out, fmt.Errorf("retained: binding cancel operation %s: %w", creq.OperationID, ctx.Err())
		}
		return unknown(false, storeFailure(ctx, r.ref.Record, "cancel", err))
	}
	if existing.RequestDigest != creq.RequestDigest {
		d := existing.RequestDigest
		msg := "the operation id is bound to a different cancellation request"
		out.Status, out.Effect, out.ExistingRequestDigest, out.Message = contract.StatusConflict, contract.EffectUnknown, &d, &msg
		out.Snapshot, _ = r.observeWithin(ctx, bound)
		return out, nil
	}
	answerWithin := req.ProviderTimeout
	if answerWithin <= 0 {
		answerWithin = DefaultCancelProviderTimeout
	}
	pctx, pcancel := context.WithTimeout(ctx, answerWithin)
	ack, err := rc.CancelRun(pctx, creq)
	pcancel()
	if err != nil || !contract.CancellationAcknowledgementMatchesRequest(creq, ack) {
		if err == nil {
			err = errors.New("the acknowledgement does not answer this request")
		}
		return unknown(true, err)
	}
	out.Status, out.Effect, out.ExistingRequestDigest, out.Message = ack.Status, ack.Effect, ack.ExistingRequestDigest, ack.Message
	// The provider's answer is the outcome; a store that cannot record
	// how the run ended does not change it (the snapshot says what was
	// observed).
	out.Snapshot, _ = r.observeWithin(ctx, bound)
	r.log.InfoContext(ctx, "retained: cancellation answered", "run", r.ref.Record, "operation", creq.OperationID, "status", ack.Status, "effect", ack.Effect)
	return out, nil
}
