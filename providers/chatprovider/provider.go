package chatprovider

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

// Config is what differs between the vendors a Provider runs on.
type Config struct {
	// Name is the provider's name: every environment id and
	// effectiveBackend carries it.
	Name string
	// Vendor prefixes every refusal's text ("openai", "anthropic").
	Vendor string
	// Usage declares capability usage: the vendor's streams report
	// usage. Turns forward whatever usage the model reports either way.
	Usage bool
	// ErrDestroyed is matched by the error of a turn on a destroyed
	// environment; it must wrap contract.ErrDestroyed (nil is
	// contract.ErrDestroyed itself).
	ErrDestroyed error
	// CheckEffort, when set, refuses a profile's reasoning effort ("" is
	// none) the vendor cannot honour under the profile's
	// maxTotalOutputTokens (nil: none), wrapping contract.ErrUnsupported
	// and, where the vendor has one, its own typed error. It is checked at
	// create and for a turn's own profile.
	CheckEffort func(effort harness.ReasoningEffort, maxTotalOutputTokens *int64) error
	// DefaultModel is the model a turn whose profile names none requests
	// ("" refuses such a turn).
	DefaultModel string
	// StripModelPrefix, when set ("openai/"), is removed from the front
	// of the model a turn requests: profiles name models as
	// "provider/id", while vendors' APIs want the bare id.
	StripModelPrefix string
	// Dispatch returns the model one turn runs on, given what the turn
	// asks for; it is called only for a turn nothing else refused. It
	// must send nothing; an error refuses the turn before
	// dispatch and should wrap contract.ErrUnsupported (and the vendor's
	// own typed error, where it has one).
	Dispatch func(s Settings) (Turn, error)
}

// Settings is what one turn asks of the model: the model section of the
// turn's profile (its own, else the environment's), with the turn's own
// model.
type Settings struct {
	// Model is the turn's model, else the profile's model.default, else
	// Config.DefaultModel, with Config.StripModelPrefix removed; never
	// "" (such a turn is refused before Dispatch).
	Model string
	// ReasoningEffort is the profile's model.reasoningEffort; "" when it
	// names none (the vendor's own default applies).
	ReasoningEffort harness.ReasoningEffort
	// MaxTotalOutputTokens is the profile's model.maxTotalOutputTokens;
	// nil when it names none (the vendor's own default applies).
	MaxTotalOutputTokens *int64
}

// settings is what a turn of profile pr, with the turn's own model when
// not nil, asks for. A turn whose profile names no model is refused when
// the provider has no default, whatever the turn names (as before the
// provider was shared).
func (p *Provider) settings(pr *profile.Profile, model *string) (Settings, error) {
	s := Settings{Model: p.cfg.DefaultModel}
	if pr != nil && pr.Model != nil {
		m := pr.Model
		if m.Default != nil {
			s.Model = *m.Default
		}
		s.ReasoningEffort, s.MaxTotalOutputTokens = m.ReasoningEffort, m.MaxTotalOutputTokens
	}
	if s.Model == "" {
		return s, p.unsupported("the profile names no model and the provider has no default")
	}
	if model != nil {
		s.Model = *model
	}
	s.Model = strings.TrimPrefix(s.Model, p.cfg.StripModelPrefix)
	return s, nil
}

// Turn is one admitted turn's model, as Config.Dispatch returns it.
type Turn struct {
	// Model runs the turn: one Turn call with the transcript and no
	// tools.
	Model contract.ChatModel
	// Done, when set, is called once the model's sequence ended without
	// an error and without a failure, with the data of the done event it
	// may add to (openai's finishReason).
	Done func(data map[string]canonjson.Value)
}

// Provider is harness cli-base over the ChatModel Config.Dispatch
// returns: each environment is a profile bound to the vendor, each turn
// one model turn of the profile's system prompt and the turn's prompt. It
// is safe for concurrent use.
type Provider struct {
	cfg   Config
	keyed contract.KeyedCreate[*envState]

	mu  sync.Mutex
	seq int
}

var _ contract.Provider = (*Provider)(nil)

// New returns a provider configured by cfg; Name, Vendor and Dispatch
// are required, and an ErrDestroyed that does not wrap
// contract.ErrDestroyed is refused.
func New(cfg Config) (*Provider, error) {
	if cfg.Name == "" || cfg.Vendor == "" || cfg.Dispatch == nil {
		return nil, errors.New("chatprovider: Name, Vendor and Dispatch are required")
	}
	if cfg.ErrDestroyed == nil {
		cfg.ErrDestroyed = contract.ErrDestroyed
	}
	if !errors.Is(cfg.ErrDestroyed, contract.ErrDestroyed) {
		return nil, errors.New("chatprovider: ErrDestroyed must wrap contract.ErrDestroyed")
	}
	return &Provider{cfg: cfg}, nil
}

