package scripted

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// branchState is the durable branching state of one source environment:
// checkpoints and forks by idempotency key, and cleanup operations by
// operation id. It is guarded by the source environment's lock.
type branchState struct {
	seq         int
	checkpoints map[string]*checkpointRecord
	forks       map[string]*forkRecord
	cleanups    map[string]string
}

type checkpointRecord struct {
	digest  string
	ref     contract.WorkspaceCheckpointRef
	files   map[string]string
	deleted bool
}

type forkRecord struct {
	digest        string
	ref           contract.ForkedEnvironmentRef
	env           *envState
	checkpointKey string
	destroyed     bool
}

// gone reports whether the fork was cleaned up or its environment
// destroyed.
func (f *forkRecord) gone() bool { return f.destroyed || f.env.isDestroyed() }

// ErrOutOfScope is wrapped by a durable branching request about another
// source environment than the handle's. It wraps contract.ErrOutOfScope,
// so a served refusal keeps its meaning across the wire.
var ErrOutOfScope = fmt.Errorf("scripted: %w", contract.ErrOutOfScope)

// branching is the durable branching facet of one source environment.
type branching struct {
	p  *Provider
	st *envState
}

var _ contract.WorkspaceBranching = (*branching)(nil)

// WorkspaceBranching implements contract.DurableBrancher: the durable
// branching facet of this environment as the source (see BranchingFor).
func (e *environment) WorkspaceBranching() contract.WorkspaceBranching {
	return &branching{p: e.p, st: e.st}
}

// BranchingFor implements contract.BranchingProvider: after a restart, a
// source-scoped handle on the durable branching of the environment with
// id, which recovers every earlier operation (lookups, replays, cleanup)
// and refuses resources of other environments; nil when no live
// environment has that id.
//
// The facet's semantics: checkpoint and fork requests are keyed and
// digest-bound (the same request again is replayed with the original
// resource; a changed request under a used key is a conflict naming the
// original digest; a retry after the resource was cleaned up is unknown,
// not retryable); a checkpoint is a snapshot of the workspace files at an
// exact run of the source environment; a fork is a new environment with
// that snapshot, placed locally, never confidential. Deleting a
// checkpoint with live forks answers in_use listing them and deletes
// nothing, unless the provider was built with ForksOwnCheckpoints.
// Cleanup operation ids are keyed too; a repeated cleanup is
// already_absent and lookups after cleanup are not_found.
func (p *Provider) BranchingFor(ctx context.Context, sourceEnvironmentID string) (contract.WorkspaceBranching, error) {
	st := p.b.env(sourceEnvironmentID)
	if st == nil || st.isDestroyed() {
		return nil, nil
	}
	return &branching{p: p, st: st}, nil
}

func (br *branching) now() string { return timestamp(br.st.b.now()) }

// Checkpoint implements contract.WorkspaceBranching.
func (br *branching) Checkpoint(ctx context.Context, req *contract.WorkspaceCheckpointRequest) (*contract.WorkspaceCheckpointResult, error) {
	if req == nil {
		return nil, errors.New("scripted: no checkpoint request")
	}
	if _, err := contract.Validate(contract.KindWorkspaceCheckpointRequest, contract.WorkspaceCheckpointRequestSchema, req); err != nil {
		return nil, err
	}
	st := br.st
	if req.Source.EnvironmentID != st.id || req.Source.Provider != st.b.name {
		return nil, fmt.Errorf("%w: source %s/%s", ErrOutOfScope, req.Source.Provider, req.Source.EnvironmentID)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		return nil, st.gone()
	}
	res := &contract.WorkspaceCheckpointResult{IdempotencyKey: req.IdempotencyKey, RequestDigest: req.RequestDigest}
	if rec := st.branching.checkpoints[req.IdempotencyKey]; rec != nil {
		switch {
		case rec.digest != req.RequestDigest:
			res.Status, res.ExistingRequestDigest = contract.BranchingConflict, ptr(rec.digest)
		case rec.deleted:
			res.Status, res.Message, res.Retryable = contract.BranchingUnknown, ptr("the checkpoint made under this key was deleted"), ptr(false)
		default:
			ref := rec.ref
			res.Status, res.Checkpoint = contract.BranchingReplayed, &ref
		}
		return res, nil
	}
	run := st.runs[req.Source.RunID]
	if run == nil || !contract.SameRunControlRef(run.exact(), req.Source) {
		return nil, fmt.Errorf("%w: %s", ErrUnknownRun, req.Source.RunID)
	}
	b := &st.branching
	b.seq++
	ref := contract.WorkspaceCheckpointRef{CheckpointID: fmt.Sprintf("%s-checkpoint-%d", st.id, b.seq), Provider: req.Source.Provider,
		Source: req.Source, IdempotencyKey: req.IdempotencyKey, RequestDigest: req.RequestDigest, CreatedAt: br.now(),
		Metadata: maps.Clone(req.Metadata)}
	if b.checkpoints == nil {
		b.checkpoints = map[string]*checkpointRecord{}
	}
	b.checkpoints[req.IdempotencyKey] = &checkpointRecord{digest: req.RequestDigest, ref: ref, files: maps.Clone(st.files)}
	res.Status, res.Checkpoint = contract.BranchingCreated, &ref
	return res, nil
}

