package remote

import (
	"context"
	"errors"
	"fmt"
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
	body, err := wire.Marshal(wire.CheckpointCall{OperationID: "remote-" + randomID(), Request: in})
	if err != nil {
		return nil, fmt.Errorf("remote: the checkpoint request has no JSON form: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.p.opts.CreateTimeout)
	defer cancel()
	out, _, err := e.p.call(ctx, http.MethodPost, envPath(e.doc.ID)+"/checkpoints", body, true)
	if err != nil {
		return nil, err
	}
	ref, err := wire.ParseCheckpointRef(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's checkpoint: %w", err)
	}
	return ref, nil
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
	body, err := wire.Marshal(wire.ForkCall{OperationID: "remote-" + randomID(), From: *from, Request: in})
	if err != nil {
		return nil, fmt.Errorf("remote: the fork request has no JSON form: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.p.opts.CreateTimeout)
	defer cancel()
	out, _, err := e.p.call(ctx, http.MethodPost, envPath(e.doc.ID)+"/forks", body, true)
	if err != nil {
		return nil, err
	}
	doc, err := wire.ParseEnvironment(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's fork: %w", err)
	}
	return e.p.expose(ctx, &environment{p: e.p, doc: *doc})
}
