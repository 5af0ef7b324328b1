package openai

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentrt/agentrt/contract"
)

// The Responses request body is written with the package's own types,
// not the SDK's responses.ResponseNewParams: the SDK's input unions can
// write an assistant's earlier text only as an output message with a
// required id and status this package does not have, and the few fields
// sent here are easier to see whole.

// responsesRequest is the body of POST {base}/responses.
type responsesRequest struct {
	Model string          `json:"model"`
	Input []responsesItem `json:"input"`
	Tools []responsesTool `json:"tools,omitempty"`
	// Reasoning is sent only when the turn requests a native effort.
	Reasoning       *responsesReasoning `json:"reasoning,omitempty"`
	MaxOutputTokens *int64              `json:"max_output_tokens,omitempty"`
	// Store is always false: the transcript travels whole with every
	// request, and nothing is kept on the endpoint for a later one.
	Store  bool `json:"store"`
	Stream bool `json:"stream"`
}

// responsesItem is one input item: a message (Role and Content), a
// function_call the model made earlier (CallID, Name, Arguments) or the
// function_call_output that answered it (CallID, Output).
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role,omitempty"`
	Content   []responsesPart `json:"content,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments *string         `json:"arguments,omitempty"`
	Output    *string         `json:"output,omitempty"`
}

// responsesPart is a message's text: input_text for what the system and
// the user said, output_text for what the assistant said.
type responsesPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// responsesTool is a function tool. Strict is always sent, false: the
// Responses API's default is strict, which would reject (or silently
// rewrite) every input schema that is not in its strict subset, where
// Chat Completions' default takes the schema as written.
type responsesTool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
	Strict      bool           `json:"strict"`
}

// responsesReasoning is the reasoning control: the harness table's
// native token for the turn's effort.
type responsesReasoning struct {
	Effort string `json:"effort"`
}

// responsesParams builds a Responses request of the turn: the
// transcript as input items, the tools, the reasoning and output
// controls when set, store false and stream true.
func responsesParams(r request, messages []contract.ChatMessage, tools []contract.Tool) (*responsesRequest, error) {
	p := &responsesRequest{Model: r.model, MaxOutputTokens: r.maxTokens, Stream: true}
	if r.effort != "" {
		p.Reasoning = &responsesReasoning{Effort: r.effort}
	}
	input, err := responsesInput(messages)
	if err != nil {
		return nil, err
	}
	p.Input = input
	for _, t := range tools {
		schema, err := toolSchema(t)
		if err != nil {
			return nil, err
		}
		p.Tools = append(p.Tools, responsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schema})
	}
	return p, nil
}

// responsesInput writes the transcript as input items: a message for
// each system, user and assistant text, a function_call item for each
// call an assistant message made and a function_call_output item for
// each tool result. Calls and results must carry their call id, which is
// all that pairs them.
func responsesInput(in []contract.ChatMessage) ([]responsesItem, error) {
	out := make([]responsesItem, 0, len(in))
	message := func(role, part, text string) responsesItem {
		return responsesItem{Type: "message", Role: role, Content: []responsesPart{{Type: part, Text: text}}}
	}
	for i, msg := range in {
		content := ""
		if msg.Content != nil {
			content = *msg.Content
		}
		switch msg.Role {
		case contract.ChatSystem:
			out = append(out, message("system", "input_text", content))
		case contract.ChatUser:
			out = append(out, message("user", "input_text", content))
		case contract.ChatTool:
			if msg.ToolCallID == "" {
				return nil, fmt.Errorf("%w: message %d is a tool result without a call id", ErrBadTranscript, i)
			}
			out = append(out, responsesItem{Type: "function_call_output", CallID: msg.ToolCallID, Output: &content})
		case contract.ChatAssistant:
			if msg.Content != nil && (content != "" || len(msg.ToolCalls) == 0) {
				out = append(out, message("assistant", "output_text", content))
			}
			for _, c := range msg.ToolCalls {
				if c.ID == "" {
					return nil, fmt.Errorf("%w: message %d has a tool call without an id", ErrBadTranscript, i)
				}
				args := callArgs(c)
				out = append(out, responsesItem{Type: "function_call", CallID: c.ID, Name: c.Name, Arguments: &args})
			}
		default:
			return nil, fmt.Errorf("%w: message %d has role %q", ErrBadTranscript, i, msg.Role)
		}
	}
	return out, nil
}

// responsesState decodes a Responses stream's events into chat events:
// output text deltas as they arrive, function calls assembled from their
// items and argument deltas and yielded whole when the response
// completes, the completed response's usage and served model, and
// response.incomplete, response.failed, an error event or a refusal as a
// ChatFailure. The endpoint is done when it sends one of those terminal
// events.
type responsesState struct {
	streamBase
	// pending are the function calls whose items are still open, by
	// item id; calls those whose items are done, in output order.
	pending   map[string]*pendingCall
	calls     []doneCall
	refusal   strings.Builder
	completed bool
	// yielded: the done calls were handed over (at the verdict, or
	// salvaged from a turn that ended early).
	yielded bool
}

// pendingCall is a function call whose item is still streaming.
type pendingCall struct {
	callID, name string
	args         strings.Builder
}

// doneCall is a function call whose item is done.
type doneCall struct {
	index int64
	call  contract.ToolCall
}

func newResponsesState(secret string) *responsesState {
	return &responsesState{streamBase: streamBase{secret: secret}, pending: map[string]*pendingCall{}}
}

func (s *responsesState) over() bool { return s.completed || s.failed }

// yieldCalls yields the function calls whose items are done, in output
// order, once. It reports false when the consumer stopped reading.
func (s *responsesState) yieldCalls(yield func(contract.ChatEvent, error) bool) bool {
	if s.yielded {
		return true
	}
	s.yielded = true
	slices.SortStableFunc(s.calls, func(a, b doneCall) int { return cmp.Compare(a.index, b.index) })
	for _, c := range s.calls {
		if !yield(contract.ChatEvent{Kind: contract.ChatToolCall, ToolCall: c.call}, nil) {
			return false
		}
	}
	return true
}

// salvage hands over, from a stream that ended early, the function calls
// whose items were done: each is a whole call the model made (the caller
// records it; a failed turn's calls are not run). A call whose item was
// still open is partial and is dropped.
func (s *responsesState) salvage(yield func(contract.ChatEvent, error) bool) bool {
	return s.yieldCalls(yield)
}

// responsesEvent is the part of a Responses stream event this package
// reads; every event carries its type in the data as well as in the
// event line.
type responsesEvent struct {
	Type        string               `json:"type"`
	ItemID      string               `json:"item_id"`
	OutputIndex int64                `json:"output_index"`
	Delta       json.RawMessage      `json:"delta"`
	Arguments   *string              `json:"arguments"`
	Item        *responsesOutputItem `json:"item"`
	Response    *responsesResponse   `json:"response"`
	// Code, Message and Error are an error event's (flat, or nested in
	// error on some endpoints).
	Code    any             `json:"code"`
	Message string          `json:"message"`
	Error   json.RawMessage `json:"error"`
}

// responsesOutputItem is an output item: a function_call's call id, name
// and arguments, or a message's content parts (for refusals).
type responsesOutputItem struct {
	Type      string  `json:"type"`
	ID        string  `json:"id"`
	CallID    string  `json:"call_id"`
	Name      string  `json:"name"`
	Arguments *string `json:"arguments"`
	Content   []struct {
		Type    string `json:"type"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

