package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
)

// DefaultBaseURL is OpenAI's own endpoint.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Retry defaults.
const (
	// DefaultMaxRetries is how many times a request the endpoint refused
	// with a retryable status (429, 408, 409, 5xx) or a connection
	// failure is sent again when Options.MaxRetries is 0.
	DefaultMaxRetries = 2
	// DefaultMaxRetryWait bounds how long one retry waits when
	// Options.MaxRetryWait is 0. A Retry-After beyond the bound is not
	// waited for: the error is returned with its RetryAfter.
	DefaultMaxRetryWait = 30 * time.Second
)

// API names the wire protocol a Model speaks.
type API string

// The wire protocols.
const (
	// APIChatCompletions is POST {base}/chat/completions, streamed as
	// "data:" chunks ending in "data: [DONE]".
	APIChatCompletions API = "chat-completions"
	// APIResponses is POST {base}/responses, streamed as named events
	// ending in response.completed (or response.incomplete,
	// response.failed, error).
	APIResponses API = "responses"
)

// Options configure a Model. Only APIKey is required, and only by
// endpoints that check it.
type Options struct {
	// API is the wire protocol: APIChatCompletions ("" too) or
	// APIResponses. Everything else applies to both.
	API API
	// BaseURL is the OpenAI-compatible endpoint, up to and including the
	// version segment ("https://api.openai.com/v1/"); "" is
	// DefaultBaseURL. Nothing is read from the process environment.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". It is never
	// logged, and never part of an error, event or receipt.
	APIKey string
	// HTTPClient sends the requests; nil is http.DefaultClient.
	HTTPClient *http.Client
	// Model is the model a turn requests when nothing else names one.
	Model string
	// ReasoningEffort is the canonical effort a Model's turns request;
	// "" requests none. It must be one harness cli-base can express
	// (harness.ReasoningEfforts), and reaches the wire only as the
	// harness table's native control (harness.NativeReasoningControl).
	ReasoningEffort harness.ReasoningEffort
	// MaxCompletionTokens, when set, bounds each completion's output
	// (visible and reasoning tokens together), sent as
	// max_completion_tokens (Responses: max_output_tokens).
	MaxCompletionTokens *int64
	// MaxRetries is how many times a retryable failure is retried: 0 is
	// DefaultMaxRetries, a negative value none. Only the request is
	// retried; a stream that broke after the endpoint accepted the
	// request is never replayed.
	MaxRetries int
	// MaxRetryWait bounds one retry's wait, Retry-After included; 0 is
	// DefaultMaxRetryWait.
	MaxRetryWait time.Duration
	// Observe, when set, is called once at the end of every turn with
	// what the endpoint reported about it: the served model, the finish
	// reason and the usage. It is how a caller of the bare ChatModel
	// reads the served model back. It must be safe for concurrent use
	// when the Model is shared.
	Observe func(TurnReport)
	// Logger receives request attempts and retries at debug level (never
	// a header or the key); nil discards.
	Logger *slog.Logger
}

// TurnReport is what the endpoint reported about one turn.
type TurnReport struct {
	// RequestedModel is the model the request named.
	RequestedModel string
	// ServedModel is the "model" the stream's chunks (Responses: its
	// response objects) carried; "" when none named one (unknown, not a
	// mismatch).
	ServedModel string
	// ResponseID is the chunks' (Responses: the response's) "id"; ""
	// when none arrived.
	ResponseID string
	// FinishReason is the choice's finish_reason (Chat Completions) or
	// the response's status, "completed", "incomplete" or "failed"
	// (Responses); "" when none arrived.
	FinishReason string
	// Usage is the usage chunk's (Responses: the terminal response's)
	// report; nil when the endpoint sent none
	// (unknown, never zero).
	Usage *contract.TokenUsage
	// Err is the turn's stream error (nil for a turn that ended, with or
	// without an in-band failure).
	Err error
}

