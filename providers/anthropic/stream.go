package anthropic

import (
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/respjson"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// count is one usage counter of a turn: nil until the API reported it.
type count = *int64

// turnState turns the Messages API's stream events of one response into
// chat events. The API's usage is cumulative: message_start carries the
// input side (input, cache read and cache creation tokens) and the output
// so far, and every message_delta carries the totals so far — its output
// tokens always, the input side when the server sends it. A counter keeps
// the last value the server sent; one it never sent stays unknown.
type turnState struct {
	m *Model

	started    bool // message_start seen
	stopped    bool // message_stop seen
	served     string
	stopReason string // message_delta's stop_reason, "" until sent

	// usage counters, each nil until reported.
	input, output, cacheRead, cacheWrite, thinking count

	// blocks under construction, by index.
	blocks map[int64]*block
	// thinking blocks of this turn, in order, and the turn's first call.
	thoughts  []thought
	firstCall string
}

// block is a content block being streamed.
type block struct {
	kind string // "text", "tool_use", "thinking", "redacted_thinking", or another type (ignored)
	id   string
	name string
	json strings.Builder // a tool_use's input_json_delta pieces
	text strings.Builder // a thinking block's thinking_delta pieces
	sig  string
	data string
}

// malformed is the stream error of an event the decoder cannot read.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrStreamBroken, fmt.Sprintf(format, args...))
}

// event folds one stream event into the turn, yielding the chat events it
// makes through emit. It returns false when emit said stop, and an error
// when the event breaks the turn (a malformed event, or another model).
func (s *turnState) event(ev *sdk.MessageStreamEventUnion, emit func(contract.ChatEvent) bool) (bool, error) {
	if !s.started && ev.Type != "message_start" {
		return false, malformed("a %q event came before message_start", ev.Type)
	}
	switch ev.Type {
	case "message_start":
		return s.start(ev, emit)
	case "content_block_start":
		return s.blockStart(ev, emit)
	case "content_block_delta":
		return s.blockDelta(ev, emit)
	case "content_block_stop":
		return s.blockStop(ev, emit)
	case "message_delta":
		if ev.Delta.JSON.StopReason.Valid() {
			s.stopReason = string(ev.Delta.StopReason)
		}
		u := &ev.Usage
		err := s.observeCounts(
			reported{u.InputTokens, u.JSON.InputTokens}, reported{u.OutputTokens, u.JSON.OutputTokens},
			reported{u.CacheReadInputTokens, u.JSON.CacheReadInputTokens}, reported{u.CacheCreationInputTokens, u.JSON.CacheCreationInputTokens})
		if err != nil {
			return false, err
		}
		if u.JSON.OutputTokensDetails.Valid() {
			d := &u.OutputTokensDetails
			if err := s.observe(&s.thinking, d.ThinkingTokens, d.JSON.ThinkingTokens); err != nil {
				return false, err
			}
		}
		return s.emitUsage(emit), nil
	case "message_stop":
		s.stopped = true
		if len(s.blocks) > 0 {
			return false, malformed("message_stop came with %d content blocks still open", len(s.blocks))
		}
		s.m.thoughts.remember(s.firstCall, s.thoughts)
		if msg := stopFailure(s.stopReason); msg != "" {
			// The model ended the turn itself: its usage is final
			// (StopReason); without a stop_reason, nobody said so.
			return emit(contract.ChatEvent{Kind: contract.ChatFailure, Failure: msg, StopReason: s.stopReason}), nil
		}
		return true, nil
	}
	// The API may add event types; an unknown one carries nothing this
	// port can express, so it is skipped, as Anthropic's versioning
	// policy asks.
	return true, nil
}

