package retained

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/store"
)

// nativeContinuer is the run's session as a native continuer, or
// ErrNoNativeContinuation.
func (r *Run) nativeContinuer() (contract.NativeContinuer, error) {
	nc, ok := r.session.(contract.NativeContinuer)
	if !ok {
		return nil, ErrNoNativeContinuation
	}
	return nc, nil
}

// ContextBoundary returns the proof of the run's native context
// boundary (spec runtime §3.8 contextBoundary()), checked to be bound to
// exactly this run. While the run is in progress no boundary can be
// proven: that is ErrNoBoundary, never a guess.
func (r *Run) ContextBoundary(ctx context.Context) (*contract.NativeContextBoundaryProof, error) {
	nc, err := r.nativeContinuer()
	if err != nil {
		return nil, err
	}
	proof, err := nc.ContextBoundary(ctx)
	if err != nil {
		return nil, fmt.Errorf("retained: the native boundary of run %s: %w", r.ref.Run.RunID, err)
	}
	if proof == nil {
		return nil, fmt.Errorf("%w (run %s)", ErrNoBoundary, r.ref.Run.RunID)
	}
	if _, err := contract.Validate(contract.KindNativeContextBoundaryProof, contract.NativeContextBoundaryProofSchema, proof); err != nil {
		return nil, fmt.Errorf("retained: the provider's boundary proof for run %s: %w", r.ref.Run.RunID, err)
	}
	if !contract.BoundaryProofMatchesRun(r.ref.Run, proof) {
		return nil, fmt.Errorf("retained: the provider's boundary proof is bound to another run than %s", r.ref.Run.RunID)
	}
	return proof, nil
}

// BeginNativeContinuation proves the run's boundary now and returns the
// digest-bound request that continues its session with turn under
// operationID (spec runtime §3.8 beginNativeContinuation). It has no
// effect: persist the request, then send it with ContinueNative — the
// same request again, from any process, is the same continuation.
func (r *Run) BeginNativeContinuation(ctx context.Context, operationID string, turn contract.NativeContextContinuationTurn) (*contract.NativeContextContinuationRequest, error) {
	proof, err := r.ContextBoundary(ctx)
	if err != nil {
		return nil, err
	}
	req, err := contract.NewNativeContextContinuationRequest(operationID, turn, r.ref.Run, *proof)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return req, nil
}

// ContinueNative sends a native continuation of the run's session (spec
// runtime §3.8 continueNative): the only path that may claim same-chat
// continuity. The provider continues the session at the request's
// expected boundary without copied history, or says why not (conflict,
// boundary_mismatch, unverified, unknown_session — a result, not an
// error). The answer must be exactly this request's (its operation id,
// digest and validated shape) or the outcome is unknown: an error, never
// a success. opts.Turn must be the turn the request binds, and
// opts.Credential carries a seat stage's credential request for the new
// turn (RG-07). The result's ControlRef names the continued run; attach
// it with ReconnectRetainedRun once its admission is recorded.
func (r *Run) ContinueNative(ctx context.Context, req *contract.NativeContextContinuationRequest, opts contract.NativeContinuationOptions) (*contract.NativeContinuationResult, error) {
	nc, err := r.nativeContinuer()
	if err != nil {
		return nil, err
	}
	if req == nil {
		return nil, fmt.Errorf("%w: no native continuation request", ErrInvalidOptions)
	}
	if !contract.SameRunControlRef(req.Run.Ref(), r.ref.Run.Ref()) {
		return nil, mismatch("native continuation's run", r.ref.Run.Ref(), ptrRef(req.Run.Ref()))
	}
	res, err := nc.ContinueNative(ctx, req, opts)
	if err != nil {
		return nil, fmt.Errorf("retained: continuing run %s natively (outcome unknown): %w", r.ref.Run.RunID, err)
	}
	if contract.NativeContinuationRefusalMatchesRequest(req, res) {
		// A definite refusal of exactly this request: nothing was
		// admitted.
		r.log.InfoContext(ctx, "retained: native continuation refused", "run", r.ref.Record, "operation", req.OperationID, "status", res.Acknowledgement.Status)
		return res, nil
	}
	if res == nil || !contract.NativeContinuationResultMatchesRequest(req, res) {
		return nil, fmt.Errorf("retained: continuing run %s natively (outcome unknown): %w", r.ref.Run.RunID,
			errors.New("the provider's answer does not answer this request"))
	}
	if res.ControlRef != nil && res.ControlRef.SessionID != r.ref.Run.SessionID {
		return nil, fmt.Errorf("retained: the provider continued run %s in session %s, not its own %s", r.ref.Run.RunID, res.ControlRef.SessionID, r.ref.Run.SessionID)
	}
	r.log.InfoContext(ctx, "retained: native continuation answered", "run", r.ref.Record, "operation", req.OperationID, "status", res.Acknowledgement.Status)
	return res, nil
}