// Model is a contract.ChatModel over an OpenAI-compatible Chat
// Completions or Responses endpoint (Options.API), streaming each turn. It holds no mutable state
// and is safe for concurrent use.
type Model struct {
	client sdk.Client
	opts   Options
	effort string // the native reasoning control, "" for none
	log    *slog.Logger
}

var _ contract.ChatModel = (*Model)(nil)

// ErrInvalidOptions is matched by the error of New for options it
// refuses.
var ErrInvalidOptions = errors.New("openai: invalid options")

// New returns a Model for opts. It refuses, before any request, a base
// URL that is not an absolute http(s) URL, an API it does not speak and
// a reasoning effort harness cli-base cannot express.
func New(opts Options) (*Model, error) {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: BaseURL must be an absolute http(s) URL", ErrInvalidOptions)
	}
	effort, err := nativeEffort(opts.ReasoningEffort)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	switch opts.API {
	case "":
		opts.API = APIChatCompletions
	case APIChatCompletions, APIResponses:
	default:
		return nil, fmt.Errorf("%w: API %q is neither %s nor %s", ErrInvalidOptions, opts.API, APIChatCompletions, APIResponses)
	}
	if opts.MaxCompletionTokens != nil && *opts.MaxCompletionTokens <= 0 {
		return nil, fmt.Errorf("%w: MaxCompletionTokens must be positive", ErrInvalidOptions)
	}
	switch {
	case opts.MaxRetries == 0:
		opts.MaxRetries = DefaultMaxRetries
	case opts.MaxRetries < 0:
		opts.MaxRetries = 0
	}
	if opts.MaxRetryWait <= 0 {
		opts.MaxRetryWait = DefaultMaxRetryWait
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	m := &Model{opts: opts, effort: effort, log: opts.Logger}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	// The client is built from these options only: the SDK's
	// NewClient would also read OPENAI_* variables from the process
	// environment, and a run must send exactly what was configured.
	m.client = sdk.Client{Options: []option.RequestOption{
		option.WithBaseURL(opts.BaseURL),
		option.WithAPIKey(opts.APIKey),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0), // send retries, so each retry is seen
		option.WithMiddleware(m.logAttempt),
	}}
	return m, nil
}

// nativeEffort checks e against harness cli-base's table and returns the
// token its request carries ("" for none).
func nativeEffort(e harness.ReasoningEffort) (string, error) {
	if e == "" {
		return "", nil
	}
	ok := false
	for _, x := range harness.ReasoningEfforts(harness.CLIBase) {
		ok = ok || x == e
	}
	if !ok {
		return "", fmt.Errorf("harness %s cannot express reasoning effort %q: %w", harness.CLIBase, e, contract.ErrUnsupported)
	}
	token, _ := harness.NativeReasoningControl(harness.CLIBase, e)
	return token, nil
}

// logAttempt logs each HTTP attempt's outcome, never its headers.
func (m *Model) logAttempt(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	start := time.Now()
	res, err := next(req)
	attrs := []any{"path", req.URL.Path, "elapsed", time.Since(start)}
	if res != nil {
		attrs = append(attrs, "status", res.StatusCode)
	}
	if err != nil {
		attrs = append(attrs, "err", scrub(err.Error(), m.opts.APIKey))
	}
	m.log.Debug("openai: request attempt", attrs...)
	return res, err
}

// request is one turn's settings.
type request struct {
	model      string
	effort     string
	maxTokens  *int64
	onComplete func(TurnReport)
}

// Turn implements contract.ChatModel: one streamed chat completion (or
// Responses response) of the Options' model over messages, offering
// tools. A turn without a model
// (neither Options.Model nor anything else) fails before any request.
func (m *Model) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	return m.turn(ctx, request{model: m.opts.Model, effort: m.effort, maxTokens: m.opts.MaxCompletionTokens, onComplete: m.opts.Observe}, messages, tools)
}

// ErrNoModel is matched by the error of a turn that names no model.
var ErrNoModel = errors.New("openai: no model requested")

