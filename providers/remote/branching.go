package remote

import (
	"context"
	"errors"
	"net/http"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// checkpoint takes a legacy checkpoint on the server under an operation
// id minted for this call: a re-send after a lost answer is answered with
// the recorded checkpoint, never a second one.
func (e *environment) checkpoint(ctx context.Context, req *contract.CheckpointRequest) (*contract.CheckpointRef, error) {
	var in contract.CheckpointRequest
	if req != nil {
		in = *req
	}
	return roundTrip(ctx, e.p, exchange{method: http.MethodPost, path: envPath(e.doc.ID) + "/checkpoints",
		body: wire.CheckpointCall{OperationID: "remote-" + randomID(), Request: in}, what: "the checkpoint request", answer: "checkpoint",
		timeout: e.p.opts.CreateTimeout, retry: true}, wire.ParseCheckpointRef)
}

// fork forks a legacy checkpoint into a new environment on the server
// under an operation id minted for this call: a re-send after a lost
// answer is answered with the recorded fork, never a second environment.
func (e *environment) fork(ctx context.Context, from *contract.CheckpointRef, req *contract.ForkRequest) (contract.Environment, error) {
	if from == nil {
		return nil, errors.New("remote: nil checkpoint to fork")
	}
	var in contract.ForkRequest
	if req != nil {
		in = *req
	}
	doc, err := roundTrip(ctx, e.p, exchange{method: http.MethodPost, path: envPath(e.doc.ID) + "/forks",
		body: wire.ForkCall{OperationID: "remote-" + randomID(), From: *from, Request: in}, what: "the fork request", answer: "fork",
		timeout: e.p.opts.CreateTimeout, retry: true}, wire.ParseEnvironment)
	if err != nil {
		return nil, err
	}
	return e.p.expose(ctx, &environment{p: e.p, doc: *doc})
}

// branching is durable workspace branching of one source environment on
// the server. Every effect carries its own idempotency (a checkpoint's or
// fork's key and digest, a cleanup's operation id and digest), so a lost
// answer is re-sent and answered replayed, never applied twice.
type branching struct {
	p  *Provider
	id string
}

// workspaceBranching is the environment's durable branching.
func (e *environment) workspaceBranching() contract.WorkspaceBranching {
	return &branching{p: e.p, id: e.doc.ID}
}

// branchingFor recovers durable branching for a source environment the
// server knows; nil when it knows none.
func (p *Provider) branchingFor(ctx context.Context, sourceEnvironmentID string) (contract.WorkspaceBranching, error) {
	if _, err := p.get(ctx, sourceEnvironmentID); err != nil {
		if errors.Is(err, wire.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return &branching{p: p, id: sourceEnvironmentID}, nil
}

// branchingCall sends one durable branching request to the route suffix
// and decodes the answer with parse. An effect is bounded by
// Options.CreateTimeout, a lookup by Options.CallTimeout.
func branchingCall[T any](ctx context.Context, b *branching, suffix string, req any, effect bool, parse func([]byte) (*T, error)) (*T, error) {
	if req == nil {
		return nil, errors.New("remote: nil branching request")
	}
	limit := b.p.opts.CallTimeout
	if effect {
		limit = b.p.opts.CreateTimeout
	}
	return roundTrip(ctx, b.p, exchange{method: http.MethodPost, path: envPath(b.id) + "/branching/" + suffix,
		body: req, what: "the branching request", answer: suffix + " answer", timeout: limit, retry: true}, parse)
}

// Checkpoint implements contract.WorkspaceBranching.
func (b *branching) Checkpoint(ctx context.Context, req *contract.WorkspaceCheckpointRequest) (*contract.WorkspaceCheckpointResult, error) {
	if req == nil {
		return nil, errors.New("remote: nil checkpoint request")
	}
	return branchingCall(ctx, b, "checkpoint", req, true, wire.ParseWorkspaceCheckpointResult)
}

// LookupCheckpoint implements contract.WorkspaceBranching.
func (b *branching) LookupCheckpoint(ctx context.Context, req contract.WorkspaceOperationLookupRequest) (*contract.WorkspaceCheckpointLookupResult, error) {
	return branchingCall(ctx, b, "checkpoint-lookup", &req, false, wire.ParseWorkspaceCheckpointLookupResult)
}

// DeleteCheckpoint implements contract.WorkspaceBranching.
func (b *branching) DeleteCheckpoint(ctx context.Context, req *contract.WorkspaceCleanupRequest) (*contract.WorkspaceCleanupAcknowledgement, error) {
	if req == nil {
		return nil, errors.New("remote: nil cleanup request")
	}
	return branchingCall(ctx, b, "checkpoint-delete", req, true, wire.ParseWorkspaceCleanupAcknowledgement)
}

// Fork implements contract.WorkspaceBranching.
func (b *branching) Fork(ctx context.Context, req *contract.WorkspaceForkRequest) (*contract.WorkspaceForkResult, error) {
	if req == nil {
		return nil, errors.New("remote: nil fork request")
	}
	return branchingCall(ctx, b, "fork", req, true, wire.ParseWorkspaceForkResult)
}

// LookupFork implements contract.WorkspaceBranching.
func (b *branching) LookupFork(ctx context.Context, req contract.WorkspaceOperationLookupRequest) (*contract.WorkspaceForkLookupResult, error) {
	return branchingCall(ctx, b, "fork-lookup", &req, false, wire.ParseWorkspaceForkLookupResult)
}

// DestroyFork implements contract.WorkspaceBranching.
func (b *branching) DestroyFork(ctx context.Context, req *contract.WorkspaceCleanupRequest) (*contract.WorkspaceCleanupAcknowledgement, error) {
	if req == nil {
		return nil, errors.New("remote: nil cleanup request")
	}
	return branchingCall(ctx, b, "fork-destroy", req, true, wire.ParseWorkspaceCleanupAcknowledgement)
}
