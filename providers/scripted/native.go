package scripted

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/contract"
)

// nativeRecord is an admitted native continuation: its request digest,
// its acknowledgement and the run it started.
type nativeRecord struct {
	digest string
	ack    contract.NativeContextContinuationAcknowledgement
	run    *runState
}

// proof is the boundary of a session whose latest run is run and whose
// native history holds n runs: a revision that changes with every run.
func (st *envState) proof(run *runState, n int) *contract.NativeContextBoundaryProof {
	revision := fmt.Sprintf("%s@%d", run.session.id, n)
	ref := run.exact()
	return &contract.NativeContextBoundaryProof{RunID: ref.RunID, Provider: ref.Provider, EnvironmentID: ref.EnvironmentID,
		SessionID: ref.SessionID, ExecutionID: ref.ExecutionID, RequestDigest: ref.RequestDigest,
		Boundary:   contract.NativeContextBoundary{Kind: contract.BoundaryKindRevision, Revision: &revision},
		ObservedAt: timestamp(st.b.now())}
}

// latest returns the session's latest run and how many runs it holds.
func (s *session) latest() (*runState, int) {
	st := s.e.st
	st.mu.Lock()
	defer st.mu.Unlock()
	return s.s.runs[len(s.s.runs)-1], len(s.s.runs)
}

// ContextBoundary implements contract.NativeContinuer: the session's
// native boundary (a revision counting its runs), bound to its latest
// run; nil while that run is still in progress, when no boundary can be
// proven.
func (s *session) ContextBoundary(ctx context.Context) (*contract.NativeContextBoundaryProof, error) {
	if s.e.st.isDestroyed() {
		return nil, s.e.st.gone()
	}
	run, n := s.latest()
	if run.live() {
		return nil, nil
	}
	return s.e.st.proof(run, n), nil
}

// ContinueNative implements contract.NativeContinuer: one new turn in
// this session, sending no copied history, admitted only at the exact
// boundary the request expects. opts.Turn must be the turn the request's
// turnDigest binds (else the call is refused before any effect).
//
// Outcomes: the boundary is atomically checked and the turn admitted
// (accepted; OnAdmission is called once with the new run before the
// result is awaited, and the result and the new run's exact reference
// are returned); the same operation again returns the original result
// and reference (replayed) without dispatch; the same operation id with
// a different request is a conflict naming the original digest; a
// session that moved past the expected boundary is boundary_mismatch with
// the actual one; a session with a run in progress is unverified; a
// request for another session, or a destroyed environment, is
// unknown_session. Nothing is dispatched but on acceptance.
func (s *session) ContinueNative(ctx context.Context, req *contract.NativeContextContinuationRequest, opts contract.NativeContinuationOptions) (*contract.NativeContinuationResult, error) {
	if req == nil {
		return nil, errors.New("scripted: no native continuation request")
	}
	if _, err := contract.Validate(contract.KindNativeContextContinuationRequest, contract.NativeContextContinuationRequestSchema, req); err != nil {
		return nil, err
	}
	turnDigest, err := contract.NativeContextContinuationTurnDigest(opts.Turn)
	if err != nil {
		return nil, err
	}
	if turnDigest != req.TurnDigest {
		return nil, errors.New("scripted: the continuation turn is not the turn the request's turnDigest binds")
	}
	rec, res, err := s.admitNative(ctx, req, opts.Turn, opts.Credential)
	if err != nil || res != nil {
		return res, err
	}
	if rec.ack.Status == contract.ContinuationStatusAccepted && opts.OnAdmission != nil {
		opts.OnAdmission(rec.run.exact())
	}
	return s.nativeOutcome(ctx, rec)
}

// nativeOutcome waits for the continued run and returns its result.
func (s *session) nativeOutcome(ctx context.Context, rec *nativeRecord) (*contract.NativeContinuationResult, error) {
	if err := rec.run.wait(ctx); err != nil {
		return nil, err
	}
	result := rec.run.result()
	result.ContextTransferReceipt = nil
	ref := rec.run.exact()
	return &contract.NativeContinuationResult{Acknowledgement: rec.ack, Result: result, ControlRef: &ref}, nil
}

// admitNative decides a continuation under the environment's native
// lock: a record to await (accepted or replayed), or a final failure
// result.
func (s *session) admitNative(ctx context.Context, req *contract.NativeContextContinuationRequest, turn contract.NativeContextContinuationTurn, cred *contract.CredentialRequest) (*nativeRecord, *contract.NativeContinuationResult, error) {
	st := s.e.st
	st.nativeMu.Lock()
	defer st.nativeMu.Unlock()
	failure := func(status, message string, actual *contract.NativeContextBoundaryProof) *contract.NativeContinuationResult {
		ack := contract.NativeContextContinuationAcknowledgement{OperationID: req.OperationID, RequestDigest: req.RequestDigest,
			Status: status, ActualBoundary: actual}
		if message != "" {
			ack.Message = &message
		}
		return &contract.NativeContinuationResult{Acknowledgement: ack}
	}
	st.mu.Lock()
	prior := st.natives[req.OperationID]
	destroyed := st.destroyed
	st.mu.Unlock()
	if prior != nil {
		if prior.digest != req.RequestDigest {
			res := failure(contract.ContinuationStatusConflict, "the operation id is bound to a different continuation request", nil)
			existing := prior.digest
			res.Acknowledgement.ExistingRequestDigest = &existing
			return nil, res, nil
		}
		replay := *prior
		replay.ack.Status = contract.ContinuationStatusReplayed
		return &replay, nil, nil
	}
	if destroyed || req.Run.SessionID != s.s.id || req.Run.EnvironmentID != st.id || req.Run.Provider != st.b.name {
		return nil, failure(contract.ContinuationStatusUnknownSession, "this session does not hold the continued run", nil), nil
	}
	latest, n := s.latest()
	if latest.live() {
		return nil, failure(contract.ContinuationStatusUnverified, "a run of the session is in progress; its boundary cannot be proven", nil), nil
	}
	actual := st.proof(latest, n)
	same, err := sameCanonical(actual.Boundary, req.ExpectedBoundary.Boundary)
	if err != nil {
		return nil, nil, err
	}
	if !contract.SameRunControlRef(latest.exact(), req.Run) || !same {
		return nil, failure(contract.ContinuationStatusBoundaryMismatch, "", actual), nil
	}
	in := &contract.TurnInput{Prompt: turn.Prompt, Parts: turn.Parts, Model: turn.Model, Context: turn.Context,
		ProviderOptions: turn.ProviderOptions, SessionID: ptr(s.s.id), Credential: cred}
	run, p, err := s.e.start(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	s.e.detach(run, p)
	st.b.continuations.Add(1)
	rec := &nativeRecord{digest: req.RequestDigest, run: run, ack: contract.NativeContextContinuationAcknowledgement{
		OperationID: req.OperationID, RequestDigest: req.RequestDigest, Status: contract.ContinuationStatusAccepted,
		HistoryMessagesSent: 0, ActualBoundary: actual}}
	st.mu.Lock()
	if st.natives == nil {
		st.natives = map[string]*nativeRecord{}
	}
	st.natives[req.OperationID] = rec
	st.mu.Unlock()
	s.mu.Lock()
	s.cur = run
	s.mu.Unlock()
	return rec, nil, nil
}

// sameCanonical reports whether a and b have the same canonical form.
func sameCanonical(a, b any) (bool, error) {
	da, err := contract.DigestOf(a)
	if err != nil {
		return false, err
	}
	db, err := contract.DigestOf(b)
	return da == db, err
}
