package providertest

import (
	"context"
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// workspaceBranching is the testkit's workspace branching family (spec
// L.5, I, M.2, P.2; checklist BRN-01..BRN-10; seed 003 "cleanup
// settlement"): checkpoint-retry, checkpoint-recovery,
// checkpoint-conflict, fork-retry, fork-recovery, fork-conflict,
// branching-recovery (a reconnected client's BranchingFor recovers both
// and refuses other environments), cleanup-dependency-order (in_use
// listing the live fork, both still found — or, for a provider whose
// forks own their checkpoint copy, deleted with the fork unharmed),
// cleanup-operation-conflict, confirmed-cleanup and cleanup-lookup.
func workspaceBranching(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	c := envCaps(t, p, env)
	if !c.Branching.Durable() {
		t.Skip("the provider declares no durable branching (branching.retrySafe, lookup and cleanup)")
	}
	ctx := bounded(t)
	ops := ability[contract.DurableBrancher](t, env, "DurableBrancher", "branching.retrySafe+lookup+cleanup").WorkspaceBranching()
	if ops == nil {
		t.Fatal("WorkspaceBranching returned nil")
	}
	var run contract.ExactRunControlRef
	if opts.Branching.SourceRun != nil {
		var err error
		if run, err = opts.Branching.SourceRun(ctx, env); err != nil {
			t.Fatalf("SourceRun: %v", err)
		}
	} else {
		_, _, run = detached(t, ctx, env, &contract.TurnInput{Prompt: ptr(opts.prompt())})
	}
	metadata := map[string]canonjson.Value{"providertest": canonjson.BoolValue(true)}
	cpReq, err := contract.NewWorkspaceCheckpointRequest("providertest-checkpoint",
		contract.WorkspaceCheckpointMaterial{Source: run, Name: ptr("providertest-checkpoint"), Metadata: metadata})
	if err != nil {
		t.Fatal(err)
	}
	placement := contract.PlacementInfo{Kind: "local"}
	if opts.Branching.Placement != nil {
		placement = *opts.Branching.Placement
	}
	var (
		checkpoint     *contract.WorkspaceCheckpointRef
		forkReq        *contract.WorkspaceForkRequest
		fork           *contract.ForkedEnvironmentRef
		cpDone, fkDone bool
	)
	// Clean up only resources proven to answer our requests.
	t.Cleanup(func() {
		bg := context.Background()
		if fork != nil && !fkDone {
			if r, err := contract.NewWorkspaceCleanupRequest("providertest-final-fork-cleanup", contract.WorkspaceCleanupMaterial{
				Kind: contract.WorkspaceCleanupFork, TargetID: fork.EnvironmentID, Provider: fork.Provider}); err == nil {
				_, _ = ops.DestroyFork(bg, r)
			}
		}
		if checkpoint != nil && !cpDone {
			if r, err := contract.NewWorkspaceCleanupRequest("providertest-final-checkpoint-cleanup", contract.WorkspaceCleanupMaterial{
				Kind: contract.WorkspaceCleanupCheckpoint, TargetID: checkpoint.CheckpointID, Provider: checkpoint.Provider}); err == nil {
				_, _ = ops.DeleteCheckpoint(bg, r)
			}
		}
	})
	checkpointResult := func(t TB, res *contract.WorkspaceCheckpointResult, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("Checkpoint: %v", err)
		}
		if _, err := contract.Validate(contract.KindWorkspaceCheckpointResult, contract.WorkspaceCheckpointResultSchema, res); err != nil {
			t.Fatalf("the checkpoint result is invalid: %v", err)
		}
	}
	lookupCheckpoint := func(t TB, h contract.WorkspaceBranching) *contract.WorkspaceCheckpointLookupResult {
		t.Helper()
		res, err := h.LookupCheckpoint(ctx, cpReq.Lookup())
		if err != nil {
			t.Fatalf("LookupCheckpoint: %v", err)
		}
		if _, err := contract.Validate(contract.KindWorkspaceCheckpointLookupResult, contract.WorkspaceCheckpointLookupResultSchema, res); err != nil {
			t.Fatalf("the checkpoint lookup is invalid: %v", err)
		}
		return res
	}
	forkResult := func(t TB, res *contract.WorkspaceForkResult, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("Fork: %v", err)
		}
		if _, err := contract.Validate(contract.KindWorkspaceForkResult, contract.WorkspaceForkResultSchema, res); err != nil {
			t.Fatalf("the fork result is invalid: %v", err)
		}
	}
	lookupFork := func(t TB, h contract.WorkspaceBranching) *contract.WorkspaceForkLookupResult {
		t.Helper()
		res, err := h.LookupFork(ctx, forkReq.Lookup())
		if err != nil {
			t.Fatalf("LookupFork: %v", err)
		}
		if _, err := contract.Validate(contract.KindWorkspaceForkLookupResult, contract.WorkspaceForkLookupResultSchema, res); err != nil {
			t.Fatalf("the fork lookup is invalid: %v", err)
		}
		return res
	}

	ok := t.Step("checkpoint-retry", func(t TB) {
		res, err := ops.Checkpoint(ctx, cpReq)
		checkpointResult(t, res, err)
		if res.Status != contract.BranchingCreated || !contract.WorkspaceCheckpointResultMatchesRequest(cpReq, res) {
			t.Fatalf("a checkpoint answered %s, want created matching the request", res.Status)
		}
		checkpoint = res.Checkpoint
		again, err := ops.Checkpoint(ctx, cpReq)
		checkpointResult(t, again, err)
		if again.Status != contract.BranchingReplayed || !contract.WorkspaceCheckpointResultMatchesRequest(cpReq, again) ||
			digest(t, again.Checkpoint) != digest(t, checkpoint) {
			t.Errorf("a checkpoint retry answered %s, want replayed with the original checkpoint", again.Status)
		}
	})
	if !ok {
		return
	}
	t.Step("checkpoint-recovery", func(t TB) {
		res := lookupCheckpoint(t, ops)
		if !contract.WorkspaceCheckpointLookupResultMatchesRequest(cpReq, res) || digest(t, res.Checkpoint) != digest(t, checkpoint) {
			t.Errorf("a checkpoint lookup answered %s, want found with the original checkpoint", res.Status)
		}
	})
	t.Step("checkpoint-conflict", func(t TB) {
		changed, err := contract.NewWorkspaceCheckpointRequest(cpReq.IdempotencyKey,
			contract.WorkspaceCheckpointMaterial{Source: run, Name: ptr("providertest-checkpoint-changed"), Metadata: metadata})
		if err != nil {
			t.Fatal(err)
		}
		res, err := ops.Checkpoint(ctx, changed)
		checkpointResult(t, res, err)
		if res.Status != contract.BranchingConflict || res.ExistingRequestDigest == nil || *res.ExistingRequestDigest != cpReq.RequestDigest {
			t.Errorf("a changed checkpoint under the same key answered %s, want conflict naming %s", res.Status, cpReq.RequestDigest)
		}
	})
	forkReq, err = contract.NewWorkspaceForkRequest("providertest-fork", contract.WorkspaceForkMaterial{Checkpoint: *checkpoint,
		Name: ptr("providertest-fork"), Metadata: metadata, Placement: placement})
	if err != nil {
		t.Fatal(err)
	}
	ok = t.Step("fork-retry", func(t TB) {
		res, err := ops.Fork(ctx, forkReq)
		forkResult(t, res, err)
		if res.Status != contract.BranchingCreated || !contract.WorkspaceForkResultMatchesRequest(forkReq, res) {
			t.Fatalf("a fork answered %s, want created matching the request", res.Status)
		}
		fork = res.Environment
		again, err := ops.Fork(ctx, forkReq)
		forkResult(t, again, err)
		if again.Status != contract.BranchingReplayed || !contract.WorkspaceForkResultMatchesRequest(forkReq, again) ||
			digest(t, again.Environment) != digest(t, fork) {
			t.Errorf("a fork retry answered %s, want replayed with the original environment", again.Status)
		}
	})
	if !ok {
		return
	}
	t.Step("fork-recovery", func(t TB) {
		res := lookupFork(t, ops)
		if !contract.WorkspaceForkLookupResultMatchesRequest(forkReq, res) || digest(t, res.Environment) != digest(t, fork) {
			t.Errorf("a fork lookup answered %s, want found with the original environment", res.Status)
		}
	})
	t.Step("fork-conflict", func(t TB) {
		changed, err := contract.NewWorkspaceForkRequest(forkReq.IdempotencyKey, contract.WorkspaceForkMaterial{Checkpoint: *checkpoint,
			Name: ptr("providertest-fork-changed"), Metadata: metadata, Placement: placement})
		if err != nil {
			t.Fatal(err)
		}
		res, err := ops.Fork(ctx, changed)
		forkResult(t, res, err)
		if res.Status != contract.BranchingConflict || res.ExistingRequestDigest == nil || *res.ExistingRequestDigest != forkReq.RequestDigest {
			t.Errorf("a changed fork under the same key answered %s, want conflict naming %s", res.Status, forkReq.RequestDigest)
		}
	})
	t.Step("branching-recovery", func(t TB) {
		bp := ability[contract.BranchingProvider](t, opts.reconnect(p), "BranchingProvider", "branching.retrySafe+lookup+cleanup")
		h, err := bp.BranchingFor(ctx, env.ID())
		if err != nil || h == nil {
			t.Fatalf("BranchingFor(%s) after a restart: %v, %v", env.ID(), h, err)
		}
		if res := lookupCheckpoint(t, h); !contract.WorkspaceCheckpointLookupResultMatchesRequest(cpReq, res) {
			t.Errorf("the recovered handle looks the checkpoint up as %s", res.Status)
		}
		if res := lookupFork(t, h); !contract.WorkspaceForkLookupResultMatchesRequest(forkReq, res) {
			t.Errorf("the recovered handle looks the fork up as %s", res.Status)
		}
		if none, err := bp.BranchingFor(ctx, "providertest-no-such-environment"); err == nil && none != nil {
			t.Error("BranchingFor an unknown environment returned a handle")
		}
		foreign := run
		foreign.EnvironmentID = "providertest-other-environment"
		other, err := contract.NewWorkspaceCheckpointRequest("providertest-foreign-checkpoint", contract.WorkspaceCheckpointMaterial{Source: foreign})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := h.Checkpoint(ctx, other); err == nil && res != nil && (res.Status == contract.BranchingCreated || res.Status == contract.BranchingReplayed) {
			t.Error("a source-scoped handle checkpointed another environment's run")
		}
	})
	cleanupRequest := func(t TB, op, kind, target, provider string) *contract.WorkspaceCleanupRequest {
		t.Helper()
		r, err := contract.NewWorkspaceCleanupRequest(op, contract.WorkspaceCleanupMaterial{Kind: kind, TargetID: target, Provider: provider})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cleanupAck := func(t TB, ack *contract.WorkspaceCleanupAcknowledgement, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("cleanup: %v", err)
		}
		if _, err := contract.Validate(contract.KindWorkspaceCleanupAcknowledgement, contract.WorkspaceCleanupAcknowledgementSchema, ack); err != nil {
			t.Fatalf("the cleanup acknowledgement is invalid: %v", err)
		}
	}
	cpCleanup := cleanupRequest(t, cpReq.IdempotencyKey+"-cleanup", contract.WorkspaceCleanupCheckpoint, checkpoint.CheckpointID, checkpoint.Provider)
	fkCleanup := cleanupRequest(t, forkReq.IdempotencyKey+"-cleanup", contract.WorkspaceCleanupFork, fork.EnvironmentID, fork.Provider)
	ownCopy := opts.Branching.ForksOwnCheckpoint
	ok = t.Step("cleanup-dependency-order", func(t TB) {
		ack, err := ops.DeleteCheckpoint(ctx, cpCleanup)
		cleanupAck(t, ack, err)
		if ownCopy {
			if ack.Status != contract.WorkspaceCleanupDeleted || !contract.WorkspaceCleanupAcknowledgementMatches(cpCleanup, ack) {
				t.Fatalf("forks own their checkpoint copy: deleting the checkpoint answered %s, want deleted", ack.Status)
			}
			cpDone = true
			if res := lookupCheckpoint(t, ops); res.Status != contract.BranchingNotFound {
				t.Errorf("a deleted checkpoint looks up as %s", res.Status)
			}
			if res := lookupFork(t, ops); res.Status != contract.BranchingFound {
				t.Errorf("deleting the checkpoint harmed its fork: the fork looks up as %s", res.Status)
			}
			return
		}
		if ack.Status != contract.WorkspaceCleanupInUse || ack.OperationID != cpCleanup.OperationID || ack.TargetID != cpCleanup.TargetID ||
			ack.Provider != cpCleanup.Provider || !slices.Contains(ack.BlockingTargetIDs, fork.EnvironmentID) ||
			contract.WorkspaceCleanupAcknowledgementMatches(cpCleanup, ack) {
			t.Fatalf("deleting a checkpoint with a live fork answered %s (blocking %v), want in_use listing %s", ack.Status, ack.BlockingTargetIDs, fork.EnvironmentID)
		}
		if lookupCheckpoint(t, ops).Status != contract.BranchingFound || lookupFork(t, ops).Status != contract.BranchingFound {
			t.Error("a blocked checkpoint cleanup must leave the checkpoint and the fork recoverable")
		}
	})
	if !ok {
		return
	}
	t.Step("cleanup-operation-conflict", func(t TB) {
		for _, tc := range []struct {
			req     *contract.WorkspaceCleanupRequest
			target  string
			destroy func(context.Context, *contract.WorkspaceCleanupRequest) (*contract.WorkspaceCleanupAcknowledgement, error)
		}{
			{fkCleanup, "providertest-different-fork-target", ops.DestroyFork},
			{cpCleanup, "providertest-different-checkpoint-target", ops.DeleteCheckpoint},
		} {
			if tc.req == fkCleanup {
				// Bind the fork cleanup's operation id first.
				ack, err := ops.DestroyFork(ctx, fkCleanup)
				cleanupAck(t, ack, err)
				if ack.Status != contract.WorkspaceCleanupDeleted || !contract.WorkspaceCleanupAcknowledgementMatches(fkCleanup, ack) {
					t.Fatalf("destroying the fork answered %s, want deleted", ack.Status)
				}
				fkDone = true
			}
			changed := cleanupRequest(t, tc.req.OperationID, tc.req.Kind, tc.target, tc.req.Provider)
			ack, err := tc.destroy(ctx, changed)
			cleanupAck(t, ack, err)
			if ack.Status != contract.WorkspaceCleanupConflict || ack.ExistingRequestDigest == nil || *ack.ExistingRequestDigest != tc.req.RequestDigest ||
				contract.WorkspaceCleanupAcknowledgementMatches(changed, ack) {
				t.Errorf("a %s cleanup of another target under the same operation id answered %s, want conflict naming %s",
					tc.req.Kind, ack.Status, tc.req.RequestDigest)
			}
		}
	})
	t.Step("confirmed-cleanup", func(t TB) {
		again, err := ops.DestroyFork(ctx, fkCleanup)
		cleanupAck(t, again, err)
		if again.Status != contract.WorkspaceCleanupAlreadyAbsent || !contract.WorkspaceCleanupAcknowledgementMatches(fkCleanup, again) {
			t.Errorf("a repeated fork cleanup answered %s, want already_absent", again.Status)
		}
		want := contract.WorkspaceCleanupDeleted
		if ownCopy {
			want = contract.WorkspaceCleanupAlreadyAbsent
		}
		ack, err := ops.DeleteCheckpoint(ctx, cpCleanup)
		cleanupAck(t, ack, err)
		if ack.Status != want || !contract.WorkspaceCleanupAcknowledgementMatches(cpCleanup, ack) {
			t.Errorf("deleting the checkpoint after its fork answered %s, want %s", ack.Status, want)
		}
		cpDone = true
		again, err = ops.DeleteCheckpoint(ctx, cpCleanup)
		cleanupAck(t, again, err)
		if again.Status != contract.WorkspaceCleanupAlreadyAbsent || !contract.WorkspaceCleanupAcknowledgementMatches(cpCleanup, again) {
			t.Errorf("a repeated checkpoint cleanup answered %s, want already_absent", again.Status)
		}
	})
	t.Step("cleanup-lookup", func(t TB) {
		if cp, fk := lookupCheckpoint(t, ops).Status, lookupFork(t, ops).Status; cp != contract.BranchingNotFound || fk != contract.BranchingNotFound {
			t.Errorf("cleaned resources look up as %s and %s, want not_found", cp, fk)
		}
	})
}
