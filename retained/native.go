package retained

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/contract"
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
