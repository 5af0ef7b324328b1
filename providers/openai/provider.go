package openai

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// DefaultName is the provider's name when ProviderOptions.Name is empty.
const DefaultName = "openai"

// ProviderOptions configure a Provider.
type ProviderOptions struct {
	// Options configure the model the provider's turns run on; its Model
	// is the model a profile that names none gets, and its
	// ReasoningEffort and MaxCompletionTokens are replaced by each
	// profile's own.
	Options
	// Name is the provider's name ("" is DefaultName); every environment
	// and effectiveBackend it reports carries it.
	Name string
	// ReportsUsage declares capability usage: the endpoint honours
	// stream_options.include_usage, as OpenAI's does. Leave it false for
	// an endpoint that may not; its turns still forward any usage it
	// sends, and usage it does not send stays unknown either way.
	ReportsUsage bool
	// StripModelPrefix, when set ("openai/"), is removed from the front
	// of a profile's model before it is sent: profiles name models as
	// "provider/id", while OpenAI's endpoint wants the bare id. The
	// served model is compared with the profile's model by the kernel.
	StripModelPrefix string
}

// Provider is harness cli-base over an OpenAI-compatible endpoint: each
// environment is a profile bound to the endpoint, and each turn one
// streamed chat completion of the profile's system prompt and the turn's
// prompt. It declares no optional ability (see Capabilities) and is safe
// for concurrent use.
type Provider struct {
	name  string
	model *Model
	opts  ProviderOptions
	keyed contract.KeyedCreate[*envState]

	mu  sync.Mutex
	seq int
}

var _ contract.Provider = (*Provider)(nil)

// NewProvider returns a provider over the endpoint opts describe; it
// refuses what New refuses.
func NewProvider(opts ProviderOptions) (*Provider, error) {
	m, err := New(opts.Options)
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = DefaultName
	}
	return &Provider{name: name, model: m, opts: opts}, nil
}

// Name implements contract.Provider.
func (p *Provider) Name() string { return p.name }

// Model returns the chat model the provider's turns run on.
func (p *Provider) Model() *Model { return p.model }

// profileCaps is what a direct model call honours of a profile: the
// system prompt, whole. Harness cli-base has no system prompt of its own,
// so replacing it and appending to it are both exactly the system
// message the request carries. Nothing else of a profile can be applied
// to a bare completion: no instructions files, tools map, permissions,
// MCP servers, subagents, hooks, modes, resources or extensions.
func profileCaps() contract.ProfileCapabilities {
	return contract.ProfileCapabilities{SystemPrompt: harness.SystemPromptIntents{Replace: true, Append: true}}
}

// Capabilities implements contract.Provider. It declares live streaming,
// the system prompt, and usage when ProviderOptions.ReportsUsage says
// the endpoint reports it — nothing else: no workspace, sessions,
// detach, replay, branching, interactions, context transfer, placement
// or observation, none of which a stateless completion endpoint has.
func (p *Provider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	return &contract.Capabilities{
		Profile:   profileCaps(),
		Streaming: contract.StreamingCapabilities{Live: true},
		Usage:     p.opts.ReportsUsage,
	}, nil
}

// Create implements contract.Provider. It refuses, before anything
// exists, an input it cannot honour: a profile it cannot apply (see
// checkProfile), a catalog profile, a workspace, resources, runtime
// attachments, environment variables, secrets, egress, a billing owner, a
// backend or a requested id. With an idempotency key the same input
// returns the same environment and a changed one is refused.
func (p *Provider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if in == nil {
		in = &contract.CreateInput{}
	}
	if err := p.checkCreate(in); err != nil {
		return nil, err
	}
	st, creation, err := p.keyed.Do(ctx, in, func(ctx context.Context, in *contract.CreateInput) (*envState, error) {
		return p.provision(in), nil
	})
	if err != nil {
		return nil, err
	}
	return &Environment{p: p, st: st, creation: creation}, nil
}

func unsupported(what string) error {
	return fmt.Errorf("openai: %s: %w", what, contract.ErrUnsupported)
}

