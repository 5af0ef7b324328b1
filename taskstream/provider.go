package taskstream

import (
	"context"
	"errors"
	"iter"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// ProviderBackend runs a task's turn as one exact kernel run of Profile
// on Provider, recorded in Store: text and reasoning parts become
// text_delta and reasoning_delta events, tool parts tool_call and
// tool_result, and the run's observed usage one llm_call (unknown counts
// stay unknown). A run that does not complete — the provider refused it,
// the stream failed in band or ended without a terminal, another model
// was served — is the backend's failure, with the kernel's *RunError.
type ProviderBackend struct {
	Provider contract.Provider
	Profile  *profile.Profile
	Store    store.Store
	// Check, when set, judges delivery: a completed run it does not
	// pass fails the task. Without one a completed run completes it.
	Check kernel.Check
}

// Kind is "provider:" and the provider's name.
func (b *ProviderBackend) Kind() string { return "provider:" + b.Provider.Name() }

// Stream implements Backend. The kernel run's prompt is the input's
// message, or the task's intent when there is none.
func (b *ProviderBackend) Stream(ctx context.Context, in Input, bc BackendContext) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		task := in.Message
		if task == "" {
			task = in.Task.Intent
		}
		run := kernel.StreamRun(ctx, kernel.Request{
			Profile: b.Profile, Task: task, Provider: b.Provider, Store: b.Store, Check: b.Check,
			RunID: kernel.NewID("task-" + in.Task.ID),
		})
		tools := map[string]string{} // tool call id → last status reported
		for env, err := range run.Events() {
			if err != nil {
				yield(Event{}, transportOf(err))
				return
			}
			u := env.Event.MessagePartUpdated
			if u == nil {
				continue
			}
			for _, e := range partEvents(u, tools) {
				if !yield(e, nil) {
					return
				}
			}
		}
		res, err := run.Result()
		if res != nil && !yield(Event{Type: EventLLMCall, LLMCall: llmCall(res)}, nil) {
			return
		}
		if err == nil && b.Check != nil && res != nil && !res.Delivered {
			err = errors.New("the run completed but its check did not pass")
		}
		if err != nil {
			yield(Event{}, transportOf(err))
		}
	}
}

// transportOf is err as a *TransportError when the run failed at the
// transport (kernel.ReasonTransport: the provider's stream broke), so
// the task stream reports it typed (backend_error kind transport, §3.2,
// behaviour 23): with the HTTP status of the answer that broke it when
// an error in the chain carries one (HTTPStatus), else 0 (the
// connection failed or was cut). Any other error is returned unchanged.
func transportOf(err error) error {
	var re *kernel.RunError
	if !errors.As(err, &re) || re.Reason != kernel.ReasonTransport {
		return err
	}
	status := 0
	var h interface{ HTTPStatus() int }
	if errors.As(err, &h) {
		status = h.HTTPStatus()
	}
	return &TransportError{Status: status, Err: err}
}

// partEvents maps one part update to task stream events.
func partEvents(u *contract.MessagePartUpdatedEvent, tools map[string]string) []Event {
	p := u.Part
	switch p.Type {
	case contract.PartTypeText, contract.PartTypeReasoning:
		if u.Delta == nil || *u.Delta == "" {
			return nil
		}
		typ := EventTextDelta
		if p.Type == contract.PartTypeReasoning {
			typ = EventReasoningDelta
		}
		return []Event{{Type: typ, Text: *u.Delta}}
	case contract.PartTypeTool:
		if p.State == nil || p.Tool == nil {
			return nil
		}
		id := p.ID
		if p.CallID != nil {
			id = *p.CallID
		}
		prev, seen := tools[id]
		tools[id] = p.State.Status
		var out []Event
		if !seen {
			e := Event{Type: EventToolCall, ToolName: *p.Tool, ToolCallID: id}
			if len(p.State.Input) > 0 {
				e.Args, _ = canonjson.ToValue(p.State.Input)
			}
			out = append(out, e)
		}
		switch p.State.Status {
		case contract.ToolStatusCompleted, contract.ToolStatusError, contract.ToolStatusFailed:
			if prev != p.State.Status {
				out = append(out, Event{Type: EventToolResult, ToolName: *p.Tool, ToolCallID: id, Result: p.State.Output})
			}
		}
		return out
	}
	return nil
}

// llmCall is a kernel run's observed usage as one model call.
func llmCall(res *kernel.Result) *LLMCall {
	u := res.Usage
	c := &LLMCall{Model: res.Served.Model, TokensKnown: u.InputTokens.Known() && u.OutputTokens.Known(), USDKnown: u.CostUSD.Known()}
	if c.Model == "" {
		c.Model = res.RequestedModel
	}
	c.TokensIn = amount(u.InputTokens)
	c.TokensOut = amount(u.OutputTokens)
	if u.CostUSD.Reported {
		v := u.CostUSD.Value
		c.CostUSD = &v
	}
	return c
}

// amount is a reported count (a floor when not complete: TokensKnown
// says which), nil when unknown.
func amount(a ledger.Amount[int64]) *int64 {
	if !a.Reported {
		return nil
	}
	v := a.Value
	return &v
}