func ptrRef(r contract.RunControlRef) *contract.RunControlRef { return &r }

// NativeContinuationRecordID is the run-store record id that
// ContinueNativeRetained gives native continuation operationID of the
// retained run started under idempotencyKey: deterministic, so any
// process finds (or recovers) the continuation's admission records.
func NativeContinuationRecordID(idempotencyKey, operationID string) (string, error) {
	_, id, err := DeriveIdentity(idempotencyKey, "native:"+operationID)
	return id, err
}

// NativeContinueOptions configure Run.ContinueNativeRetained.
type NativeContinueOptions struct {
	// Request is the continuation BeginNativeContinuation returned, as
	// the caller persisted it.
	Request *contract.NativeContextContinuationRequest
	// Continuation is what ContinueNative sends with it (the turn, and a
	// seat stage's credential request).
	Continuation contract.NativeContinuationOptions
	// OnAdmission is required: it is awaited after each admission record
	// of the continued run is durable.
	OnAdmission AdmissionHook
	// CredentialKey keys the digest of Continuation's credential request
	// recorded with the continued run's intent (StartOptions.CredentialKey).
	CredentialKey []byte
}

// NativeContinuation is a native continuation admitted as a retained run
// of its own.
type NativeContinuation struct {
	// Result is the provider's answer (ContinueNative's).
	Result *contract.NativeContinuationResult
	// ControlRef is the continued run's claim ticket — its record and
	// the provider's control reference — when the continuation succeeded
	// (Result.Succeeded); zero otherwise. Any process re-attaches with it
	// (ReconnectRetainedRun).
	ControlRef ControlRef
}

// ContinueNativeRetained is ContinueNative with the continued run
// admitted like every retained run (spec runtime §3.8): its intent
// (the continued record, the request's operation id and digests) and
// its environment (this run's) are durable, and the hook has seen each,
// before the request is sent; its dispatched record (the provider's
// control reference of the continued run) is durable, and the hook has
// seen it, before the result is returned — nothing of the continuation
// is visible to the caller before its records are.
//
// The record id derives from this run's idempotency key and the
// operation id, so sending the same request again, from any process,
// continues the same admission (the provider replays the continuation).
// A continuation the provider refused (conflict, boundary_mismatch, …)
// leaves its record with intent and environment only, pending;
// RecoverRetainedRun reports such a record Unverifiable, never
// re-dispatches it: send the persisted request again.
func (r *Run) ContinueNativeRetained(ctx context.Context, o NativeContinueOptions) (*NativeContinuation, error) {
	return r.continueNativeRetained(ctx, o, nil, nil, "")
}

