package contract

import (
	"context"
	"iter"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
)

// ChatModel is the provider-neutral port of a chat model that can call
// tools: what direct-model providers (harness cli-base over OpenAI or
// Anthropic) implement and what the kernel's tool loop drives.
type ChatModel interface {
	// Turn runs one model turn over messages, offering tools, and yields
	// the turn's events in order. A sequence that ends without an error
	// and without a ChatFailure event is a turn that ended normally. A
	// transport or decoding failure is yielded as the error and ends the
	// sequence; a failure the model reported in-band is a ChatFailure
	// event, after which nothing follows. A turn cut short by ctx yields an
	// error wrapping ctx's error.
	//
	// Turn must not modify messages or tools, nor keep them after the
	// sequence ends; it reads only the tools' names, descriptions and
	// input schemas (running them is the caller's business). The caller
	// ranges over each returned sequence once and may stop early. A model
	// shared by concurrent callers must be safe for concurrent use.
	Turn(ctx context.Context, messages []ChatMessage, tools []Tool) iter.Seq2[ChatEvent, error]
}

// ChatModelFunc adapts a function to ChatModel.
type ChatModelFunc func(ctx context.Context, messages []ChatMessage, tools []Tool) iter.Seq2[ChatEvent, error]

// Turn calls f.
func (f ChatModelFunc) Turn(ctx context.Context, messages []ChatMessage, tools []Tool) iter.Seq2[ChatEvent, error] {
	return f(ctx, messages, tools)
}

// ChatRole says who wrote a chat message.
type ChatRole string

// Chat roles, as OpenAI's chat completions name them.
const (
	ChatSystem    ChatRole = "system"
	ChatUser      ChatRole = "user"
	ChatAssistant ChatRole = "assistant"
	ChatTool      ChatRole = "tool"
)

// ChatMessage is one message of a chat transcript, shaped like a message
// of OpenAI's chat completions: an assistant message may carry the tool
// calls it made, and each tool result is a tool message naming the call it
// answers. MarshalValue writes that wire shape.
type ChatMessage struct {
	// Role says who wrote the message.
	Role ChatRole
	// Content is the message text; nil is JSON null, as in an assistant
	// message that only called tools.
	Content *string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID is, on a tool message, the id of the call it answers.
	ToolCallID string
}

// MarshalValue writes m as an OpenAI chat message: role, content (null
// when nil), tool_calls when there are any, tool_call_id when set.
func (m ChatMessage) MarshalValue() (canonjson.Value, error) {
	content := canonjson.NullValue()
	if m.Content != nil {
		content = canonjson.StringValue(*m.Content)
	}
	members := []canonjson.Member{
		{Name: "role", Value: canonjson.StringValue(string(m.Role))},
		{Name: "content", Value: content},
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]canonjson.Value, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			calls[i] = c.value()
		}
		members = append(members, canonjson.Member{Name: "tool_calls", Value: canonjson.ArrayValue(calls)})
	}
	if m.ToolCallID != "" {
		members = append(members, canonjson.Member{Name: "tool_call_id", Value: canonjson.StringValue(m.ToolCallID)})
	}
	return canonjson.ObjectValue(members), nil
}

// ToolCall is one call of a tool a model made.
type ToolCall struct {
	// ID keys the call's result message; "" when the model gave none.
	ID string
	// Name is the tool's name.
	Name string
	// Args are the call's arguments, a JSON object. A provider passes an
	// empty object for a call without arguments, and the absent Value
	// when the model's arguments were not JSON at all. A call whose Args
	// is not an object is never run.
	Args canonjson.Value
}

// MarshalValue writes c as an OpenAI tool call: {"id", "type":
// "function", "function": {"name", "arguments"}}, where arguments is the
// JSON text of Args ("{}" when Args is absent).
func (c ToolCall) MarshalValue() (canonjson.Value, error) { return c.value(), nil }