// responsesResponse is the response object the lifecycle events carry.
type responsesResponse struct {
	ID                string          `json:"id"`
	Model             string          `json:"model"`
	Status            string          `json:"status"`
	Usage             *responsesUsage `json:"usage"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// responsesUsage is a response's token usage. Counts the endpoint did
// not send stay nil.
type responsesUsage struct {
	InputTokens        *int64 `json:"input_tokens"`
	OutputTokens       *int64 `json:"output_tokens"`
	TotalTokens        *int64 `json:"total_tokens"`
	InputTokensDetails *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens *int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	// Cost is the dollars a router billed (reportedCost), kept raw so a
	// value that is not a number is no report rather than a malformed
	// event.
	Cost json.RawMessage `json:"cost"`
}

// feed takes one event. Its type is the data's "type", else the event
// line's name; a data line that is empty or "[DONE]" (sent by some
// compatible endpoints after the terminal event) carries nothing.
func (s *responsesState) feed(ev ssestream.Event, yield func(contract.ChatEvent, error) bool) (stop bool, err error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || bytes.Equal(data, []byte("[DONE]")) {
		return false, nil
	}
	var e responsesEvent
	if data[0] != '{' || json.Unmarshal(data, &e) != nil {
		return true, fmt.Errorf("%w: a Responses event that is not a JSON object", ErrMalformed)
	}
	typ := cmp.Or(e.Type, ev.Type)
	if e.Type != "" && ev.Type != "" && e.Type != ev.Type {
		return true, fmt.Errorf("%w: event %s carries type %s", ErrMalformed, ev.Type, e.Type)
	}
	if e.Response != nil {
		if e.Response.ID != "" && s.id == "" {
			s.id = e.Response.ID
		}
		if stop, err := s.serve(e.Response.Model, yield); stop || err != nil {
			return true, err
		}
	}
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		// The lifecycle events' response usually carries usage null; an
		// endpoint that counts as it goes reports the running total here,
		// which must not be lost if the stream then ends early.
		return s.responseUsage(e.Response, yield)
	case "":
		return true, fmt.Errorf("%w: an event without a type", ErrMalformed)
	case "response.output_text.delta":
		text, err := deltaText(e.Delta)
		if err != nil {
			return true, err
		}
		return text != "" && !yield(contract.ChatEvent{Kind: contract.ChatText, Text: text}, nil), nil
	case "response.refusal.delta":
		text, err := deltaText(e.Delta)
		s.refusal.WriteString(text)
		return err != nil, err
	case "response.output_item.added":
		if e.Item != nil && e.Item.Type == "function_call" {
			return s.open(e.Item)
		}
	case "response.function_call_arguments.delta":
		text, err := deltaText(e.Delta)
		if err != nil {
			return true, err
		}
		c, ok := s.pending[e.ItemID]
		if !ok {
			return true, fmt.Errorf("%w: arguments for function call item %q, which was never added", ErrMalformed, e.ItemID)
		}
		c.args.WriteString(text)
	case "response.function_call_arguments.done":
		if c, ok := s.pending[e.ItemID]; ok && e.Arguments != nil {
			c.args.Reset()
			c.args.WriteString(*e.Arguments)
		}
	case "response.output_item.done":
		return s.itemDone(e.OutputIndex, e.Item)
	case "response.completed":
		return true, s.complete(e.Response, yield)
	case "response.incomplete":
		s.finish = "incomplete"
		reason := "no reason given"
		if e.Response != nil && e.Response.IncompleteDetails != nil && e.Response.IncompleteDetails.Reason != "" {
			reason = e.Response.IncompleteDetails.Reason
		}
		if !s.yieldCalls(yield) {
			return true, nil
		}
		if stop, err := s.responseUsage(e.Response, yield); stop || err != nil {
			return true, err
		}
		return true, s.stopped("the response is incomplete ("+reason+")", "incomplete: "+reason, yield)
	case "response.failed":
		s.finish = "failed"
		if !s.yieldCalls(yield) {
			return true, nil
		}
		if stop, err := s.responseUsage(e.Response, yield); stop || err != nil {
			return true, err
		}
		if e.Response != nil && len(e.Response.Error) > 0 && string(e.Response.Error) != "null" {
			return true, s.inBandError(e.Response.Error, yield)
		}
		return true, s.fail("the response failed", yield)
	case "error":
		if !s.yieldCalls(yield) {
			return true, nil
		}
		if len(e.Error) > 0 && string(e.Error) != "null" {
			return true, s.inBandError(e.Error, yield)
		}
		raw, _ := json.Marshal(errorObject{Message: e.Message, Code: e.Code})
		return true, s.inBandError(raw, yield)
	}
	return false, nil
}

// deltaText decodes a delta, which must be a JSON string.
func deltaText(raw json.RawMessage) (string, error) {
	var text string
	if len(raw) == 0 || json.Unmarshal(raw, &text) != nil {
		return "", fmt.Errorf("%w: a delta that is not a string", ErrMalformed)
	}
	return text, nil
}

// open starts a function call's item.
func (s *responsesState) open(it *responsesOutputItem) (bool, error) {
	if it.ID == "" {
		return true, fmt.Errorf("%w: a function call item without an id", ErrMalformed)
	}
	if _, dup := s.pending[it.ID]; dup {
		return true, fmt.Errorf("%w: function call item %q added twice", ErrMalformed, it.ID)
	}
	if len(s.pending)+len(s.calls) >= maxToolCalls {
		return true, fmt.Errorf("%w: more than %d tool calls", ErrMalformed, maxToolCalls)
	}
	c := &pendingCall{callID: it.CallID, name: it.Name}
	if it.Arguments != nil {
		c.args.WriteString(*it.Arguments)
	}
	s.pending[it.ID] = c
	return false, nil
}

// itemDone closes an output item: a function call is complete with the
// item's call id, name and arguments (else, where the item leaves them
// empty, those its added event and deltas carried); a message's refusal parts are kept for the verdict.
func (s *responsesState) itemDone(index int64, it *responsesOutputItem) (bool, error) {
	if it == nil {
		return true, fmt.Errorf("%w: response.output_item.done without an item", ErrMalformed)
	}
	switch it.Type {
	case "message":
		for _, p := range it.Content {
			if p.Type == "refusal" && s.refusal.Len() == 0 {
				s.refusal.WriteString(cmp.Or(p.Refusal, "(no reason given)"))
			}
		}
	case "function_call":
		p := s.pending[it.ID]
		delete(s.pending, it.ID)
		if p == nil {
			if len(s.calls) >= maxToolCalls {
				return true, fmt.Errorf("%w: more than %d tool calls", ErrMalformed, maxToolCalls)
			}
			p = &pendingCall{}
		}
		args := p.args.String()
		if it.Arguments != nil && *it.Arguments != "" {
			args = *it.Arguments
		}
		call := contract.ToolCall{ID: cmp.Or(it.CallID, p.callID), Name: cmp.Or(it.Name, p.name), Args: toolArgs(args)}
		if call.ID == "" || call.Name == "" {
			return true, fmt.Errorf("%w: a function call without a call id or name", ErrMalformed)
		}
		s.calls = append(s.calls, doneCall{index: index, call: call})
	}
	return false, nil
}

// complete is the verdict on response.completed: a refusal, a status
// other than completed or a function call whose item never closed fail
// the turn; otherwise its calls are yielded in output order, then its
// usage.
func (s *responsesState) complete(r *responsesResponse, yield func(contract.ChatEvent, error) bool) error {
	if r == nil {
		return fmt.Errorf("%w: response.completed without a response", ErrMalformed)
	}
	s.finish = cmp.Or(r.Status, "completed")
	if len(s.pending) > 0 {
		return fmt.Errorf("%w: the response completed with a function call still open", ErrMalformed)
	}
	if s.refusal.Len() > 0 || s.finish != "completed" {
		// The calls were made and the tokens spent all the same: both
		// are handed over before the failure (a failed turn's calls are
		// recorded, not run).
		if !s.yieldCalls(yield) {
			return nil
		}
		if stop, err := s.responseUsage(r, yield); stop || err != nil {
			return err
		}
		if s.refusal.Len() > 0 {
			return s.stopped("the model refused: "+s.refusal.String(), "refusal", yield)
		}
		return s.stopped("the response completed with status "+s.finish, s.finish, yield)
	}
	s.completed = true
	if !s.yieldCalls(yield) {
		return nil
	}
	_, err := s.responseUsage(r, yield)
	return err
}

// responseUsage yields the usage a response carries, if any.
func (s *responsesState) responseUsage(r *responsesResponse, yield func(contract.ChatEvent, error) bool) (stop bool, err error) {
	if r == nil || r.Usage == nil {
		return false, nil
	}
	u, err := responsesTokenUsage(r.Usage)
	if err != nil {
		return true, err
	}
	return s.report(u, yield), nil
}

// responsesTokenUsage converts a response's usage by the rule the chat
// path's tokenUsage applies: no input or output count is no report
// (unknown), a negative count is malformed.
func responsesTokenUsage(u *responsesUsage) (*contract.TokenUsage, error) {
	if u.InputTokens == nil || u.OutputTokens == nil {
		return nil, nil
	}
	out := &contract.TokenUsage{InputTokens: *u.InputTokens, OutputTokens: *u.OutputTokens, TotalTokens: u.TotalTokens}
	if u.InputTokensDetails != nil {
		out.CacheReadInputTokens = u.InputTokensDetails.CachedTokens
	}
	if u.OutputTokensDetails != nil {
		out.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
	}
	out.Cost = reportedCost(u.Cost)
	if err := checkUsage(out); err != nil {
		return nil, err
	}
	return out, nil
}