// continueNativeRetained is ContinueNativeRetained whose continued run,
// with seat, is a stage of a seated retained run (StartSeated): the
// link is recorded with its intent (outside the request digest), the
// stage in it (Intent.Stage), which the credential request, when there
// is one, must be for, and its turn id is the seated run's turnID
// ("": "native:<operation id>", as every other continuation's).
func (r *Run) continueNativeRetained(ctx context.Context, o NativeContinueOptions, seat *SeatLink, stage *int, turnID string) (*NativeContinuation, error) {
	if o.OnAdmission == nil {
		return nil, ErrNoAdmissionHook
	}
	if o.Request == nil {
		return nil, fmt.Errorf("%w: no native continuation request", ErrInvalidOptions)
	}
	if _, err := r.nativeContinuer(); err != nil {
		return nil, err
	}
	parent, err := Load(ctx, r.store, r.ref.Record)
	if err != nil {
		return nil, err
	}
	req := o.Request
	if turnID == "" {
		turnID = "native:" + req.OperationID
	}
	recordID, err := NativeContinuationRecordID(parent.Intent.IdempotencyKey, req.OperationID)
	if err != nil {
		return nil, err
	}
	a := &admission{provider: r.provider, store: r.store, hook: o.OnAdmission, now: r.now, log: r.log, seat: seat}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.intent = Intent{Provider: parent.Intent.Provider, IdempotencyKey: parent.Intent.IdempotencyKey, TurnID: turnID,
		SessionID: r.ref.Run.SessionID, RunID: recordID, TurnDigest: req.TurnDigest,
		NativeContinuation: &NativeContinuationIntent{Continues: r.ref.Record, OperationID: req.OperationID, RequestDigest: req.RequestDigest}}
	if err := admittedCredential(&a.intent, o.Continuation.Credential, o.CredentialKey); err != nil {
		return nil, err
	}
	if stage != nil {
		if c := a.intent.CredentialStage; c != nil && *c != *stage {
			return nil, fmt.Errorf("%w: the continuation carries stage %d's credential request, not stage %d's", ErrInvalidOptions, *c, *stage)
		}
		k := *stage
		a.intent.Stage = &k
	}
	envDigest, err := contract.DigestOf(map[string]string{"continuesEnvironmentId": r.ref.Run.EnvironmentID})
	if err != nil {
		return nil, err
	}
	if a.intent.RequestDigest, err = requestDigest(a.intent, envDigest); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	doc, err := a.recordIntent(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.deliver(ctx, Admission{Kind: AdmissionIntent, Intent: &doc.Intent}); err != nil {
		return nil, err
	}
	envRec := EnvironmentRecord{Provider: a.intent.Provider, EnvironmentID: r.ref.Run.EnvironmentID, IdempotencyKey: a.intent.IdempotencyKey,
		TurnID: turnID, SessionID: a.intent.SessionID}
	if err := a.update(ctx, func(d *document, _ *store.Run) error {
		if d.Environment != nil && *d.Environment != envRec {
			return mismatch("environment record", *d.Environment, envRec)
		}
		d.Environment = &envRec
		return nil
	}); err != nil {
		return nil, err
	}
	if err := a.deliver(ctx, Admission{Kind: AdmissionEnvironment, Environment: &envRec}); err != nil {
		return nil, err
	}
	res, err := r.ContinueNative(ctx, req, o.Continuation)
	if err != nil {
		return nil, err
	}
	out := &NativeContinuation{Result: res}
	if !res.Succeeded() {
		return out, nil
	}
	ref := *res.ControlRef
	switch {
	case ref.Provider != a.intent.Provider:
		return nil, &MismatchError{What: "continued run's provider", Field: "provider", Want: a.intent.Provider, Got: ref.Provider}
	case ref.EnvironmentID != envRec.EnvironmentID:
		return nil, &MismatchError{What: "continued run's environment", Field: "environmentId", Want: envRec.EnvironmentID, Got: ref.EnvironmentID}
	}
	disp := DispatchedRecord{ControlRef: ref, IdempotencyKey: a.intent.IdempotencyKey, TurnID: turnID}
	if err := recordDispatched(ctx, r.store, recordID, disp); err != nil {
		return nil, err
	}
	a.log.InfoContext(ctx, "retained: native continuation admitted", "run", recordID, "continues", r.ref.Record, "providerRun", ref.RunID)
	if err := a.deliver(ctx, Admission{Kind: AdmissionDispatched, Dispatched: &disp}); err != nil {
		return nil, err
	}
	out.ControlRef = ControlRef{Record: recordID, Run: ref}
	return out, nil
}
