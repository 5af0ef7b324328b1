package remote

import (
	"context"
	"errors"
	"net/http"
	"time"

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
	return roundTrip(ctx, p, exchange{method: http.MethodPost, path: wire.PathProfileValidation,
		body: wire.ProfileValidationRequest{Profile: ref}, what: "the profile validation request", answer: "profile validation",
		max: wire.MaxProfileBodyBytes, timeout: p.opts.CallTimeout, retry: true}, wire.ParseProfileValidation)
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
	return roundTrip(ctx, e.p, exchange{method: http.MethodPost, path: envPath(e.doc.ID) + "/interactions",
		body: cmd, what: "the interaction response", answer: "interaction acknowledgement",
		timeout: e.p.opts.CallTimeout, retry: true}, wire.ParseInteractionAcknowledgement)
}

// observe reads the environment's observation from the server.
func (e *environment) observe(ctx context.Context) (*contract.EnvironmentObservation, error) {
	return roundTrip(ctx, e.p, exchange{method: http.MethodGet, path: envPath(e.doc.ID) + "/observation",
		answer: "observation", timeout: e.p.opts.CallTimeout, retry: true}, wire.ParseEnvironmentObservation)
}

// Effects reads the served provider's own counts of its durable effects
// (wire.PathEffects); a provider that does not count them is refused
// with an error matching contract.ErrUnsupported. It has no effect, so a
// lost answer is asked again.
func (p *Provider) Effects(ctx context.Context) (map[string]int64, error) {
	res, err := roundTrip(ctx, p, exchange{method: http.MethodGet, path: wire.PathEffects,
		answer: "effects", timeout: p.opts.CallTimeout, retry: true}, wire.ParseEffects)
	if err != nil {
		return nil, err
	}
	return res.Counts, nil
}

// transferContext admits approved portable context into a fresh session
// on the server. The request's operation id binds its digest at the
// provider, so a retry after a lost answer is answered replayed with the
// original session, never a second admission. It is bounded by
// Options.CreateTimeout: it makes a session.
func (p *Provider) transferContext(ctx context.Context, req *contract.ContextTransferRequest) (*contract.ContextTransferResult, error) {
	if req == nil {
		return nil, errNilTransfer
	}
	return roundTrip(ctx, p, transfer(wire.PathContextTransfer, req, "context transfer result", p.opts.CreateTimeout),
		wire.ParseContextTransferResult)
}

// lookupContextTransfer recovers an earlier transfer's result; nil when
// the provider knows none.
func (p *Provider) lookupContextTransfer(ctx context.Context, req *contract.ContextTransferRequest) (*contract.ContextTransferResult, error) {
	if req == nil {
		return nil, errNilTransfer
	}
	res, err := roundTrip(ctx, p, transfer(wire.PathContextTransferLookup, req, "context transfer lookup", p.opts.CallTimeout),
		wire.ParseContextTransferLookup)
	if err != nil {
		return nil, err
	}
	return res.Result, nil
}

var errNilTransfer = errors.New("remote: nil context transfer request")

// transfer is the exchange that sends req to path, within
// wire.MaxProfileBodyBytes (it carries a whole context).
func transfer(path string, req *contract.ContextTransferRequest, answer string, timeout time.Duration) exchange {
	return exchange{method: http.MethodPost, path: path, body: req, what: "the context transfer request", answer: answer,
		max: wire.MaxProfileBodyBytes, timeout: timeout, retry: true}
}
