package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// expose returns e as the type whose optional methods are exactly the
// abilities its capability document (its own, else the server's)
// declares, so a caller's type assertions agree with the document.
func (p *Provider) expose(ctx context.Context, e *environment) (contract.Environment, error) {
	c := e.Capabilities()
	if c == nil {
		var err error
		if c, err = p.served(ctx); err != nil {
			return nil, err
		}
	}
	switch interact, observe := c.Interactions != nil, c.Observation != nil; {
	case interact && observe:
		return interactingObservedEnv{e}, nil
	case interact:
		return interactingEnv{e}, nil
	case observe:
		return observedEnv{e}, nil
	}
	return e, nil
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

type (
	interactingEnv         struct{ *environment }
	observedEnv            struct{ *environment }
	interactingObservedEnv struct{ *environment }
)

var (
	_ contract.InteractionResponder = interactingEnv{}
	_ contract.Observer             = observedEnv{}
	_ contract.InteractionResponder = interactingObservedEnv{}
	_ contract.Observer             = interactingObservedEnv{}
)

// RespondToInteraction implements contract.InteractionResponder.
func (e interactingEnv) RespondToInteraction(ctx context.Context, cmd *contract.InteractionResponseCommand) (*contract.InteractionAcknowledgement, error) {
	return e.respond(ctx, cmd)
}

// Observe implements contract.Observer.
func (e observedEnv) Observe(ctx context.Context) (*contract.EnvironmentObservation, error) {
	return e.observe(ctx)
}

// RespondToInteraction implements contract.InteractionResponder.
func (e interactingObservedEnv) RespondToInteraction(ctx context.Context, cmd *contract.InteractionResponseCommand) (*contract.InteractionAcknowledgement, error) {
	return e.respond(ctx, cmd)
}

// Observe implements contract.Observer.
func (e interactingObservedEnv) Observe(ctx context.Context) (*contract.EnvironmentObservation, error) {
	return e.observe(ctx)
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