// Name implements contract.Provider.
func (p *Provider) Name() string { return p.cfg.Name }

// ProfileCapabilities is what a direct model call honours of a profile:
// the system prompt, whole. Harness cli-base has no system prompt of its
// own, so replacing it and appending to it are both exactly the system
// message the transcript carries. Nothing else of a profile can be
// applied to a bare model call: no instructions files, tools map,
// permissions, MCP servers, subagents, hooks, modes, resources or
// extensions.
func ProfileCapabilities() contract.ProfileCapabilities {
	return contract.ProfileCapabilities{SystemPrompt: harness.SystemPromptIntents{Replace: true, Append: true}}
}

// Capabilities implements contract.Provider. It declares live streaming,
// the system prompt, and usage when Config.Usage says so — nothing else:
// no workspace, sessions, detach, replay, branching, interactions,
// context transfer, placement or observation, none of which a stateless
// model call has.
func (p *Provider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	return &contract.Capabilities{
		Profile:   ProfileCapabilities(),
		Streaming: contract.StreamingCapabilities{Live: true},
		Usage:     p.cfg.Usage,
	}, nil
}

// Create implements contract.Provider. It refuses, before anything
// exists, an input it cannot honour: a profile it cannot apply (see
// CheckProfile), a catalog profile, a workspace, resources, runtime
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

// unsupported is a refusal of what: "vendor: what", wrapping
// contract.ErrUnsupported.
func (p *Provider) unsupported(what string) error {
	return fmt.Errorf("%s: %s: %w", p.cfg.Vendor, what, contract.ErrUnsupported)
}

func (p *Provider) checkCreate(in *contract.CreateInput) error {
	var errs []error
	refuse := func(present bool, what string) {
		if present {
			errs = append(errs, p.unsupported(what+" cannot be honoured by a bare completion endpoint"))
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
	if err := p.CheckProfile(in.Profile.Inline); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckProfile refuses a profile this provider cannot apply exactly:
// what contract.CheckProfileSupport refuses against
// ProfileCapabilities, another harness than cli-base, seats (a chain of
// providers), connections, confidential execution, token ceilings for
// visible or reasoning tokens alone (a model call bounds its output as a
// whole: only maxTotalOutputTokens), and a reasoning effort
// Config.CheckEffort refuses. A nil profile is accepted.
func (p *Provider) CheckProfile(pr *profile.Profile) error {
	if pr == nil {
		return nil
	}
	caps := ProfileCapabilities()
	var errs []error
	if err := contract.CheckProfileSupport(&caps, pr); err != nil {
		errs = append(errs, err)
	}
	if pr.Harness != "" && pr.Harness != harness.CLIBase {
		errs = append(errs, p.unsupported(fmt.Sprintf("harness %s (this provider is %s)", pr.Harness, harness.CLIBase)))
	}
	if len(pr.Seats) > 0 {
		errs = append(errs, p.unsupported("seats (run the provider-facing projection of one stage)"))
	}
	if len(pr.Connections) > 0 {
		errs = append(errs, p.unsupported("connections"))
	}
	if pr.Confidential != nil {
		errs = append(errs, p.unsupported("confidential execution"))
	}
	if m := pr.Model; m != nil {
		if p.cfg.CheckEffort != nil {
			if err := p.cfg.CheckEffort(m.ReasoningEffort, m.MaxTotalOutputTokens); err != nil {
				errs = append(errs, err)
			}
		}
		if m.MaxVisibleOutputTokens != nil {
			errs = append(errs, p.unsupported("model.maxVisibleOutputTokens (the endpoint bounds visible and reasoning tokens together)"))
		}
		if m.MaxReasoningTokens != nil {
			errs = append(errs, p.unsupported("model.maxReasoningTokens (the endpoint bounds visible and reasoning tokens together)"))
		}
	}
	return errors.Join(errs...)
}

func (p *Provider) provision(in *contract.CreateInput) *envState {
	p.mu.Lock()
	p.seq++
	id := fmt.Sprintf("%s-env-%d", p.cfg.Name, p.seq)
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

// envState is one environment: a profile bound to the vendor.
type envState struct {
	id, name, key string
	profile       *profile.Profile
	metadata      map[string]canonjson.Value

	mu        sync.Mutex
	turns     int
	destroyed bool
}
