package anthropic

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/agentrt/agentrt/harness"
)

// Defaults of Options' zero fields.
const (
	// DefaultBaseURL is the Messages API's origin.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultMaxTokens is max_tokens when Options.MaxTokens is 0.
	DefaultMaxTokens = 4096
	// DefaultMaxRetries is how many times a retryable refusal is retried
	// when Options.MaxRetries is 0.
	DefaultMaxRetries = 2
	// DefaultMaxRetryWait bounds one wait before a retry when
	// Options.MaxRetryWait is 0.
	DefaultMaxRetryWait = 30 * time.Second
	// DefaultRetryBackoff is the first backoff of a retry the server gave
	// no retry-after for, when Options.RetryBackoff is 0; it doubles per
	// attempt.
	DefaultRetryBackoff = 500 * time.Millisecond
)

// Options configure a Model. Only Model is required; a zero field takes
// its default.
type Options struct {
	// BaseURL is the API origin (DefaultBaseURL when ""); requests go to
	// BaseURL + "/v1/messages".
	BaseURL string
	// APIKey is sent as the x-api-key header. It is never logged and never
	// appears in an error, an event or anything else the package returns.
	APIKey string
	// HTTPClient sends the requests (http.DefaultClient when nil).
	HTTPClient *http.Client
	// Model is the model requested, as the API names it
	// ("claude-sonnet-4-5-20250929").
	Model string
	// MaxTokens is the request's max_tokens (DefaultMaxTokens when 0).
	MaxTokens int64
	// MaxRetries is how many times a turn re-sends a request the API
	// refused with a retryable status before any event arrived
	// (DefaultMaxRetries when 0; a negative value never retries).
	MaxRetries int
	// MaxRetryWait bounds one wait before a retry (DefaultMaxRetryWait
	// when 0). A refusal whose retry-after asks for longer is not retried:
	// its *APIError is the turn's error, RetryAfter saying how long.
	MaxRetryWait time.Duration
	// RetryBackoff is the wait before the first retry of a refusal that
	// named no retry-after, doubling per attempt (DefaultRetryBackoff
	// when 0), capped at MaxRetryWait.
	RetryBackoff time.Duration
	// Effort is the reasoning effort asked for. "" and "none" send no
	// thinking parameter (extended thinking off). Any other effort must be
	// one the model honours — claude-code's ladder (low, medium, high,
	// xhigh, ultracode) narrowed by Reasoning — and becomes a thinking
	// budget (see ThinkingBudget); anything else is refused by NewModel
	// with an *EffortError.
	Effort harness.ReasoningEffort
	// Reasoning is what a model catalog knows about the model's reasoning
	// (nil: unknown, the whole ladder is allowed).
	Reasoning *harness.ModelReasoning
}

// thinkingBudgets are the budget_tokens of each native effort token that
// harness.NativeReasoningControl gives claude-code for the canonical
// efforts. low is the API's minimum; max fits under a 64,000-token
// max_tokens.
var thinkingBudgets = map[string]int64{
	"low":    1024,
	"medium": 4096,
	"high":   16384,
	"xhigh":  32768,
	"max":    63999,
}

// ThinkingBudget returns the thinking budget_tokens for an effort and the
// native effort token it applies (what a receipt records as applied), or
// 0 and "" when the effort sends no thinking parameter ("" or none). It
// does not check that a model honours the effort; NewModel does.
func ThinkingBudget(e harness.ReasoningEffort) (budget int64, applied string) {
	if e == "" || e == harness.EffortNone {
		return 0, ""
	}
	applied, ok := harness.NativeReasoningControl(harness.ClaudeCode, e)
	if !ok {
		return 0, ""
	}
	return thinkingBudgets[applied], applied
}

// allowedEfforts returns the efforts a model with reasoning r honours:
// none (thinking off) and claude-code's set narrowed by r.
func allowedEfforts(r *harness.ModelReasoning) []harness.ReasoningEffort {
	set := harness.ReasoningEffortsFor(harness.ClaudeCode, r)
	if !slices.Contains(set, harness.EffortNone) {
		set = append([]harness.ReasoningEffort{harness.EffortNone}, set...)
	}
	return set
}

// checkEffort refuses an effort the model cannot honour, or whose budget
// does not fit under maxTokens.
func checkEffort(e harness.ReasoningEffort, r *harness.ModelReasoning, maxTokens int64) error {
	if e == "" {
		return nil
	}
	allowed := allowedEfforts(r)
	refuse := func(reason string) error { return &EffortError{Effort: e, Allowed: allowed, Reason: reason} }
	switch {
	case !e.Valid():
		return refuse("it is not on the reasoning ladder")
	case !slices.Contains(allowed, e):
		if r != nil && r.SupportsReasoning != nil && !*r.SupportsReasoning {
			return refuse("the model does not reason")
		}
		return refuse("the Messages API cannot express it for this model without raising or capping it")
	}
	if budget, _ := ThinkingBudget(e); budget >= maxTokens {
		return refuse(fmt.Sprintf("its thinking budget of %d tokens needs max_tokens above %d", budget, maxTokens))
	}
	return nil
}

// withDefaults validates o and fills its zero fields.
func (o Options) withDefaults() (Options, error) { return o.resolve(true) }

// resolve validates o and fills its zero fields; Model is required only
// when requireModel is set (a Provider's profiles may name the model).
func (o Options) resolve(requireModel bool) (Options, error) {
	var errs []error
	if requireModel && o.Model == "" {
		errs = append(errs, errors.New("Model is required"))
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	if u, err := url.Parse(o.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, errors.New("BaseURL must be an absolute http or https URL"))
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("MaxTokens %d is negative", o.MaxTokens))
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = DefaultMaxRetries
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.MaxRetryWait == 0 {
		o.MaxRetryWait = DefaultMaxRetryWait
	}
	if o.RetryBackoff == 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	if o.MaxRetryWait < 0 || o.RetryBackoff < 0 {
		errs = append(errs, errors.New("MaxRetryWait and RetryBackoff must not be negative"))
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if len(errs) > 0 {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	if err := checkEffort(o.Effort, o.Reasoning, o.MaxTokens); err != nil {
		return o, err
	}
	return o, nil
}