// LookupCheckpoint implements contract.WorkspaceBranching.
func (br *branching) LookupCheckpoint(ctx context.Context, req contract.WorkspaceOperationLookupRequest) (*contract.WorkspaceCheckpointLookupResult, error) {
	if _, err := contract.Validate(contract.KindWorkspaceOperationLookupRequest, contract.WorkspaceOperationLookupRequestSchema, req); err != nil {
		return nil, err
	}
	st := br.st
	st.mu.Lock()
	defer st.mu.Unlock()
	res := &contract.WorkspaceCheckpointLookupResult{IdempotencyKey: req.IdempotencyKey, RequestDigest: req.RequestDigest}
	rec := st.branching.checkpoints[req.IdempotencyKey]
	switch {
	case rec == nil || rec.deleted:
		res.Status = contract.BranchingNotFound
	case rec.digest != req.RequestDigest:
		res.Status, res.ExistingRequestDigest = contract.BranchingConflict, ptr(rec.digest)
	default:
		ref := rec.ref
		res.Status, res.Checkpoint = contract.BranchingFound, &ref
	}
	return res, nil
}

// Fork implements contract.WorkspaceBranching.
func (br *branching) Fork(ctx context.Context, req *contract.WorkspaceForkRequest) (*contract.WorkspaceForkResult, error) {
	if req == nil {
		return nil, errors.New("scripted: no fork request")
	}
	if _, err := contract.Validate(contract.KindWorkspaceForkRequest, contract.WorkspaceForkRequestSchema, req); err != nil {
		return nil, err
	}
	st := br.st
	if req.Checkpoint.Source.EnvironmentID != st.id || req.Checkpoint.Provider != st.b.name {
		return nil, fmt.Errorf("%w: checkpoint %s", ErrOutOfScope, req.Checkpoint.CheckpointID)
	}
	if req.Confidential != nil && req.Confidential.Requested {
		return nil, fmt.Errorf("scripted: confidential forks: %w", contract.ErrUnsupported)
	}
	if req.Placement.Kind != "local" {
		return nil, fmt.Errorf("scripted: placement %q: %w", req.Placement.Kind, contract.ErrUnsupported)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		return nil, st.gone()
	}
	res := &contract.WorkspaceForkResult{IdempotencyKey: req.IdempotencyKey, RequestDigest: req.RequestDigest}
	if rec := st.branching.forks[req.IdempotencyKey]; rec != nil {
		switch {
		case rec.digest != req.RequestDigest:
			res.Status, res.ExistingRequestDigest = contract.BranchingConflict, ptr(rec.digest)
		case rec.gone():
			res.Status, res.Message, res.Retryable = contract.BranchingUnknown, ptr("the environment forked under this key was destroyed"), ptr(false)
		default:
			ref := rec.ref
			res.Status, res.Environment = contract.BranchingReplayed, &ref
		}
		return res, nil
	}
	var cpKey string
	var cp *checkpointRecord
	for key, rec := range st.branching.checkpoints {
		if rec.ref.CheckpointID == req.Checkpoint.CheckpointID {
			cpKey, cp = key, rec
		}
	}
	if cp == nil || cp.deleted {
		return nil, fmt.Errorf("scripted: checkpoint %s does not exist", req.Checkpoint.CheckpointID)
	}
	if same, err := sameCanonical(cp.ref, req.Checkpoint); err != nil || !same {
		return nil, fmt.Errorf("scripted: the request's checkpoint %s is not the one the provider holds", req.Checkpoint.CheckpointID)
	}
	fork, err := st.b.provision(&contract.CreateInput{Profile: profile.Ref{Inline: st.profile}, Name: req.Name, Metadata: req.Metadata}, maps.Clone(cp.files))
	if err != nil {
		return nil, err
	}
	ref := contract.ForkedEnvironmentRef{Provider: st.b.name, EnvironmentID: fork.id, SourceEnvironmentID: st.id, Source: cp.ref.Source,
		SourceCheckpointID: cp.ref.CheckpointID, IdempotencyKey: req.IdempotencyKey, RequestDigest: req.RequestDigest,
		CreatedAt: br.now(), Placement: req.Placement, Metadata: maps.Clone(req.Metadata)}
	if st.branching.forks == nil {
		st.branching.forks = map[string]*forkRecord{}
	}
	st.branching.forks[req.IdempotencyKey] = &forkRecord{digest: req.RequestDigest, ref: ref, env: fork, checkpointKey: cpKey}
	res.Status, res.Environment = contract.BranchingCreated, &ref
	return res, nil
}

