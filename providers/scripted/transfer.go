package scripted

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// transferRecord is an admitted context transfer.
type transferRecord struct {
	digest  string
	receipt contract.ContextTransferReceipt
}

// TransferContext implements contract.ContextTransferrer: it admits an
// accepted portable context into one fresh session of the destination
// (its environment, created from the inline profile when the destination
// is unbound or names an environment that does not exist yet; its session,
// run and execution ids as the destination names them), and returns the
// receipt. The operation id is bound to the request digest: the same
// request again is replayed with the original receipt (no second session);
// a different request under the same operation id is a conflict naming
// the original digest, with no effect. A request the provider cannot
// honor (another provider's destination, a session that is not fresh) is
// refused with an error before any effect.
func (p *Provider) TransferContext(ctx context.Context, req *contract.ContextTransferRequest) (*contract.ContextTransferResult, error) {
	if req == nil {
		return nil, errors.New("scripted: no context transfer request")
	}
	if _, err := contract.Validate(contract.KindContextTransferRequest, contract.ContextTransferRequestSchema, req); err != nil {
		return nil, err
	}
	b := p.b
	b.transferMu.Lock()
	defer b.transferMu.Unlock()
	if res := p.recorded(req); res != nil {
		return res, nil
	}
	dest := req.Plan.Destination
	source := req.Plan.Source
	if dest.Provider != b.name {
		return nil, fmt.Errorf("scripted: the destination names provider %s, not %s", dest.Provider, b.name)
	}
	if dest.SessionID == source.SessionID || dest.RunID == source.RunID || dest.ExecutionID == source.ExecutionID ||
		dest.EnvironmentID != nil && *dest.EnvironmentID == source.EnvironmentID {
		return nil, errors.New("scripted: a context transfer needs a fresh session, run and execution in another environment than the source's")
	}
	transferred, err := req.Plan.Context()
	if err != nil {
		return nil, err
	}
	st, err := p.destination(ctx, req)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	_, taken := st.sessions[dest.SessionID]
	st.mu.Unlock()
	if taken {
		return nil, fmt.Errorf("scripted: session %s of %s already exists; a transfer needs a fresh session", dest.SessionID, st.id)
	}
	created := timestamp(b.now())
	run, err := st.admit(&contract.TurnInput{Model: dest.Model}, req.RequestDigest,
		&contract.ExactRunControlRef{SessionID: dest.SessionID, RunID: dest.RunID, ExecutionID: dest.ExecutionID})
	if err != nil {
		return nil, err
	}
	b.transferCount.Add(1)
	b.freshSessions.Add(1)
	ids := make([]string, 0, len(req.Plan.Messages))
	for _, m := range req.Plan.Messages {
		ids = append(ids, m.ID)
	}
	receipt := contract.ContextTransferReceipt{Status: contract.TransferStatusAccepted, OperationID: req.OperationID,
		RequestDigest: req.RequestDigest, PlanDigest: req.Plan.PlanDigest, ContextDigest: transferred.Digest, Source: source,
		Destination: dest, Provider: b.name, EnvironmentID: st.id, SessionID: dest.SessionID, RunID: dest.RunID,
		ExecutionID: dest.ExecutionID, SessionCreatedForOperationID: req.OperationID, SessionCreatedAt: created,
		TransferredMessageIDs: ids, OmittedMessageIDs: []string{}, AdmittedAt: timestamp(b.now())}
	pl := &player{env: st, run: run, now: b.now, yield: func(ev contract.EnvironmentEvent, err error) bool {
		run.record(ev, err)
		return true
	}}
	pl.emit("context.admitted", map[string]canonjson.Value{"contextDigest": canonjson.StringValue(transferred.Digest),
		"messages": canonjson.NumberValue(float64(len(ids)))}, nil, nil, "")
	pl.end(contract.CompletedEvent(nil))
	run.mu.Lock()
	stored := receipt
	run.receipt = &stored
	run.mu.Unlock()
	run.finish(context.Background())
	b.mu.Lock()
	b.transfers[req.OperationID] = &transferRecord{digest: req.RequestDigest, receipt: receipt}
	b.mu.Unlock()
	return &contract.ContextTransferResult{Receipt: &receipt}, nil
}

// recorded answers a transfer whose operation id was seen: replayed, or a
// conflict; nil for a new operation.
func (p *Provider) recorded(req *contract.ContextTransferRequest) *contract.ContextTransferResult {
	p.b.mu.Lock()
	rec := p.b.transfers[req.OperationID]
	p.b.mu.Unlock()
	switch {
	case rec == nil:
		return nil
	case rec.digest != req.RequestDigest:
		return &contract.ContextTransferResult{Conflict: &contract.ContextTransferConflict{Status: contract.TransferStatusConflict,
			OperationID: req.OperationID, RequestDigest: req.RequestDigest, ExistingRequestDigest: rec.digest}}
	}
	receipt := rec.receipt
	receipt.TransferredMessageIDs = append([]string(nil), rec.receipt.TransferredMessageIDs...)
	receipt.OmittedMessageIDs = []string{}
	receipt.Status = contract.TransferStatusReplayed
	return &contract.ContextTransferResult{Receipt: &receipt}
}

// destination returns the environment a transfer admits into, creating
// it from the request's profile, workspace and resources when needed.
func (p *Provider) destination(ctx context.Context, req *contract.ContextTransferRequest) (*envState, error) {
	dest := req.Plan.Destination
	if dest.EnvironmentID != nil {
		if st := p.b.env(*dest.EnvironmentID); st != nil {
			if st.isDestroyed() {
				return nil, st.gone()
			}
			return st, nil
		}
	}
	if req.Profile == nil {
		return nil, fmt.Errorf("scripted: environment %s does not exist and the transfer carries no profile to create it", *dest.EnvironmentID)
	}
	in := &contract.CreateInput{Profile: profile.Ref{Inline: req.Profile}, RequestedID: dest.EnvironmentID}
	if req.Workspace != nil {
		v, err := canonjson.ToValue(req.Workspace)
		if err != nil {
			return nil, err
		}
		if in.Workspace, err = contract.FromValue[contract.WorkspaceRequest](contract.KindWorkspaceRequest, contract.WorkspaceRequestSchema, v); err != nil {
			return nil, err
		}
	}
	if req.Resources != nil {
		v, err := canonjson.ToValue(req.Resources)
		if err != nil {
			return nil, err
		}
		if in.Resources, err = contract.FromValue[contract.ResourceRequest](contract.KindResourceRequest, contract.ResourceRequestSchema, v); err != nil {
			return nil, err
		}
	}
	if err := p.checkCreate(ctx, in); err != nil {
		return nil, err
	}
	return p.b.provision(in, nil)
}

// LookupContextTransfer implements contract.ContextTransferrer: the
// result of an earlier transfer with this operation id (its receipt,
// replayed, or a conflict when the request differs), recovered also by a
// reconnected client; nil when the operation is unknown.
func (p *Provider) LookupContextTransfer(ctx context.Context, req *contract.ContextTransferRequest) (*contract.ContextTransferResult, error) {
	if req == nil {
		return nil, errors.New("scripted: no context transfer request")
	}
	if _, err := contract.Validate(contract.KindContextTransferRequest, contract.ContextTransferRequestSchema, req); err != nil {
		return nil, err
	}
	return p.recorded(req), nil
}