func (c ToolCall) value() canonjson.Value {
	args := "{}"
	if c.Args.IsValid() {
		args = string(canonjson.Marshal(c.Args))
	}
	return canonjson.ObjectValue([]canonjson.Member{
		{Name: "id", Value: canonjson.StringValue(c.ID)},
		{Name: "type", Value: canonjson.StringValue("function")},
		{Name: "function", Value: canonjson.ObjectValue([]canonjson.Member{
			{Name: "name", Value: canonjson.StringValue(c.Name)},
			{Name: "arguments", Value: canonjson.StringValue(args)},
		})},
	})
}

// ChatEventKind says what a ChatEvent carries.
type ChatEventKind string

// Chat event kinds.
const (
	// ChatText: Text is the next piece of the assistant's text.
	ChatText ChatEventKind = "text"
	// ChatToolCall: ToolCall is a complete call the model made.
	ChatToolCall ChatEventKind = "tool_call"
	// ChatUsage: Usage is a usage report and UsageMode how it aggregates
	// within the turn (empty: unknown aggregation).
	ChatUsage ChatEventKind = "usage"
	// ChatFailure: the model reported that the turn failed; Failure says
	// why. It is the turn's last event.
	ChatFailure ChatEventKind = "failure"
	// ChatServed: Model is the model the provider reports served the turn,
	// read back from its response (never the requested name echoed). A
	// turn reports it at most once, as early as the provider knows it; a
	// turn without it served a model nobody reported (unknown).
	ChatServed ChatEventKind = "served"
	// ChatRetry: Retry says the provider's request was refused or failed
	// transiently and is about to be sent again. It is not a failure and
	// does not end the turn; the refused attempt carried no model output,
	// so nothing it reported counts toward the turn's usage.
	ChatRetry ChatEventKind = "retry"
)

// ModelRetry describes one retry of a model request: which attempt comes
// next, how long the provider waits before sending it, and why the
// previous attempt did not go through. It carries no request or response
// body, no headers and no secret: Reason is a short, bounded summary.
type ModelRetry struct {
	// Attempt is the number of the attempt about to be sent: 2 for the
	// first retry.
	Attempt int
	// Delay is how long the provider waits before sending it.
	Delay time.Duration
	// Status is the HTTP status the previous attempt was refused with; 0
	// when no HTTP response arrived (a connection failure).
	Status int
	// Reason says why the previous attempt failed, e.g. "HTTP 429 Too
	// Many Requests (rate_limit_exceeded)", at most MaxRetryReasonBytes.
	Reason string
}

// MaxRetryReasonBytes bounds ModelRetry.Reason.
const MaxRetryReasonBytes = 200

// RetryEvent returns the ChatRetry event of r, with r.Reason cut to
// MaxRetryReasonBytes (at a character boundary, marked with "…").
func RetryEvent(r ModelRetry) ChatEvent {
	if len(r.Reason) > MaxRetryReasonBytes {
		cut := MaxRetryReasonBytes - len("…")
		for cut > 0 && !utf8.RuneStart(r.Reason[cut]) {
			cut--
		}
		r.Reason = r.Reason[:cut] + "…"
	}
	return ChatEvent{Kind: ChatRetry, Retry: &r}
}

// ChatEvent is one event of a model turn. Kind says which of the other
// fields is set.
type ChatEvent struct {
	Kind ChatEventKind
	// Text is a ChatText event's piece of the assistant's text.
	Text string
	// ToolCall is a ChatToolCall event's call.
	ToolCall ToolCall
	// Usage and UsageMode are a ChatUsage event's report and how it
	// aggregates ("" when the model did not say: unknown).
	Usage     *TokenUsage
	UsageMode UsageMode
	// Failure is a ChatFailure event's reason.
	Failure string
	// StopReason is, on a ChatFailure, the reason the model itself gave
	// for ending the turn where it did (a token limit, a content filter, a
	// refusal: OpenAI's finish_reason length or content_filter, a
	// Responses incomplete reason, Anthropic's stop_reason max_tokens or
	// refusal). Such a turn ran to its end, so its usage reports are
	// final. It is empty when the turn broke off (an in-band error event
	// mid-message): what it reported is then only a floor.
	StopReason string
	// Model is a ChatServed event's served model.
	Model string
	// Retry is a ChatRetry event's retry.
	Retry *ModelRetry
}