// LookupFork implements contract.WorkspaceBranching.
func (br *branching) LookupFork(ctx context.Context, req contract.WorkspaceOperationLookupRequest) (*contract.WorkspaceForkLookupResult, error) {
	if _, err := contract.Validate(contract.KindWorkspaceOperationLookupRequest, contract.WorkspaceOperationLookupRequestSchema, req); err != nil {
		return nil, err
	}
	st := br.st
	st.mu.Lock()
	defer st.mu.Unlock()
	res := &contract.WorkspaceForkLookupResult{IdempotencyKey: req.IdempotencyKey, RequestDigest: req.RequestDigest}
	rec := st.branching.forks[req.IdempotencyKey]
	switch {
	case rec == nil || rec.gone():
		res.Status = contract.BranchingNotFound
	case rec.digest != req.RequestDigest:
		res.Status, res.ExistingRequestDigest = contract.BranchingConflict, ptr(rec.digest)
	default:
		ref := rec.ref
		res.Status, res.Environment = contract.BranchingFound, &ref
	}
	return res, nil
}

// cleanup checks a cleanup request of kind and binds its operation id;
// it returns the acknowledgement to send now when the operation id is
// held by another request.
func (br *branching) cleanup(req *contract.WorkspaceCleanupRequest, kind string) (*contract.WorkspaceCleanupAcknowledgement, *contract.WorkspaceCleanupAcknowledgement, error) {
	if req == nil {
		return nil, nil, errors.New("scripted: no cleanup request")
	}
	if _, err := contract.Validate(contract.KindWorkspaceCleanupRequest, contract.WorkspaceCleanupRequestSchema, req); err != nil {
		return nil, nil, err
	}
	if req.Kind != kind {
		return nil, nil, fmt.Errorf("scripted: a %s cleanup was sent to the %s cleanup operation", req.Kind, kind)
	}
	if req.Provider != br.st.b.name {
		return nil, nil, fmt.Errorf("%w: provider %s", ErrOutOfScope, req.Provider)
	}
	ack := &contract.WorkspaceCleanupAcknowledgement{OperationID: req.OperationID, WorkspaceCleanupMaterial: req.WorkspaceCleanupMaterial,
		RequestDigest: req.RequestDigest}
	b := &br.st.branching
	if existing, ok := b.cleanups[req.OperationID]; ok && existing != req.RequestDigest {
		ack.Status, ack.ExistingRequestDigest = contract.WorkspaceCleanupConflict, ptr(existing)
		ack.Message = ptr("the operation id is bound to a cleanup of another target")
		return ack, ack, nil
	}
	if b.cleanups == nil {
		b.cleanups = map[string]string{}
	}
	b.cleanups[req.OperationID] = req.RequestDigest
	return ack, nil, nil
}

// DeleteCheckpoint implements contract.WorkspaceBranching.
func (br *branching) DeleteCheckpoint(ctx context.Context, req *contract.WorkspaceCleanupRequest) (*contract.WorkspaceCleanupAcknowledgement, error) {
	st := br.st
	st.mu.Lock()
	defer st.mu.Unlock()
	ack, final, err := br.cleanup(req, contract.WorkspaceCleanupCheckpoint)
	if err != nil || final != nil {
		return final, err
	}
	var key string
	var cp *checkpointRecord
	for k, rec := range st.branching.checkpoints {
		if rec.ref.CheckpointID == req.TargetID {
			key, cp = k, rec
		}
	}
	if cp == nil || cp.deleted {
		ack.Status = contract.WorkspaceCleanupAlreadyAbsent
		return ack, nil
	}
	var blocking []string
	if !st.b.ownCopies {
		for _, f := range st.branching.forks {
			if f.checkpointKey == key && !f.gone() {
				blocking = append(blocking, f.ref.EnvironmentID)
			}
		}
	}
	if len(blocking) > 0 {
		slices.Sort(blocking)
		ack.Status, ack.BlockingTargetIDs = contract.WorkspaceCleanupInUse, blocking
		ack.Message = ptr("live forks depend on this checkpoint; destroy them first")
		return ack, nil
	}
	cp.deleted, cp.files = true, nil
	ack.Status = contract.WorkspaceCleanupDeleted
	return ack, nil
}

// DestroyFork implements contract.WorkspaceBranching.
func (br *branching) DestroyFork(ctx context.Context, req *contract.WorkspaceCleanupRequest) (*contract.WorkspaceCleanupAcknowledgement, error) {
	st := br.st
	st.mu.Lock()
	defer st.mu.Unlock()
	ack, final, err := br.cleanup(req, contract.WorkspaceCleanupFork)
	if err != nil || final != nil {
		return final, err
	}
	var fork *forkRecord
	for _, rec := range st.branching.forks {
		if rec.ref.EnvironmentID == req.TargetID {
			fork = rec
		}
	}
	if fork == nil || fork.gone() {
		ack.Status = contract.WorkspaceCleanupAlreadyAbsent
		return ack, nil
	}
	fork.destroyed = true
	fork.env.destroy()
	ack.Status = contract.WorkspaceCleanupDeleted
	return ack, nil
}
