package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// eventDecoder is one wire protocol's reading of a turn's server-sent
// events: chatState for Chat Completions chunks, responsesState for
// Responses events. runStream drives either over the same SSE path.
type eventDecoder interface {
	// feed takes one event. It reports stop when the turn is over (its
	// last event, a failure, or a consumer that stopped reading) and an
	// error when the event is malformed.
	feed(ev ssestream.Event, yield func(contract.ChatEvent, error) bool) (stop bool, err error)
	// over reports whether the endpoint said the turn was over (a
	// failure it reported in-band counts).
	over() bool
	// base is the state both protocols keep.
	base() *streamBase
	// salvage yields what the decoder holds back that is already whole
	// when the stream ends early (cut, cancelled): a fact learned before
	// the end is handed over before the turn's error. It reports false
	// when the consumer stopped reading.
	salvage(yield func(contract.ChatEvent, error) bool) bool
}

// streamBase is what a turn's stream reports whatever its protocol, and
// the rules both protocols share: a failure is the turn's last event and
// never carries the key, the served model is reported once and a second
// one is a failure, usage is reported only when the endpoint sent it.
type streamBase struct {
	secret string
	// served, id: the model and response id the stream named; finish:
	// the finish reason (Chat Completions) or response status
	// (Responses).
	served, id, finish string
	usage              *contract.TokenUsage
	failed             bool
}

func (b *streamBase) base() *streamBase { return b }

// fail yields an in-band failure that broke the turn off; nothing
// follows it.
func (b *streamBase) fail(msg string, yield func(contract.ChatEvent, error) bool) error {
	return b.stopped(msg, "", yield)
}

// stopped yields the failure of a turn the model ended itself for
// reason (a token limit, a filter, a refusal): the turn ran to its end,
// so its usage is final (contract.ChatEvent.StopReason). Nothing follows
// it.
func (b *streamBase) stopped(msg, reason string, yield func(contract.ChatEvent, error) bool) error {
	b.failed = true
	yield(contract.ChatEvent{Kind: contract.ChatFailure, Failure: scrub(msg, b.secret), StopReason: reason}, nil)
	return nil
}

// serve takes a served model the stream named: the first is reported as
// a ChatServed event, another one fails the turn.
func (b *streamBase) serve(model string, yield func(contract.ChatEvent, error) bool) (stop bool, err error) {
	switch {
	case model == "" || model == b.served:
		return false, nil
	case b.served == "":
		b.served = model
		return !yield(contract.ChatEvent{Kind: contract.ChatServed, Model: model}, nil), nil
	}
	return true, b.fail(fmt.Sprintf("the endpoint reported two served models, %s and %s", b.served, model), yield)
}

// report yields the endpoint's usage report (mode cumulative: the
// turn's total); nil, a report the endpoint did not send, yields
// nothing and leaves the turn's usage unknown.
func (b *streamBase) report(u *contract.TokenUsage, yield func(contract.ChatEvent, error) bool) (stop bool) {
	if u == nil {
		return false
	}
	b.usage = u
	return !yield(contract.ChatEvent{Kind: contract.ChatUsage, Usage: u, UsageMode: contract.UsageCumulative}, nil)
}

// inBandError fails the turn with an error object's message and its
// type (else its code), or a bare string's text.
func (b *streamBase) inBandError(raw []byte, yield func(contract.ChatEvent, error) bool) error {
	var e errorObject
	msg := "the endpoint reported an error"
	if json.Unmarshal(raw, &e) == nil {
		if e.Message != "" {
			msg = e.Message
		}
		if kind := cmp.Or(e.Type, codeText(e.Code)); kind != "" {
			msg += " (" + kind + ")"
		}
	} else if str := ""; json.Unmarshal(raw, &str) == nil && str != "" {
		msg = str
	}
	return b.fail(msg, yield)
}

// codeText is an error object's code as text: codes are strings or, on
// some endpoints, numbers.
func codeText(code any) string {
	switch c := code.(type) {
	case string:
		return c
	case float64:
		return strconv.FormatFloat(c, 'f', -1, 64)
	}
	return ""
}