func (p *Provider) checkCreate(in *contract.CreateInput) error {
	var errs []error
	refuse := func(present bool, what string) {
		if present {
			errs = append(errs, unsupported(what+" cannot be honoured by a bare completion endpoint"))
		}
	}
	refuse(in.Profile.Inline == nil && in.Profile.CatalogID != "", "a catalog profile (no profile catalog)")
	refuse(in.RuntimeAttachments != nil, "runtime attachments")
	refuse(in.RequestedID != nil, "a requested environment id")
	refuse(in.Backend != nil, "a backend")
	refuse(in.Workspace != nil, "a workspace")
	refuse(in.Resources != nil, "resources")
	refuse(len(in.Env) > 0, "environment variables")
	refuse(in.Secrets != nil, "secrets")
	refuse(in.Egress != nil, "an egress policy")
	refuse(in.BillingOwner != nil, "a billing owner")
	if err := p.checkProfile(in.Profile.Inline); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkProfile refuses a profile this provider cannot apply exactly:
// what contract.CheckProfileSupport refuses against profileCaps, another
// harness than cli-base, seats (a chain of providers), a reasoning effort
// cli-base cannot express, token ceilings the endpoint cannot enforce
// separately (visible, reasoning), connections and confidential
// execution.
func (p *Provider) checkProfile(pr *profile.Profile) error {
	if pr == nil {
		return nil
	}
	caps := profileCaps()
	var errs []error
	if err := contract.CheckProfileSupport(&caps, pr); err != nil {
		errs = append(errs, err)
	}
	if pr.Harness != "" && pr.Harness != harness.CLIBase {
		errs = append(errs, unsupported(fmt.Sprintf("harness %s (this provider is %s)", pr.Harness, harness.CLIBase)))
	}
	if len(pr.Seats) > 0 {
		errs = append(errs, unsupported("seats (run the provider-facing projection of one stage)"))
	}
	if len(pr.Connections) > 0 {
		errs = append(errs, unsupported("connections"))
	}
	if pr.Confidential != nil {
		errs = append(errs, unsupported("confidential execution"))
	}
	if m := pr.Model; m != nil {
		if _, err := nativeEffort(m.ReasoningEffort); err != nil {
			errs = append(errs, fmt.Errorf("openai: %w", err))
		}
		if m.MaxVisibleOutputTokens != nil {
			errs = append(errs, unsupported("model.maxVisibleOutputTokens (the endpoint bounds visible and reasoning tokens together)"))
		}
		if m.MaxReasoningTokens != nil {
			errs = append(errs, unsupported("model.maxReasoningTokens (the endpoint bounds visible and reasoning tokens together)"))
		}
	}
	return errors.Join(errs...)
}

func (p *Provider) provision(in *contract.CreateInput) *envState {
	p.mu.Lock()
	p.seq++
	id := fmt.Sprintf("%s-env-%d", p.name, p.seq)
	p.mu.Unlock()
	st := &envState{id: id, profile: in.Profile.Inline, metadata: maps.Clone(in.Metadata)}
	if in.Name != nil {
		st.name = *in.Name
	}
	if in.IdempotencyKey != nil {
		st.key = in.Key()
	}
	return st
}

// request returns the turn settings for profile pr: its model (or the
// options'), reasoning effort and output ceiling.
func (p *Provider) request(pr *profile.Profile) (request, error) {
	r := request{model: p.opts.Model, maxTokens: p.opts.MaxCompletionTokens, effort: p.model.effort}
	if pr != nil && pr.Model != nil {
		m := pr.Model
		if m.Default != nil {
			r.model = *m.Default
		}
		if m.ReasoningEffort != "" {
			e, err := nativeEffort(m.ReasoningEffort)
			if err != nil {
				return r, err
			}
			r.effort = e
		}
		if m.MaxTotalOutputTokens != nil {
			r.maxTokens = m.MaxTotalOutputTokens
		}
	}
	if r.model == "" {
		return r, unsupported("the profile names no model and the provider has no default")
	}
	if pre := p.opts.StripModelPrefix; pre != "" {
		r.model = strings.TrimPrefix(r.model, pre)
	}
	return r, nil
}

// envState is one environment: a profile bound to the endpoint.
type envState struct {
	id, name, key string
	profile       *profile.Profile
	metadata      map[string]canonjson.Value

	mu        sync.Mutex
	turns     int
	destroyed bool
}