func (m *Model) turn(ctx context.Context, r request, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	return func(yield func(contract.ChatEvent, error) bool) {
		rep := TurnReport{RequestedModel: r.model}
		if r.onComplete != nil {
			defer func() { r.onComplete(rep) }()
		}
		fail := func(err error) {
			rep.Err = err
			yield(contract.ChatEvent{}, err)
		}
		if err := ctx.Err(); err != nil {
			fail(err)
			return
		}
		if r.model == "" {
			fail(ErrNoModel)
			return
		}
		var (
			path string
			body any
			ro   []option.RequestOption
			dec  eventDecoder
			err  error
		)
		switch m.opts.API {
		case APIResponses:
			path, dec = "responses", newResponsesState(m.opts.APIKey)
			body, err = responsesParams(r, messages, tools)
		default:
			path, dec = "chat/completions", newChatState(m.opts.APIKey)
			body, err = m.params(r, messages, tools)
			ro = append(ro, option.WithJSONSet("stream", true))
		}
		if err != nil {
			fail(err)
			return
		}
		raw, err := m.send(ctx, path, body, ro, yield)
		if err != nil {
			fail(err)
			return
		}
		if raw == nil {
			return // the caller stopped ranging at a retry event
		}
		err = runStream(ctx, raw, dec, yield)
		st := dec.base()
		rep.ServedModel, rep.ResponseID, rep.FinishReason, rep.Usage = st.served, st.id, st.finish, st.usage
		if err != nil {
			rep.Err = err
		}
	}
}

// send posts the request, retrying a retryable refusal or a connection
// failure up to Options.MaxRetries times. Each retry is yielded as a
// contract.ChatRetry event before its wait, so the turn's consumer sees
// it; the SDK's own retries are off (New), because they are invisible.
// It returns the accepted response, or the last attempt's error, or
// neither when the caller stopped ranging.
func (m *Model) send(ctx context.Context, path string, body any, ro []option.RequestOption, yield func(contract.ChatEvent, error) bool) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		var raw *http.Response
		opts := append(slices.Clip(ro), option.WithHeader("X-Stainless-Retry-Count", strconv.Itoa(attempt-1)))
		err := m.client.Post(ctx, path, body, &raw, opts...)
		if err == nil {
			return raw, nil
		}
		err = m.requestError(ctx, err)
		r, ok := m.retry(err, attempt)
		if !ok {
			return nil, err
		}
		m.log.Debug("openai: retrying", "path", path, "attempt", r.Attempt, "delay", r.Delay, "status", r.Status)
		if !yield(contract.RetryEvent(r), nil) {
			return nil, nil
		}
		t := time.NewTimer(r.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("openai: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// Retry backoff when the endpoint asks for no wait: the first wait, and
// the most any wait grows to (both as the SDK's own retries had them).
const (
	retryBackoff    = 500 * time.Millisecond
	maxRetryBackoff = 8 * time.Second
)

// retry decides whether the request that failed with err on attempt is
// sent again, and describes that retry: an *APIError the endpoint marked
// retryable, after its Retry-After when that is within
// Options.MaxRetryWait (else not at all), otherwise after a doubling
// backoff with jitter; a connection failure after the backoff. A context
// error is never retried, nor a failure before any exchange (a request
// that could not be built).
func (m *Model) retry(err error, attempt int) (contract.ModelRetry, bool) {
	if attempt > m.opts.MaxRetries {
		return contract.ModelRetry{}, false
	}
	// The shift is capped: the cap is reached long before, and a larger
	// shift would overflow.
	backoff := min(retryBackoff<<min(attempt-1, 16), maxRetryBackoff, m.opts.MaxRetryWait)
	backoff -= rand.N(backoff/4 + 1)
	r := contract.ModelRetry{Attempt: attempt + 1, Delay: backoff}
	var ae *APIError
	var se *scrubbedError
	var ue *url.Error // what the HTTP client's Do returns: the exchange failed
	switch {
	case errors.As(err, &ae):
		if !ae.Retryable || ae.RetryAfter > m.opts.MaxRetryWait {
			return r, false
		}
		if ae.RetryAfter > 0 {
			r.Delay = ae.RetryAfter
		}
		r.Status = ae.StatusCode
		r.Reason = ae.summary()
	case errors.As(err, &se) && errors.As(se.err, &ue):
		r.Reason = "connection failed: " + strings.TrimPrefix(se.msg, "openai: ")
	default:
		return r, false
	}
	return r, true
}

// requestError classifies a failed request: the context's error, an
// *APIError, or a scrubbed transport error.
func (m *Model) requestError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("openai: %w", ctx.Err())
	}
	if e, ok := errors.AsType[*sdk.Error](err); ok {
		return apiError(e, m.opts.APIKey)
	}
	return transportError(err, m.opts.APIKey)
}