// stopFailure is the failure a message's stop_reason makes of the turn,
// "" for a turn that ended normally. It is the rule Chat Completions'
// finish_reason follows in providers/openai, so that a turn ends the same
// way whichever API served it:
//
//   - end_turn, stop_sequence and tool_use are answers: the model finished
//     (tool_use: with the calls it made, yielded before; a call of a tool
//     that was not offered is still yielded, for the caller to record).
//   - max_tokens and model_context_window_exceeded cut the answer short,
//     as finish_reason length does: what was produced is not what was
//     asked, and a tool call cut there may be incomplete.
//   - refusal: the API's classifiers stopped the answer (finish_reason
//     content_filter).
//   - pause_turn: the API paused a long-running turn and expects the
//     caller to send it back to continue. This port offers no server
//     tools (the only ones the API pauses for) and cannot resume a turn,
//     so a paused turn is unfinished: settling it as an answer would pass
//     off part of one as the whole.
//   - no stop_reason, or one this package does not know, cannot be read
//     as an answer (finish_reason missing or unknown fails the same way).
func stopFailure(reason string) string {
	switch reason {
	case "end_turn", "stop_sequence", "tool_use":
		return ""
	case "max_tokens":
		return "the response was cut at its token limit (stop_reason max_tokens)"
	case "model_context_window_exceeded":
		return "the response was cut at the model's context window (stop_reason model_context_window_exceeded)"
	case "refusal":
		return "refusal: the API stopped the response for policy reasons (stop_reason refusal)"
	case "pause_turn":
		return "the API paused the turn, which cannot be resumed here: the answer is unfinished (stop_reason pause_turn)"
	case "":
		return "the message ended without a stop_reason"
	}
	return "the response stopped with an unknown reason (stop_reason " + reason + ")"
}

func (s *turnState) start(ev *sdk.MessageStreamEventUnion, emit func(contract.ChatEvent) bool) (bool, error) {
	if s.started {
		return false, malformed("a second message_start")
	}
	s.started = true
	msg := &ev.Message
	if !msg.JSON.Model.Valid() || msg.Model == "" {
		return false, malformed("message_start names no model")
	}
	s.served = string(msg.Model)
	u := &msg.Usage
	if msg.JSON.Usage.Valid() {
		err := s.observeCounts(
			reported{u.InputTokens, u.JSON.InputTokens}, reported{u.OutputTokens, u.JSON.OutputTokens},
			reported{u.CacheReadInputTokens, u.JSON.CacheReadInputTokens}, reported{u.CacheCreationInputTokens, u.JSON.CacheCreationInputTokens})
		if err != nil {
			return false, err
		}
	}
	// The served model is reported, not judged: the consumer (the
	// kernel's tool loop) owns the rule of what counts as the requested
	// model.
	if !emit(contract.ChatEvent{Kind: contract.ChatServed, Model: s.served}) {
		return false, nil
	}
	return s.emitUsage(emit), nil
}

// reported is one usage counter as decoded, with its presence.
type reported struct {
	v int64
	f respjson.Field
}

// observeCounts records the input, output, cache read and cache creation
// counters of one usage object (message_start's or message_delta's).
func (s *turnState) observeCounts(input, output, cacheRead, cacheWrite reported) error {
	for _, c := range [...]struct {
		dst *count
		r   reported
	}{{&s.input, input}, {&s.output, output}, {&s.cacheRead, cacheRead}, {&s.cacheWrite, cacheWrite}} {
		if err := s.observe(c.dst, c.r.v, c.r.f); err != nil {
			return err
		}
	}
	return nil
}

// observe records one counter the server sent: absent or null leaves it
// as it was, a value of the wrong type or a negative one is malformed.
func (s *turnState) observe(dst *count, v int64, f respjson.Field) error {
	if !f.Valid() {
		if raw := f.Raw(); raw != "" && raw != respjson.Null {
			return malformed("a usage count is %s", raw)
		}
		return nil
	}
	if v < 0 {
		return malformed("a usage count is negative (%d)", v)
	}
	*dst = &v
	return nil
}

// emitUsage yields the turn's usage so far, cumulative, when both input
// and output tokens are known: contract.TokenUsage cannot say that one of
// them is unknown, so a turn missing either reports no usage at all
// (unknown, never 0).
//
// InputTokens is the whole prompt (spec runtime §2.1, the rule every
// provider follows): the API's input_tokens counts only the tokens after
// the last cache breakpoint, so the cache reads and writes it reports
// beside it are added in, and stay broken out in CacheReadInputTokens and
// CacheCreationInputTokens. A cache counter the server did not send stays
// unknown (nil) and adds nothing: the Messages API sends both on every
// message_start (0 when the cache was not touched), so a missing one means
// an endpoint that does not cache, whose input_tokens is already the whole
// prompt. Were an endpoint to cache and withhold the counter, the total
// would be short by it; nothing in the stream could tell.
func (s *turnState) emitUsage(emit func(contract.ChatEvent) bool) bool {
	if s.input == nil || s.output == nil {
		return true
	}
	input := *s.input
	for _, c := range []count{s.cacheRead, s.cacheWrite} {
		if c != nil {
			input += *c
		}
	}
	u := &contract.TokenUsage{
		InputTokens:              input,
		OutputTokens:             *s.output,
		CacheReadInputTokens:     copyCount(s.cacheRead),
		CacheCreationInputTokens: copyCount(s.cacheWrite),
		ReasoningTokens:          copyCount(s.thinking),
	}
	return emit(contract.ChatEvent{Kind: contract.ChatUsage, Usage: u, UsageMode: contract.UsageCumulative})
}