// runStream reads res's event stream to its end through d, yielding chat
// events; it returns the stream error it yielded, if any. It owns the
// rule "a turn succeeded only if the endpoint said it was done": a
// stream that runs out first is ErrStreamBroken.
func runStream(ctx context.Context, res *http.Response, d eventDecoder, yield func(contract.ChatEvent, error) bool) error {
	dec := ssestream.NewDecoder(res)
	if dec == nil {
		err := fmt.Errorf("%w: the response has no body", ErrStreamBroken)
		yield(contract.ChatEvent{}, err)
		return err
	}
	defer dec.Close()
	for dec.Next() {
		stop, err := d.feed(dec.Event(), yield)
		if err != nil {
			if d.salvage(yield) {
				yield(contract.ChatEvent{}, err)
			}
			return err
		}
		if stop {
			return nil
		}
	}
	var err error
	switch readErr := dec.Err(); {
	case ctx.Err() != nil:
		err = fmt.Errorf("openai: %w", ctx.Err())
	case readErr != nil:
		err = fmt.Errorf("%w: %w", ErrStreamBroken, transportError(readErr, d.base().secret))
	case !d.over():
		err = ErrStreamBroken
	}
	if err != nil {
		if !d.salvage(yield) {
			return err
		}
		yield(contract.ChatEvent{}, err)
	}
	return err
}

// chatState decodes a Chat Completions stream's chunks into chat events:
// text as it arrives, tool calls assembled from their deltas and yielded
// whole when the choice finishes, the usage chunk's report, and the
// in-band error object or a finish reason that is not an answer as a
// ChatFailure. The endpoint is done when it says "data: [DONE]".
type chatState struct {
	streamBase
	calls   []partialCall
	refusal strings.Builder
	done    bool
}

// partialCall is a tool call whose deltas are still arriving.
type partialCall struct {
	index    int64
	id, name string
	args     strings.Builder
}

func newChatState(secret string) *chatState {
	return &chatState{streamBase: streamBase{secret: secret}}
}

func (s *chatState) over() bool { return s.done || s.failed }

// salvage yields nothing: a Chat Completions tool call is known to be
// whole only when its choice finishes (its deltas carry no end marker),
// so the calls of a stream that ended before finish_reason are partial,
// and text and the served model were yielded as they came.
func (s *chatState) salvage(func(contract.ChatEvent, error) bool) bool { return true }

// errorObject is the in-band error an endpoint streams instead of a chunk.
type errorObject struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