// params builds the request body: model, messages, tools, usage in the
// stream, and the reasoning and token controls when set.
func (m *Model) params(r request, messages []contract.ChatMessage, tools []contract.Tool) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{
		Model:         r.model,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	msgs, err := chatMessages(messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	if p.Tools, err = chatTools(tools); err != nil {
		return p, err
	}
	if r.effort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(r.effort)
	}
	if r.maxTokens != nil {
		p.MaxCompletionTokens = param.NewOpt(*r.maxTokens)
	}
	return p, nil
}

// ErrBadTranscript is matched by the error of a turn whose messages or
// tools cannot be written as a Chat Completions request.
var ErrBadTranscript = errors.New("openai: the transcript cannot be sent")

func chatMessages(in []contract.ChatMessage) ([]sdk.ChatCompletionMessageParamUnion, error) {
	out := make([]sdk.ChatCompletionMessageParamUnion, 0, len(in))
	for i, msg := range in {
		content := ""
		if msg.Content != nil {
			content = *msg.Content
		}
		switch msg.Role {
		case contract.ChatSystem:
			out = append(out, sdk.SystemMessage(content))
		case contract.ChatUser:
			out = append(out, sdk.UserMessage(content))
		case contract.ChatTool:
			out = append(out, sdk.ToolMessage(content, msg.ToolCallID))
		case contract.ChatAssistant:
			a := &sdk.ChatCompletionAssistantMessageParam{}
			if msg.Content != nil {
				a.Content.OfString = param.NewOpt(content)
			}
			for _, c := range msg.ToolCalls {
				args := callArgs(c)
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args}}})
			}
			out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: a})
		default:
			return nil, fmt.Errorf("%w: message %d has role %q", ErrBadTranscript, i, msg.Role)
		}
	}
	return out, nil
}

func chatTools(in []contract.Tool) ([]sdk.ChatCompletionToolUnionParam, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]sdk.ChatCompletionToolUnionParam, 0, len(in))
	for _, t := range in {
		def := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			def.Description = param.NewOpt(t.Description)
		}
		schema, err := toolSchema(t)
		if err != nil {
			return nil, err
		}
		if schema != nil {
			def.Parameters = schema
		}
		out = append(out, sdk.ChatCompletionFunctionTool(def))
	}
	return out, nil
}

// toolSchema is a tool's input schema as the request's parameters; nil
// when the tool has none, an error when it is not a JSON object.
func toolSchema(t contract.Tool) (map[string]any, error) {
	if !t.InputSchema.IsValid() {
		return nil, nil
	}
	if t.InputSchema.Kind() != canonjson.Object {
		return nil, fmt.Errorf("%w: tool %s's input schema is not a JSON object", ErrBadTranscript, t.Name)
	}
	var schema map[string]any
	if err := json.Unmarshal(canonjson.Marshal(t.InputSchema), &schema); err != nil {
		return nil, fmt.Errorf("%w: tool %s's input schema: %w", ErrBadTranscript, t.Name, err)
	}
	return schema, nil
}

// callArgs is an earlier tool call's arguments as the request carries
// them: JSON text, "{}" when the call had none.
func callArgs(c contract.ToolCall) string {
	if !c.Args.IsValid() {
		return "{}"
	}
	return string(canonjson.Marshal(c.Args))
}
