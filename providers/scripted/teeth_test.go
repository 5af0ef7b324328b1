package scripted_test

import (
	"context"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/providers/scripted"
)

// fault names the one behaviour a broken provider corrupts.
type fault string

const (
	// session-replay
	faultCompetingRun fault = "serves a competing run's events under the caller's reference"
	faultIgnoreCursor fault = "replays from the start, ignoring the cursor"
	// cancellation-acknowledgement
	faultCancelConflictAsReplay fault = "answers a conflicting cancellation as a replay"
	// interaction-response
	faultLeakAnswer     fault = "repeats the answer in its acknowledgement"
	faultResolvedTwice  fault = "accepts the same answer twice under a new operation"
	faultSwallowExpired fault = "accepts an answer to an expired request"
	// portable-context
	faultTransferConflictAsReplay fault = "answers a changed transfer with the original receipt"
	faultAdmitStaleBoundary       fault = "continues past a stale native boundary"
	faultContinuationReplayRerun  fault = "runs a retried continuation again"
	// workspace-branching
	faultSecondCheckpoint fault = "mints a second checkpoint for a retried key"
	faultDeleteInUse      fault = "deletes a checkpoint its live fork depends on"
	faultCleanupConflict  fault = "reuses a cleanup operation id for another target"
	// exact-process-lifecycle
	faultWeakenedEgress      fault = "accepts an undeclared egress mode by weakening it"
	faultSecondExactEnv      fault = "creates a second exact environment for a retried key"
	faultChangedExactInput   fault = "accepts a changed exact input under the same key"
	faultNotFresh            fault = "hands out an exact environment with a process already running"
	faultReadPastMax         fault = "returns more than maxBytes from an exact read"
	faultStatusDisagrees     fault = "reports a terminal status whose termination differs from Wait's"
	faultKillAfterExitFails  fault = "fails a kill after the process exited"
	faultRecoveredReplay     fault = "replays different output through a recovered process handle"
	faultListIgnoresMetadata fault = "lists exact environments whatever their metadata"
	faultDestroyedListed     fault = "still lists and finds a destroyed exact environment"
)

// broken wraps the scripted provider and corrupts one behaviour; every
// other behaviour is the honest provider's.
type broken struct {
	*scripted.Provider
	fault fault

	mu      sync.Mutex
	cancels map[string]*contract.RunCancellationAcknowledgement
	receipt map[string]*contract.ContextTransferReceipt
}

func newBroken(t *testing.T, f fault) *broken {
	return &broken{Provider: scripted.New(mustScript(t, scripted.ConformanceScript), scripted.Options{}), fault: f,
		cancels: map[string]*contract.RunCancellationAcknowledgement{}, receipt: map[string]*contract.ContextTransferReceipt{}}
}

func (b *broken) wrap(env contract.Environment) contract.Environment {
	if env == nil {
		return nil
	}
	return &brokenEnv{Environment: env.(*scripted.Environment), b: b}
}

func (b *broken) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := b.Provider.Create(ctx, in)
	return b.wrap(env), err
}

func (b *broken) Get(ctx context.Context, id string) (contract.Environment, error) {
	env, err := b.Provider.Get(ctx, id)
	return b.wrap(env), err
}

