package sidecar

import (
	"context"
	"net/http"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// checkpoint takes a legacy checkpoint (branching.checkpoint) once per
// operation id and request: a re-send is answered with the recorded
// checkpoint, never a second one.
func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request) {
	call, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseCheckpointCall)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.base, s.opts.CreateTimeout)
	defer cancel()
	id := r.PathValue("id")
	cp, ok := ability[contract.LegacyCheckpointer](w, s.lookup(ctx, id), "branching.checkpoint")
	if !ok {
		return
	}
	digest, err := contract.DigestOf(struct {
		EnvironmentID string                     `json:"environmentId"`
		Request       contract.CheckpointRequest `json:"request"`
	}{id, call.Request})
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	ref, _, err := s.checkpoints.Do(ctx, id+"\x00"+call.OperationID, digest, func(ctx context.Context) (*contract.CheckpointRef, error) {
		ref, err := cp.Checkpoint(ctx, &call.Request)
		if err == nil && ref == nil {
			err = errNoAnswer
		}
		return ref, err
	})
	answer(w, ref, err)
}

// fork forks a legacy checkpoint (branching.fork) into a new environment
// this server keeps, once per operation id and request: a re-send is
// answered with the recorded fork, never a second environment.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	call, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseForkCall)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.base, s.opts.CreateTimeout)
	defer cancel()
	id := r.PathValue("id")
	fk, ok := ability[contract.LegacyForker](w, s.lookup(ctx, id), "branching.fork")
	if !ok {
		return
	}
	digest, err := contract.DigestOf(struct {
		EnvironmentID string                 `json:"environmentId"`
		From          contract.CheckpointRef `json:"from"`
		Request       contract.ForkRequest   `json:"request"`
	}{id, call.From, call.Request})
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	doc, _, err := s.forks.Do(ctx, id+"\x00"+call.OperationID, digest, func(ctx context.Context) (wire.Environment, error) {
		env, err := fk.Fork(ctx, &call.From, &call.Request)
		if err == nil && env == nil {
			err = errNoAnswer
		}
		if err != nil {
			return wire.Environment{}, err
		}
		return s.keep(ctx, env), nil
	})
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	if env := s.lookup(ctx, doc.ID); env != nil {
		doc = s.describe(ctx, env)
	}
	writeJSON(w, http.StatusOK, doc)
}

// branchingRoute serves one durable branching operation: it decodes the
// body with parse, finds the source environment's branching through the
// provider (BranchingFor, so a restarted server recovers it), and answers
// with op's result. An effect runs on the server's context, bounded by
// CreateTimeout, so a client that lost the answer and re-sends the same
// request is answered replayed by the provider; a lookup is bounded by
// the request.
func branchingRoute[Req, Res any](s *Server, parse func([]byte) (*Req, error), effect bool,
	op func(context.Context, contract.WorkspaceBranching, *Req) (*Res, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, ok := readCall(s, w, r, s.opts.MaxBodyBytes, parse)
		if !ok {
			return
		}
		bp, ok := s.p.(contract.BranchingProvider)
		if !ok {
			writeError(w, wire.ErrorDetail{Code: wire.CodeUnsupported, Message: "the provider does not offer durable branching"})
			return
		}
		ctx, cancel := s.callContext(r)
		if effect {
			ctx, cancel = context.WithTimeout(s.base, s.opts.CreateTimeout)
		}
		defer cancel()
		br, err := bp.BranchingFor(ctx, r.PathValue("id"))
		if err != nil {
			writeError(w, providerError(err))
			return
		}
		if br == nil {
			writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such source environment"})
			return
		}
		res, err := op(ctx, br, req)
		answer(w, res, err)
	}
}

// routeBranching registers the durable branching routes.
func (s *Server) routeBranching(post func(string, http.HandlerFunc)) {
	post(wire.RouteBranchingCheckpoint, branchingRoute(s, wire.ParseWorkspaceCheckpointRequest, true,
		func(ctx context.Context, b contract.WorkspaceBranching, q *contract.WorkspaceCheckpointRequest) (*contract.WorkspaceCheckpointResult, error) {
			return b.Checkpoint(ctx, q)
		}))
	post(wire.RouteBranchingCheckpointLookup, branchingRoute(s, wire.ParseWorkspaceOperationLookupRequest, false,
		func(ctx context.Context, b contract.WorkspaceBranching, q *contract.WorkspaceOperationLookupRequest) (*contract.WorkspaceCheckpointLookupResult, error) {
			return b.LookupCheckpoint(ctx, *q)
		}))
	post(wire.RouteBranchingCheckpointDelete, branchingRoute(s, wire.ParseWorkspaceCleanupRequest, true,
		func(ctx context.Context, b contract.WorkspaceBranching, q *contract.WorkspaceCleanupRequest) (*contract.WorkspaceCleanupAcknowledgement, error) {
			return b.DeleteCheckpoint(ctx, q)
		}))
	post(wire.RouteBranchingFork, branchingRoute(s, wire.ParseWorkspaceForkRequest, true,
		func(ctx context.Context, b contract.WorkspaceBranching, q *contract.WorkspaceForkRequest) (*contract.WorkspaceForkResult, error) {
			return b.Fork(ctx, q)
		}))
	post(wire.RouteBranchingForkLookup, branchingRoute(s, wire.ParseWorkspaceOperationLookupRequest, false,
		func(ctx context.Context, b contract.WorkspaceBranching, q *contract.WorkspaceOperationLookupRequest) (*contract.WorkspaceForkLookupResult, error) {
			return b.LookupFork(ctx, *q)
		}))
	post(wire.RouteBranchingForkDestroy, branchingRoute(s, wire.ParseWorkspaceCleanupRequest, true,
		func(ctx context.Context, b contract.WorkspaceBranching, q *contract.WorkspaceCleanupRequest) (*contract.WorkspaceCleanupAcknowledgement, error) {
			return b.DestroyFork(ctx, q)
		}))
}
