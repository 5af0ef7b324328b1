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
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	call, err := wire.ParseCheckpointCall(body)
	if err != nil {
		writeError(w, wire.FromSchemaError(err))
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
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, ref)
}

// fork forks a legacy checkpoint (branching.fork) into a new environment
// this server keeps, once per operation id and request: a re-send is
// answered with the recorded fork, never a second environment.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	call, err := wire.ParseForkCall(body)
	if err != nil {
		writeError(w, wire.FromSchemaError(err))
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
