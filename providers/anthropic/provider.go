package anthropic

import (
	"fmt"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/providers/chatprovider"
)

// DefaultName is the provider's name when ProviderOptions.Name is empty.
const DefaultName = "anthropic"

// ErrDestroyed is matched by the error of a turn on a destroyed
// environment. It wraps contract.ErrDestroyed.
var ErrDestroyed = fmt.Errorf("anthropic: %w", contract.ErrDestroyed)

// ProviderOptions configure a Provider.
type ProviderOptions struct {
	// Options configure the model each turn runs on. APIKey and BaseURL
	// are used as given (nothing is read from the process environment).
	// Model is the model a profile that names none gets ("" requires
	// every profile to name one); Effort and MaxTokens are replaced by a
	// profile's reasoningEffort and maxTotalOutputTokens; Reasoning
	// describes the models the provider is used with (nil: unknown).
	Options
	// Name is the provider's name ("" is DefaultName); every environment
	// and effectiveBackend it reports carries it.
	Name string
	// StripModelPrefix is removed from the front of a profile's or
	// turn's model before it is sent: profiles name models as
	// "provider/id", while the Messages API wants the bare id. "" is
	// ModelPrefix, unless KeepModelPrefix is set.
	StripModelPrefix string
	// KeepModelPrefix sends a profile's model as it is, prefix and all
	// (an endpoint that speaks the Messages API but names its models
	// "provider/id" itself).
	KeepModelPrefix bool
}

// ModelPrefix is the provider part of a profile's model id that names an
// Anthropic model ("anthropic/claude-sonnet-4-5"); the Messages API gets
// the id without it.
const ModelPrefix = "anthropic/"

// Provider is harness cli-base over the Anthropic Messages API: each
// environment is a profile bound to the API, and each turn one streamed
// Messages request of the profile's system prompt (systemPrompt, then
// appendSystemPrompt, as the top-level system parameter) and the turn's
// prompt. The environments, turn admission and events are the shared
// cli-base provider's (providers/chatprovider); this package
// supplies the model per turn and its refusals. It declares live
// streaming, the system prompt and usage — the API's stream always
// carries usage; a counter it did not send stays unknown — and nothing
// else. It is safe for concurrent use.
type Provider struct {
	*chatprovider.Provider
	opts ProviderOptions
}

var _ contract.Provider = (*Provider)(nil)

// NewProvider returns a provider over the API opts describe. It refuses
// what NewModel refuses, except that Model may be empty: invalid options
// match ErrInvalidOptions, a default effort the models cannot honour is
// an *EffortError. Nothing is sent. A profile's ModelPrefix is stripped
// unless opts say otherwise, so an API key is all a caller has to give.
func NewProvider(opts ProviderOptions) (*Provider, error) {
	o, err := opts.Options.resolve(false)
	if err != nil {
		return nil, err
	}
	opts.Options = o
	if opts.StripModelPrefix == "" && !opts.KeepModelPrefix {
		opts.StripModelPrefix = ModelPrefix
	}
	name := opts.Name
	if name == "" {
		name = DefaultName
	}
	p := &Provider{opts: opts}
	p.Provider, err = chatprovider.New(chatprovider.Config{
		Name: name, Vendor: "anthropic", Usage: true, ErrDestroyed: ErrDestroyed,
		DefaultModel: opts.Model, StripModelPrefix: opts.StripModelPrefix,
		CheckEffort: p.checkEffort, Dispatch: p.dispatch,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// refused makes a NewModel refusal (an *EffortError, ErrInvalidOptions)
// a refusal of the provider: it matches contract.ErrUnsupported too.
func refused(err error) error { return fmt.Errorf("%w: %w", err, contract.ErrUnsupported) }

// checkEffort refuses an effort NewModel would refuse: one the models
// cannot express as a thinking budget (*EffortError), or whose budget
// does not fit under max_tokens (maxTotal, else the options').
func (p *Provider) checkEffort(e harness.ReasoningEffort, maxTotal *int64) error {
	maxTokens := p.opts.MaxTokens
	if maxTotal != nil {
		maxTokens = *maxTotal
	}
	if err := checkEffort(e, p.opts.Reasoning, maxTokens); err != nil {
		return refused(err)
	}
	return nil
}

// dispatch is a turn's model: the options with the turn's model, the
// profile's reasoning effort (as a thinking budget) and output ceiling
// (as max_tokens). Nothing is sent.
func (p *Provider) dispatch(s chatprovider.Settings) (chatprovider.Turn, error) {
	o := p.opts.Options
	o.Model = s.Model
	if s.ReasoningEffort != "" {
		o.Effort = s.ReasoningEffort
	}
	if s.MaxTotalOutputTokens != nil {
		o.MaxTokens = *s.MaxTotalOutputTokens
	}
	m, err := NewModel(o)
	if err != nil {
		return chatprovider.Turn{}, refused(err)
	}
	return chatprovider.Turn{Model: m}, nil
}