func copyCount(c count) *int64 {
	if c == nil {
		return nil
	}
	v := *c
	return &v
}

func (s *turnState) blockStart(ev *sdk.MessageStreamEventUnion, emit func(contract.ChatEvent) bool) (bool, error) {
	if _, open := s.blocks[ev.Index]; open {
		return false, malformed("content block %d started twice", ev.Index)
	}
	cb := &ev.ContentBlock
	b := &block{kind: cb.Type}
	switch cb.Type {
	case "tool_use":
		if cb.ID == "" || cb.Name == "" {
			return false, malformed("a tool_use block without id or name")
		}
		b.id, b.name = cb.ID, cb.Name
	case "thinking":
		b.text.WriteString(cb.Thinking)
		b.sig = cb.Signature
	case "redacted_thinking":
		b.data = cb.Data
	}
	if s.blocks == nil {
		s.blocks = map[int64]*block{}
	}
	s.blocks[ev.Index] = b
	if cb.Type == "text" && cb.Text != "" {
		return emit(contract.ChatEvent{Kind: contract.ChatText, Text: cb.Text}), nil
	}
	return true, nil
}

func (s *turnState) blockDelta(ev *sdk.MessageStreamEventUnion, emit func(contract.ChatEvent) bool) (bool, error) {
	b, ok := s.blocks[ev.Index]
	if !ok {
		return false, malformed("a delta for content block %d, which is not open", ev.Index)
	}
	d := &ev.Delta
	switch d.Type {
	case "text_delta":
		if b.kind != "text" {
			return false, malformed("a text_delta in a %s block", b.kind)
		}
		if d.Text != "" {
			return emit(contract.ChatEvent{Kind: contract.ChatText, Text: d.Text}), nil
		}
	case "input_json_delta":
		if b.kind != "tool_use" {
			return false, malformed("an input_json_delta in a %s block", b.kind)
		}
		b.json.WriteString(d.PartialJSON)
	case "thinking_delta":
		if b.kind != "thinking" {
			return false, malformed("a thinking_delta in a %s block", b.kind)
		}
		b.text.WriteString(d.Thinking)
	case "signature_delta":
		if b.kind != "thinking" {
			return false, malformed("a signature_delta in a %s block", b.kind)
		}
		b.sig += d.Signature
	}
	// Other deltas (citations, and types the API may add) carry nothing
	// this port expresses.
	return true, nil
}

func (s *turnState) blockStop(ev *sdk.MessageStreamEventUnion, emit func(contract.ChatEvent) bool) (bool, error) {
	b, ok := s.blocks[ev.Index]
	if !ok {
		return false, malformed("content block %d stopped but was not open", ev.Index)
	}
	delete(s.blocks, ev.Index)
	switch b.kind {
	case "thinking":
		s.thoughts = append(s.thoughts, thought{text: b.text.String(), signature: b.sig})
	case "redacted_thinking":
		s.thoughts = append(s.thoughts, thought{redacted: true, text: b.data})
	case "tool_use":
		if s.firstCall == "" {
			s.firstCall = b.id
		}
		return emit(contract.ChatEvent{Kind: contract.ChatToolCall, ToolCall: contract.ToolCall{ID: b.id, Name: b.name, Args: decodeArgs(b.json.String())}}), nil
	}
	return true, nil
}

// decodeArgs decodes a tool_use's streamed input as contract.ToolCall
// asks: no input is an empty object, and text that is not JSON is the
// absent Value.
func decodeArgs(text string) canonjson.Value {
	if strings.TrimSpace(text) == "" {
		return canonjson.ObjectValue(nil)
	}
	v, err := canonjson.Decode([]byte(text))
	if err != nil {
		return canonjson.Value{}
	}
	return v
}