// feed takes one chunk: the event's data, whatever its name. It stops
// after [DONE], and fails on data that is not a chunk.
func (s *chatState) feed(ev ssestream.Event, yield func(contract.ChatEvent, error) bool) (stop bool, err error) {
	data := bytes.TrimSpace(ev.Data)
	if bytes.Equal(data, []byte("[DONE]")) {
		s.done = true
		if s.finish == "" {
			return true, s.fail("the stream ended without a finish_reason", yield)
		}
		return true, nil
	}
	if len(data) == 0 || data[0] != '{' || !json.Valid(data) {
		return true, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	var c sdk.ChatCompletionChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return true, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if f, ok := c.JSON.ExtraFields["error"]; ok && f.Raw() != "null" {
		return true, s.inBandError([]byte(f.Raw()), yield)
	}
	if c.ID != "" && s.id == "" {
		s.id = c.ID
	}
	if stop, err := s.serve(c.Model, yield); stop || err != nil {
		return true, err
	}
	for i := range c.Choices {
		if stop, err := s.choice(&c.Choices[i], yield); stop || err != nil {
			return true, err
		}
	}
	if c.JSON.Usage.Valid() {
		u, err := tokenUsage(&c.Usage)
		if err != nil {
			return true, err
		}
		if s.report(u, yield) {
			return true, nil
		}
	}
	return false, nil
}

// choice takes one choice's delta.
func (s *chatState) choice(ch *sdk.ChatCompletionChunkChoice, yield func(contract.ChatEvent, error) bool) (stop bool, err error) {
	if ch.Index != 0 {
		return true, fmt.Errorf("%w: choice index %d (one choice was requested)", ErrMalformed, ch.Index)
	}
	if s.finish != "" {
		return true, fmt.Errorf("%w: a delta after finish_reason %s", ErrMalformed, s.finish)
	}
	d := &ch.Delta
	if d.Content != "" && !yield(contract.ChatEvent{Kind: contract.ChatText, Text: d.Content}, nil) {
		return true, nil
	}
	s.refusal.WriteString(d.Refusal)
	for i := range d.ToolCalls {
		if err := s.toolDelta(&d.ToolCalls[i]); err != nil {
			return true, err
		}
	}
	if ch.FinishReason == "" {
		return false, nil
	}
	s.finish = ch.FinishReason
	return s.finished(yield)
}

func (s *chatState) toolDelta(d *sdk.ChatCompletionChunkChoiceDeltaToolCall) error {
	if d.Index < 0 {
		return fmt.Errorf("%w: tool call index %d", ErrMalformed, d.Index)
	}
	i := slices.IndexFunc(s.calls, func(c partialCall) bool { return c.index == d.Index })
	if i < 0 {
		if len(s.calls) >= maxToolCalls {
			return fmt.Errorf("%w: more than %d tool calls", ErrMalformed, maxToolCalls)
		}
		s.calls = append(s.calls, partialCall{index: d.Index})
		i = len(s.calls) - 1
	}
	c := &s.calls[i]
	if d.ID != "" {
		c.id = d.ID
	}
	c.name += d.Function.Name
	c.args.WriteString(d.Function.Arguments)
	return nil
}

// maxToolCalls bounds the calls one turn may assemble.
const maxToolCalls = 256

// finished applies the finish reason: an answer (stop, tool_calls)
// yields the assembled calls; anything else is an in-band failure.
func (s *chatState) finished(yield func(contract.ChatEvent, error) bool) (bool, error) {
	if s.refusal.Len() > 0 {
		return true, s.stopped("the model refused: "+s.refusal.String(), "refusal", yield)
	}
	switch s.finish {
	case "stop", "tool_calls", "function_call":
	case "length":
		return true, s.stopped("the completion was cut at its token limit (finish_reason length)", s.finish, yield)
	case "content_filter":
		return true, s.stopped("the endpoint's content filter stopped the completion (finish_reason content_filter)", s.finish, yield)
	default:
		return true, s.stopped("the completion finished with an unknown reason "+s.finish, s.finish, yield)
	}
	slices.SortFunc(s.calls, func(a, b partialCall) int { return cmp.Compare(a.index, b.index) })
	for i := range s.calls {
		c := &s.calls[i]
		if !yield(contract.ChatEvent{Kind: contract.ChatToolCall, ToolCall: contract.ToolCall{ID: c.id, Name: c.name, Args: toolArgs(c.args.String())}}, nil) {
			return true, nil
		}
	}
	return false, nil
}

// toolArgs decodes a call's arguments as the contract asks: "" is an
// empty object, text that is not JSON the absent Value.
func toolArgs(s string) canonjson.Value {
	if strings.TrimSpace(s) == "" {
		return canonjson.ObjectValue(nil)
	}
	v, err := canonjson.Decode([]byte(s))
	if err != nil {
		return canonjson.Value{}
	}
	return v
}

// tokenUsage converts the usage chunk. Counts the endpoint did not send
// stay nil; a report without prompt and completion counts is no report
// (unknown), and a negative count is malformed.
func tokenUsage(u *sdk.CompletionUsage) (*contract.TokenUsage, error) {
	if !u.JSON.PromptTokens.Valid() || !u.JSON.CompletionTokens.Valid() {
		return nil, nil
	}
	out := &contract.TokenUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.JSON.TotalTokens.Valid() {
		out.TotalTokens = new(u.TotalTokens)
	}
	if u.JSON.PromptTokensDetails.Valid() && u.PromptTokensDetails.JSON.CachedTokens.Valid() {
		out.CacheReadInputTokens = new(u.PromptTokensDetails.CachedTokens)
	}
	if u.JSON.CompletionTokensDetails.Valid() && u.CompletionTokensDetails.JSON.ReasoningTokens.Valid() {
		out.ReasoningTokens = new(u.CompletionTokensDetails.ReasoningTokens)
	}
	if f, ok := u.JSON.ExtraFields["cost"]; ok {
		out.Cost = reportedCost([]byte(f.Raw()))
	}
	return out, checkUsage(out)
}

// reportedCost reads the dollars an endpoint billed a turn from its
// usage's "cost" member, which OpenAI-compatible routers such as
// OpenRouter send (their receipt; OpenAI sends none). Anything but a
// finite number at or above zero — a string, null, a negative amount —
// is no report: the turn's dollars stay unknown, never 0.
func reportedCost(raw []byte) *float64 {
	raw = bytes.TrimSpace(raw)
	var v float64
	// Only a JSON number: Unmarshal reads null as no change (0).
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &v) != nil ||
		math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return nil
	}
	return &v
}

// checkUsage refuses a usage report with a negative count as malformed.
func checkUsage(u *contract.TokenUsage) error {
	for _, n := range []*int64{&u.InputTokens, &u.OutputTokens, u.TotalTokens, u.CacheReadInputTokens, u.ReasoningTokens} {
		if n != nil && *n < 0 {
			return fmt.Errorf("%w: a negative token count", ErrMalformed)
		}
	}
	return nil
}
