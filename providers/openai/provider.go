package openai

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/providers/chatprovider"
)

// DefaultName is the provider's name when ProviderOptions.Name is empty.
const DefaultName = "openai"

// ErrDestroyed is matched by the error of a turn on a destroyed
// environment. It wraps contract.ErrDestroyed.
var ErrDestroyed = fmt.Errorf("openai: %w", contract.ErrDestroyed)

// ProviderOptions configure a Provider.
type ProviderOptions struct {
	// Options configure the model the provider's turns run on, its API
	// included; its Model is the model a profile that names none gets,
	// and its
	// ReasoningEffort and MaxCompletionTokens are replaced by each
	// profile's own.
	Options
	// Name is the provider's name ("" is DefaultName); every environment
	// and effectiveBackend it reports carries it.
	Name string
	// ReportsUsage declares capability usage: the endpoint honours
	// stream_options.include_usage (Responses: puts usage on the
	// terminal response). OpenAI's own endpoint (BaseURL "" or
	// DefaultBaseURL) does, so NewProvider declares it there whatever
	// this says. Leave it false for another endpoint that may not; its
	// turns still forward any usage it sends, and usage it does not send
	// stays unknown either way.
	ReportsUsage bool
	// StripModelPrefix, when set, is removed from the front of a
	// profile's model before it is sent: profiles name models as
	// "provider/id", while OpenAI's endpoint wants the bare id. On
	// OpenAI's own endpoint "" means ModelPrefix; on another endpoint ""
	// sends the profile's model as it is (the endpoint's ids are its
	// own). The served model is compared with the profile's model by the
	// kernel.
	StripModelPrefix string
}

// ModelPrefix is the provider part of a profile's model id that names an
// OpenAI model ("openai/gpt-5.2"); OpenAI's own endpoint gets the id
// without it.
const ModelPrefix = "openai/"

// isOfficialEndpoint reports whether baseURL is OpenAI's own endpoint:
// "" (Options.BaseURL's default) or DefaultBaseURL, with or without its
// trailing slash.
func isOfficialEndpoint(baseURL string) bool {
	return baseURL == "" || strings.TrimSuffix(baseURL, "/") == strings.TrimSuffix(DefaultBaseURL, "/")
}

// withEndpointDefaults is opts with what OpenAI's own endpoint is known
// to do: it reports usage when asked and wants bare model ids. Another
// endpoint's options are returned as they are.
func withEndpointDefaults(opts ProviderOptions) ProviderOptions {
	if !isOfficialEndpoint(opts.BaseURL) {
		return opts
	}
	opts.ReportsUsage = true
	if opts.StripModelPrefix == "" {
		opts.StripModelPrefix = ModelPrefix
	}
	return opts
}

// Provider is harness cli-base over an OpenAI-compatible endpoint: each
// environment is a profile bound to the endpoint, and each turn one
// streamed chat completion (or Responses response, per Options.API) of
// the profile's system prompt and the turn's prompt. The environments, turn admission and events are the shared
// cli-base provider's (providers/chatprovider); this package
// supplies the model. It declares no optional ability (see Capabilities)
// and is safe for concurrent use.
type Provider struct {
	*chatprovider.Provider
	model *Model
	opts  ProviderOptions
}

var _ contract.Provider = (*Provider)(nil)

// NewProvider returns a provider over the endpoint opts describe; it
// refuses what New refuses. On OpenAI's own endpoint (opts.BaseURL ""
// or DefaultBaseURL) it applies that endpoint's rules itself: usage is
// declared and a profile's "openai/" prefix is stripped (see
// ProviderOptions), so an API key is all a caller has to give.
func NewProvider(opts ProviderOptions) (*Provider, error) {
	opts = withEndpointDefaults(opts)
	m, err := New(opts.Options)
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = DefaultName
	}
	p := &Provider{model: m, opts: opts}
	p.Provider, err = chatprovider.New(chatprovider.Config{
		Name: name, Vendor: "openai", Usage: opts.ReportsUsage, ErrDestroyed: ErrDestroyed,
		DefaultModel: opts.Model, StripModelPrefix: opts.StripModelPrefix,
		CheckEffort: checkEffort, Dispatch: p.dispatch,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Model returns the chat model the provider's turns run on.
func (p *Provider) Model() *Model { return p.model }

// checkEffort refuses a reasoning effort harness cli-base cannot
// express (see nativeEffort); the output ceiling does not matter.
func checkEffort(e harness.ReasoningEffort, _ *int64) error {
	if _, err := nativeEffort(e); err != nil {
		return fmt.Errorf("openai: %w", err)
	}
	return nil
}

// dispatch is a turn's model: the provider's Model with the turn's
// model, the profile's reasoning effort (as cli-base's native control)
// and output ceiling, else the options'.
func (p *Provider) dispatch(s chatprovider.Settings) (chatprovider.Turn, error) {
	r := request{model: s.Model, maxTokens: p.opts.MaxCompletionTokens, effort: p.model.effort}
	if s.ReasoningEffort != "" {
		e, err := nativeEffort(s.ReasoningEffort)
		if err != nil {
			return chatprovider.Turn{}, err
		}
		r.effort = e
	}
	if s.MaxTotalOutputTokens != nil {
		r.maxTokens = s.MaxTotalOutputTokens
	}
	b := &boundTurn{m: p.model, r: r}
	b.r.onComplete = func(rep TurnReport) {
		b.rep = rep
		if p.opts.Observe != nil {
			p.opts.Observe(rep)
		}
	}
	return chatprovider.Turn{Model: b, Done: b.done}, nil
}

// boundTurn is one provider turn's model: the Model with the turn's
// request settings, keeping what the endpoint reported.
type boundTurn struct {
	m   *Model
	r   request
	rep TurnReport
}

// Turn implements contract.ChatModel.
func (b *boundTurn) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	return b.m.turn(ctx, b.r, messages, tools)
}

// done adds the finish reason to the done event: the choice's
// finish_reason, or the Responses response's status.
func (b *boundTurn) done(data map[string]canonjson.Value) {
	if b.rep.FinishReason != "" {
		data["finishReason"] = canonjson.StringValue(b.rep.FinishReason)
	}
}
