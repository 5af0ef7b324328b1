package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/profile"
)

//go:generate go run gen_exposure.go

// Exposed reads the server's capability document and returns a provider
// for the same server whose optional provider methods are exactly the
// abilities the document declares (profile.validation), so a caller's
// type assertion on contract.ProfileValidator agrees with it.
func (p *Provider) Exposed(ctx context.Context) (contract.Provider, error) {
	q := &Provider{opts: p.opts, base: p.base, client: p.client, exposed: true}
	c, err := q.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	return provExposed(q, provMask(c)), nil
}

// validateProfile asks the server to validate a profile reference.
func (p *Provider) validateProfile(ctx context.Context, ref profile.Ref) (*contract.ProfileValidation, error) {
	body, err := wire.Marshal(wire.ProfileValidationRequest{Profile: ref})
	if err != nil {
		return nil, fmt.Errorf("remote: the profile has no JSON form: %w", err)
	}
	if len(body) > wire.MaxProfileBodyBytes {
		return nil, fmt.Errorf("remote: the profile validation request is larger than %d bytes", wire.MaxProfileBodyBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.CallTimeout)
	defer cancel()
	out, _, err := p.call(ctx, http.MethodPost, wire.PathProfileValidation, body, true)
	if err != nil {
		return nil, err
	}
	res, err := wire.ParseProfileValidation(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's profile validation: %w", err)
	}
	return res, nil
}

// expose returns e as the type whose optional methods are exactly the
// abilities its capability document (its own, else the server's)
// declares, so a caller's type assertions agree with the document.
func (p *Provider) expose(ctx context.Context, e *environment) (contract.Environment, error) {
	c, err := e.caps(ctx)
	if err != nil {
		return nil, err
	}
	return envExposed(e, envMask(c)), nil
}

// caps is the environment's own capability document, else the server's.
func (e *environment) caps(ctx context.Context) (*contract.Capabilities, error) {
	if c := e.Capabilities(); c != nil {
		return c, nil
	}
	return e.p.served(ctx)
}

// served is the server's capability document, read once.
func (p *Provider) served(ctx context.Context) (*contract.Capabilities, error) {
	p.mu.Lock()
	c := p.caps
	p.mu.Unlock()
	if c != nil {
		return c, nil
	}
	return p.Capabilities(ctx)
}

// respond sends an interaction answer. A retry after a lost answer
// re-sends the same command, which the provider acknowledges as a replay
// of the same operation.
func (e *environment) respond(ctx context.Context, cmd *contract.InteractionResponseCommand) (*contract.InteractionAcknowledgement, error) {
	if cmd == nil {
		return nil, errors.New("remote: nil interaction response command")
	}
	body, err := wire.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("remote: the interaction response has no JSON form: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.p.opts.CallTimeout)
	defer cancel()
	out, _, err := e.p.call(ctx, http.MethodPost, envPath(e.doc.ID)+"/interactions", body, true)
	if err != nil {
		return nil, err
	}
	ack, err := wire.ParseInteractionAcknowledgement(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's interaction acknowledgement: %w", err)
	}
	return ack, nil
}

// observe reads the environment's observation from the server.
func (e *environment) observe(ctx context.Context) (*contract.EnvironmentObservation, error) {
	ctx, cancel := context.WithTimeout(ctx, e.p.opts.CallTimeout)
	defer cancel()
	out, _, err := e.p.call(ctx, http.MethodGet, envPath(e.doc.ID)+"/observation", nil, true)
	if err != nil {
		return nil, err
	}
	obs, err := wire.ParseEnvironmentObservation(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's observation: %w", err)
	}
	return obs, nil
}

// Effects reads the served provider's own counts of its durable effects
// (wire.PathEffects); a provider that does not count them is refused
// with an error matching contract.ErrUnsupported. It has no effect, so a
// lost answer is asked again.
func (p *Provider) Effects(ctx context.Context) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.CallTimeout)
	defer cancel()
	out, _, err := p.call(ctx, http.MethodGet, wire.PathEffects, nil, true)
	if err != nil {
		return nil, err
	}
	res, err := wire.ParseEffects(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's effects: %w", err)
	}
	return res.Counts, nil
}

// transferContext admits approved portable context into a fresh session
// on the server. The request's operation id binds its digest at the
// provider, so a retry after a lost answer is answered replayed with the
// original session, never a second admission. It is bounded by
// Options.CreateTimeout: it makes a session.
func (p *Provider) transferContext(ctx context.Context, req *contract.ContextTransferRequest) (*contract.ContextTransferResult, error) {
	body, err := transferBody(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.CreateTimeout)
	defer cancel()
	out, _, err := p.call(ctx, http.MethodPost, wire.PathContextTransfer, body, true)
	if err != nil {
		return nil, err
	}
	res, err := wire.ParseContextTransferResult(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's context transfer result: %w", err)
	}
	return res, nil
}

// lookupContextTransfer recovers an earlier transfer's result; nil when
// the provider knows none.
func (p *Provider) lookupContextTransfer(ctx context.Context, req *contract.ContextTransferRequest) (*contract.ContextTransferResult, error) {
	body, err := transferBody(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.CallTimeout)
	defer cancel()
	out, _, err := p.call(ctx, http.MethodPost, wire.PathContextTransferLookup, body, true)
	if err != nil {
		return nil, err
	}
	res, err := wire.ParseContextTransferLookup(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's context transfer lookup: %w", err)
	}
	return res.Result, nil
}

// transferBody is req's wire form, within wire.MaxProfileBodyBytes.
func transferBody(req *contract.ContextTransferRequest) ([]byte, error) {
	if req == nil {
		return nil, errors.New("remote: nil context transfer request")
	}
	body, err := wire.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("remote: the context transfer request has no JSON form: %w", err)
	}
	if len(body) > wire.MaxProfileBodyBytes {
		return nil, fmt.Errorf("remote: the context transfer request is larger than %d bytes", wire.MaxProfileBodyBytes)
	}
	return body, nil
}