func (b *broken) TransferContext(ctx context.Context, req *contract.ContextTransferRequest) (*contract.ContextTransferResult, error) {
	res, err := b.Provider.TransferContext(ctx, req)
	if err != nil || b.fault != faultTransferConflictAsReplay {
		return res, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if res.Receipt != nil && b.receipt[req.OperationID] == nil {
		b.receipt[req.OperationID] = res.Receipt
	}
	if res.Conflict != nil {
		r := *b.receipt[req.OperationID]
		r.Status = contract.TransferStatusReplayed
		return &contract.ContextTransferResult{Receipt: &r}, nil
	}
	return res, nil
}

type brokenEnv struct {
	*scripted.Environment
	b *broken
}

func (e *brokenEnv) Session(ctx context.Context, id string, ref *contract.RunControlRef) (contract.Session, error) {
	s, err := e.Environment.Session(ctx, id, ref)
	if err != nil && e.b.fault == faultCompetingRun {
		// Bind to whatever run the session has and claim the caller's.
		s, err = e.Environment.Session(ctx, id, nil)
		if err != nil {
			return nil, err
		}
		return &brokenSession{Session: s.(*scripted.Session), b: e.b, claimed: ref}, nil
	}
	if err != nil {
		return nil, err
	}
	return &brokenSession{Session: s.(*scripted.Session), b: e.b}, nil
}

func (e *brokenEnv) RespondToInteraction(ctx context.Context, cmd *contract.InteractionResponseCommand) (*contract.InteractionAcknowledgement, error) {
	ack, err := e.Environment.RespondToInteraction(ctx, cmd)
	if err != nil {
		return nil, err
	}
	switch {
	case e.b.fault == faultLeakAnswer:
		var values []string
		for _, v := range cmd.Response.Data {
			if v.Text != nil {
				values = append(values, *v.Text)
			}
		}
		ack.Message = ptr("answered: " + strings.Join(values, ","))
	case e.b.fault == faultResolvedTwice && ack.Status == contract.InteractionAckAlreadyResolvedSame:
		ack.Status = contract.InteractionAckAccepted
	case e.b.fault == faultSwallowExpired && ack.Status == contract.InteractionAckExpired:
		ack.Status = contract.InteractionAckAccepted
	}
	return ack, nil
}

func (e *brokenEnv) WorkspaceBranching() contract.WorkspaceBranching {
	return &brokenBranching{WorkspaceBranching: e.Environment.WorkspaceBranching(), b: e.b}
}

type brokenSession struct {
	*scripted.Session
	b       *broken
	claimed *contract.RunControlRef
}

func (s *brokenSession) ControlRef() *contract.RunControlRef {
	if s.claimed != nil {
		return s.claimed
	}
	return s.Session.ControlRef()
}

func (s *brokenSession) Events(ctx context.Context, since, executionID string) iter.Seq2[contract.EnvironmentEvent, error] {
	switch {
	case s.claimed != nil:
		return s.Session.Events(ctx, since, "")
	case s.b.fault == faultIgnoreCursor:
		return s.Session.Events(ctx, "", "")
	}
	return s.Session.Events(ctx, since, executionID)
}

func (s *brokenSession) CancelRun(ctx context.Context, req *contract.RunCancellationRequest) (*contract.RunCancellationAcknowledgement, error) {
	if s.b.fault == faultCancelConflictAsReplay {
		s.b.mu.Lock()
		first := s.b.cancels[req.OperationID]
		s.b.mu.Unlock()
		if first != nil {
			ack := *first
			ack.Status = contract.StatusReplayed
			return &ack, nil
		}
	}
	ack, err := s.Session.CancelRun(ctx, req)
	if err == nil {
		s.b.mu.Lock()
		s.b.cancels[req.OperationID] = ack
		s.b.mu.Unlock()
	}
	return ack, err
}

func (s *brokenSession) ContinueNative(ctx context.Context, req *contract.NativeContextContinuationRequest, opts contract.NativeContinuationOptions) (*contract.NativeContinuationResult, error) {
	res, err := s.Session.ContinueNative(ctx, req, opts)
	if err != nil {
		return nil, err
	}
	ack := res.Acknowledgement
	switch {
	case s.b.fault == faultAdmitStaleBoundary && ack.Status == contract.ContinuationStatusBoundaryMismatch:
		// Continue from wherever the session is instead.
		current, err := contract.NewNativeContextContinuationRequest(req.OperationID+"-anyway", opts.Turn, req.Run, *ack.ActualBoundary)
		if err != nil {
			return nil, err
		}
		return s.Session.ContinueNative(ctx, current, opts)
	case s.b.fault == faultContinuationReplayRerun && ack.Status == contract.ContinuationStatusReplayed:
		// Run the turn again, reporting the new run as the replay.
		proof, err := s.Session.ContextBoundary(ctx)
		if err != nil || proof == nil {
			return res, err
		}
		run, _ := exactOf(s.Session.ControlRef())
		again, err := contract.NewNativeContextContinuationRequest(req.OperationID+"-again", opts.Turn, run, *proof)
		if err != nil {
			return nil, err
		}
		rerun, err := s.Session.ContinueNative(ctx, again, opts)
		if err != nil {
			return nil, err
		}
		res.Result, res.ControlRef = rerun.Result, rerun.ControlRef
	}
	return res, nil
}

func exactOf(r *contract.RunControlRef) (contract.ExactRunControlRef, bool) {
	if r == nil || r.SessionID == nil || r.ExecutionID == nil || r.RequestDigest == nil {
		return contract.ExactRunControlRef{}, false
	}
	return contract.ExactRunControlRef{RunID: r.RunID, Provider: r.Provider, EnvironmentID: r.EnvironmentID,
		SessionID: *r.SessionID, ExecutionID: *r.ExecutionID, RequestDigest: *r.RequestDigest}, true
}

type brokenBranching struct {
	contract.WorkspaceBranching
	b *broken
}

func (br *brokenBranching) Checkpoint(ctx context.Context, req *contract.WorkspaceCheckpointRequest) (*contract.WorkspaceCheckpointResult, error) {
	res, err := br.WorkspaceBranching.Checkpoint(ctx, req)
	if err == nil && br.b.fault == faultSecondCheckpoint && res.Status == contract.BranchingReplayed {
		cp := *res.Checkpoint
		cp.CheckpointID += "-second"
		res.Checkpoint = &cp
	}
	return res, err
}

func (br *brokenBranching) DeleteCheckpoint(ctx context.Context, req *contract.WorkspaceCleanupRequest) (*contract.WorkspaceCleanupAcknowledgement, error) {
	ack, err := br.WorkspaceBranching.DeleteCheckpoint(ctx, req)
	switch {
	case err != nil:
	case br.b.fault == faultDeleteInUse && ack.Status == contract.WorkspaceCleanupInUse:
		ack.Status, ack.Message, ack.BlockingTargetIDs = contract.WorkspaceCleanupDeleted, nil, nil
	case br.b.fault == faultCleanupConflict && ack.Status == contract.WorkspaceCleanupConflict:
		ack.Status, ack.Message, ack.ExistingRequestDigest = contract.WorkspaceCleanupAlreadyAbsent, nil, nil
	}
	return ack, err
}

// Issue 3 "Done when": every scenario family has teeth. A provider broken
// in exactly one rule fails the family, at the step that covers the rule,
// while the honest provider passes the same probe.
func TestScenarioFamiliesHaveTeeth(t *testing.T) {
	opts := conformanceOptions()
	opts.Reconnect = nil // a broken provider's reconnected client would be honest
	cases := []struct {
		fault    fault
		scenario string
		step     string
	}{
		{faultCompetingRun, "session-replay", "competing-run-isolation"},
		{faultIgnoreCursor, "session-replay", "same-client-replay"},
		{faultCancelConflictAsReplay, "cancellation-acknowledgement", "cancel-conflict"},
		{faultLeakAnswer, "interaction-response", "environment/accepted"},
		{faultResolvedTwice, "interaction-response", "environment/same-response"},
		{faultSwallowExpired, "interaction-response", "environment/expired"},
		{faultTransferConflictAsReplay, "portable-context", "transfer-replay-conflict"},
		{faultAdmitStaleBoundary, "portable-context", "continuation-boundary-rejection"},
		{faultContinuationReplayRerun, "portable-context", "continuation-replay-conflict"},
		{faultSecondCheckpoint, "workspace-branching", "checkpoint-retry"},
		{faultDeleteInUse, "workspace-branching", "cleanup-dependency-order"},
		{faultCleanupConflict, "workspace-branching", "cleanup-operation-conflict"},
		{faultWeakenedEgress, "exact-process-lifecycle", "exact-process-capability"},
		{faultSecondExactEnv, "exact-process-lifecycle", "exact-process-idempotency"},
		{faultChangedExactInput, "exact-process-lifecycle", "exact-process-idempotency-collision"},
		{faultNotFresh, "exact-process-lifecycle", "fresh-environment"},
		{faultReadPastMax, "exact-process-lifecycle", "exact-file-roundtrip"},
		{faultStatusDisagrees, "exact-process-lifecycle", "exact-process-run"},
		{faultKillAfterExitFails, "exact-process-lifecycle", "exact-process-run"},
		{faultRecoveredReplay, "exact-process-lifecycle", "exact-process-recovery"},
		{faultListIgnoresMetadata, "exact-process-lifecycle", "exact-process-list"},
		{faultDestroyedListed, "exact-process-lifecycle", "exact-process-destroy"},
	}
	for _, tc := range cases {
		t.Run(tc.scenario+"/"+tc.step, func(t *testing.T) {
			honest := providertest.Probe(t, tc.scenario, func(t *testing.T) contract.Provider { return newBroken(t, "") }, opts)
			if honest.Failed || honest.Skipped {
				t.Fatalf("the honest provider does not pass %s: %v", tc.scenario, honest.Messages)
			}
			rep := providertest.Probe(t, tc.scenario, func(t *testing.T) contract.Provider { return newBroken(t, tc.fault) }, opts)
			if !rep.Failed || !rep.FailedStep(tc.step) {
				t.Errorf("a provider that %s passed step %s of %s (failed steps %v)", tc.fault, tc.step, tc.scenario, rep.FailedSteps)
			}
			for _, m := range rep.Messages {
				t.Log(m)
			}
		})
	}
}

// Probe reports what the family skipped for a provider that does not
// declare its ability, and a failure outside any step.
func TestProbeReportsSkipsAndFailures(t *testing.T) {
	plain := func(t *testing.T) contract.Provider { return scripted.New(hello(), scripted.Options{}) }
	rep := providertest.Probe(t, "interaction-response", plain, providertest.Options{})
	if !rep.Skipped || rep.Failed {
		t.Errorf("a provider without interactions: skipped %v, failed %v, want a skip", rep.Skipped, rep.Failed)
	}
	interactive := func(t *testing.T) contract.Provider {
		return scripted.New(mustScript(t, scripted.ConformanceScript), scripted.Options{})
	}
	rep = providertest.Probe(t, "interaction-response", interactive, providertest.Options{})
	if !rep.Failed || len(rep.Messages) == 0 {
		t.Errorf("declared interactions without the inputs to exercise them must fail: %+v", rep)
	}
	rep = providertest.Probe(t, "portable-context", interactive, providertest.Options{})
	if !rep.Failed {
		t.Error("declared context transfer without counters must fail")
	}
}
