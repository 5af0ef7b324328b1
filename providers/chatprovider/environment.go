package chatprovider

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// errTurnTimeout is the cause of a turn cut short by its own timeoutMs:
// the turn failed, the caller did not cancel it.
var errTurnTimeout = errors.New("the turn's timeoutMs elapsed before the completion ended")

// Environment is one profile bound to the vendor. It implements
// contract.Environment and no optional ability.
type Environment struct {
	p        *Provider
	st       *envState
	creation contract.Creation
}

var _ contract.Environment = (*Environment)(nil)

// ID implements contract.Environment.
func (e *Environment) ID() string { return e.st.id }

// Provider implements contract.Environment.
func (e *Environment) Provider() string { return e.p.cfg.Name }

// Name implements contract.Environment.
func (e *Environment) Name() string { return e.st.name }

// Creation implements contract.Environment.
func (e *Environment) Creation() contract.Creation { return e.creation }

// Metadata implements contract.Environment.
func (e *Environment) Metadata() map[string]canonjson.Value { return maps.Clone(e.st.metadata) }

// Capabilities implements contract.Environment: the provider's document
// applies.
func (e *Environment) Capabilities() *contract.Capabilities { return nil }

// Status implements contract.Environment: running until destroyed.
func (e *Environment) Status(ctx context.Context) (contract.EnvironmentStatus, error) {
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	if e.st.destroyed {
		return contract.EnvironmentStopped, nil
	}
	return contract.EnvironmentRunning, nil
}

// Destroy implements contract.Environment. Turns still streaming run to
// their end; no new turn starts. A later create under the same key
// creates again.
func (e *Environment) Destroy(ctx context.Context) error {
	e.st.mu.Lock()
	e.st.destroyed = true
	e.st.mu.Unlock()
	if e.st.key != "" {
		e.p.keyed.Forget(e.st.key)
	}
	return nil
}

// Stream implements contract.Environment: one model turn of the
// profile's system prompt and the turn's prompt. It yields
// execution.started, a message.part.updated per text delta, a usage
// event per usage the model reported, and a terminal event — done, error
// (the model failed the turn in-band) or execution.cancelled — whose
// effectiveBackend names the served model. A turn cut short by its
// timeoutMs ends with an error event; a broken stream ends with its
// error instead. A turn the provider cannot honour is refused before any
// request.
func (e *Environment) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		t, err := e.admit(in)
		if err != nil {
			yield(contract.EnvironmentEvent{}, err)
			return
		}
		if in != nil && in.TimeoutMs != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeoutCause(ctx, time.Duration(*in.TimeoutMs)*time.Millisecond, errTurnTimeout)
			defer cancel()
		}
		t.play(ctx, yield)
	}
}

// admit checks a turn and prepares it; every refusal precedes the
// request.
func (e *Environment) admit(in *contract.TurnInput) (*turnPlay, error) {
	if in == nil {
		in = &contract.TurnInput{}
	}
	p, st := e.p, e.st
	st.mu.Lock()
	destroyed := st.destroyed
	st.turns++
	n := st.turns
	st.mu.Unlock()
	if destroyed {
		return nil, fmt.Errorf("%w: %s", p.cfg.ErrDestroyed, st.id)
	}
	var errs []error
	refuse := func(present bool, what string) {
		if present {
			errs = append(errs, p.unsupported("a turn with "+what))
		}
	}
	refuse(in.ControlRef != nil, "a control reference (no retained control)")
	refuse(in.ContextTransfer != nil, "a context transfer")
	refuse(in.NativeContinuation != nil, "a native continuation")
	refuse(in.Detach != nil && *in.Detach, "detach")
	refuse(in.TurnID != nil, "a turn id (no turn idempotency)")
	refuse(in.SessionID != nil || in.ExecutionID != nil || in.LastEventID != nil, "a session, execution or replay position (no sessions)")
	refuse(len(in.Context) > 0, "context")
	refuse(len(in.ProviderOptions) > 0, "provider options")
	refuse(len(in.Interactions) > 0, "interactions")
	prompt, err := p.promptOf(in)
	if err != nil {
		errs = append(errs, err)
	}
	pr := st.profile
	if in.Profile != nil {
		if err := p.CheckProfile(in.Profile); err != nil {
			errs = append(errs, err)
		}
		pr = in.Profile
	}
	set, err := p.settings(pr, in.Model)
	if err != nil {
		errs = append(errs, err)
	}
	var turn Turn
	if len(errs) == 0 {
		// Dispatch sees only a turn nothing else refused.
		turn, err = p.cfg.Dispatch(set)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: turn refused before dispatch: %w", p.cfg.Vendor, err)
	}
	return &turnPlay{env: e, n: n, turn: turn, messages: Messages(pr, prompt)}, nil
}

// promptOf is the turn's prompt: its text, or its text parts joined. A
// part of another type cannot be sent and is refused.
func (p *Provider) promptOf(in *contract.TurnInput) (string, error) {
	var b strings.Builder
	if in.Prompt != nil {
		b.WriteString(*in.Prompt)
	}
	for i, part := range in.Parts {
		if part.Type != "text" || part.Text == nil {
			return "", p.unsupported(fmt.Sprintf("input part %d of type %q (only text)", i, part.Type))
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(*part.Text)
	}
	if b.Len() == 0 {
		return "", p.unsupported("no prompt")
	}
	return b.String(), nil
}

// Messages is the transcript of a turn of profile pr: the system message
// (profile.SystemMessage; none when it is empty), then the prompt.
func Messages(pr *profile.Profile, prompt string) []contract.ChatMessage {
	var msgs []contract.ChatMessage
	if sys := profile.SystemMessage(pr); sys != "" {
		msgs = append(msgs, contract.ChatMessage{Role: contract.ChatSystem, Content: &sys})
	}
	return append(msgs, contract.ChatMessage{Role: contract.ChatUser, Content: &prompt})
}

// turnPlay is one admitted turn.
type turnPlay struct {
	env      *Environment
	n, seq   int
	turn     Turn
	messages []contract.ChatMessage
	text     strings.Builder
	served   string
	failure  string
	// stopReason is the failure's ChatEvent.StopReason.
	stopReason string
}

func (t *turnPlay) id() *string {
	t.seq++
	s := fmt.Sprintf("%s-t%d-e%d", t.env.st.id, t.n, t.seq)
	return &s
}

func (t *turnPlay) emit(yield func(contract.EnvironmentEvent, error) bool, typ string, data map[string]canonjson.Value, norm *contract.StreamEvent) bool {
	if data == nil {
		data = map[string]canonjson.Value{}
	}
	return yield(contract.EnvironmentEvent{Type: typ, Data: data, ID: t.id(), Normalized: norm}, nil)
}

// end yields the turn's terminal event e with its id.
func (t *turnPlay) end(yield func(contract.EnvironmentEvent, error) bool, e contract.EnvironmentEvent) {
	e.ID = t.id()
	yield(e, nil)
}

func status(s string, detail *string) *contract.StreamEvent {
	e := contract.StatusStreamEvent(s, detail)
	return &e
}

func (t *turnPlay) play(ctx context.Context, yield func(contract.EnvironmentEvent, error) bool) {
	if !t.emit(yield, "execution.started", nil, status(contract.StreamStatusStarted, nil)) {
		return
	}
	for ev, err := range t.turn.Model.Turn(ctx, t.messages, nil) {
		if err != nil {
			// The usage, text and served model the turn reported before
			// its end were yielded as they came; the terminal event
			// repeats the served model, as every terminal event does.
			if errors.Is(context.Cause(ctx), errTurnTimeout) {
				t.end(yield, contract.FailedEvent(errTurnTimeout.Error(), map[string]canonjson.Value{"effectiveBackend": t.backend()}))
				return
			}
			if ctx.Err() != nil {
				t.end(yield, contract.CancelledEvent(map[string]canonjson.Value{"effectiveBackend": t.backend()}))
				return
			}
			yield(contract.EnvironmentEvent{}, err)
			return
		}
		if !t.event(ev, yield) {
			return
		}
	}
	backend := t.backend()
	if t.failure != "" {
		data := map[string]canonjson.Value{"effectiveBackend": backend}
		if t.stopReason != "" {
			// The model ended the turn itself, so its usage is final
			// (kernel.StopReasonMember).
			data["stopReason"] = canonjson.StringValue(t.stopReason)
		}
		t.end(yield, contract.FailedEvent(t.failure, data))
		return
	}
	data := map[string]canonjson.Value{
		"text":             canonjson.StringValue(t.text.String()),
		"effectiveBackend": backend,
	}
	if t.turn.Done != nil {
		t.turn.Done(data)
	}
	t.end(yield, contract.CompletedEvent(data))
}

// event turns one chat event into environment events.
func (t *turnPlay) event(ev contract.ChatEvent, yield func(contract.EnvironmentEvent, error) bool) bool {
	st := t.env.st
	switch ev.Kind {
	case contract.ChatText:
		t.text.WriteString(ev.Text)
		delta, text := ev.Text, t.text.String()
		msgID := fmt.Sprintf("%s-m%d", st.id, t.n)
		part := contract.Part{ID: fmt.Sprintf("text-%d", t.n), SessionID: st.id, MessageID: msgID, Type: contract.PartTypeText, Text: &text}
		norm, err := contract.NewStreamEvent(&contract.MessagePartUpdatedEvent{Part: part, Delta: &delta})
		if err != nil {
			return yield(contract.EnvironmentEvent{}, err)
		}
		return t.emit(yield, contract.EventTypeMessagePartUpdated, map[string]canonjson.Value{"delta": canonjson.StringValue(delta)}, &norm)
	case contract.ChatUsage:
		return yield(contract.EnvironmentEvent{Type: "usage", Data: map[string]canonjson.Value{}, ID: t.id(), Usage: ev.Usage, UsageMode: ev.UsageMode}, nil)
	case contract.ChatServed:
		if t.served != "" || ev.Model == "" {
			return true
		}
		// Reported at once, not only on the terminal event: a turn that
		// is cut, times out or breaks later still names its served model
		// (RG-02). A status event is not terminal.
		t.served = ev.Model
		detail := "served by " + ev.Model
		return t.emit(yield, contract.EventTypeStatus, map[string]canonjson.Value{"effectiveBackend": t.backend()},
			status(contract.StreamStatusProcessing, &detail))
	case contract.ChatToolCall:
		// No tools are offered, so a call cannot be run and is not work
		// done; but the model made it (a tool it was not offered, maybe
		// one it imagined), and dropping it would hide that. It is
		// reported as a warning naming the call.
		return t.toolCallWarning(ev.ToolCall, yield)
	case contract.ChatRetry:
		return t.retryWarning(ev.Retry, yield)
	case contract.ChatFailure:
		t.failure, t.stopReason = ev.Failure, ev.StopReason
		if t.failure == "" {
			t.failure = "the endpoint reported a failure"
		}
	}
	return true
}

// WarningModelRetry is the code of the warning a turn emits when the
// model's request is sent again (a contract.ChatRetry event): the
// previous attempt was refused or failed transiently. It is not a
// failure; the turn goes on. Its data carries the retry as "retry":
// {"attempt", "delayMs", "status" (absent when no HTTP response arrived),
// "reason"}.
const WarningModelRetry = "model_retry"

// retryWarning emits the warning of a retry of the model's request. A
// retry event without its retry says nothing and is skipped.
func (t *turnPlay) retryWarning(r *contract.ModelRetry, yield func(contract.EnvironmentEvent, error) bool) bool {
	if r == nil {
		return true
	}
	reason := contract.RetryEvent(*r).Retry.Reason // bounded, whoever built r
	msg := fmt.Sprintf("retrying the model request in %s (attempt %d)", r.Delay.Round(time.Millisecond), r.Attempt)
	if reason != "" {
		msg += " after " + reason
	}
	norm, err := contract.NewStreamEvent(&contract.WarningEvent{Code: WarningModelRetry, Message: msg})
	if err != nil {
		return yield(contract.EnvironmentEvent{}, err)
	}
	retry := []canonjson.Member{
		{Name: "attempt", Value: canonjson.NumberValue(float64(r.Attempt))},
		{Name: "delayMs", Value: canonjson.NumberValue(float64(r.Delay.Milliseconds()))},
		{Name: "reason", Value: canonjson.StringValue(reason)},
	}
	if r.Status != 0 {
		retry = append(retry, canonjson.Member{Name: "status", Value: canonjson.NumberValue(float64(r.Status))})
	}
	return t.emit(yield, contract.EventTypeWarning, map[string]canonjson.Value{
		"code": canonjson.StringValue(WarningModelRetry), "message": canonjson.StringValue(msg),
		"retry": canonjson.ObjectValue(retry)}, &norm)
}

// WarningToolCallNotRun is the code of the warning a turn emits for a
// tool call the model made: the provider offers no tools, so the call
// was not run.
const WarningToolCallNotRun = "tool_call_not_run"

// toolCallWarning emits the warning of a call that was not run, with its
// id and name (its arguments stay out of the stream: they are the
// model's, unbounded, and not needed to see that a call was made).
func (t *turnPlay) toolCallWarning(c contract.ToolCall, yield func(contract.EnvironmentEvent, error) bool) bool {
	name := bounded(c.Name)
	msg := fmt.Sprintf("the model called tool %q, which was not offered; the call was not run", name)
	norm, err := contract.NewStreamEvent(&contract.WarningEvent{Code: WarningToolCallNotRun, Message: msg})
	if err != nil {
		return yield(contract.EnvironmentEvent{}, err)
	}
	call := []canonjson.Member{{Name: "name", Value: canonjson.StringValue(name)}}
	if c.ID != "" {
		call = append(call, canonjson.Member{Name: "id", Value: canonjson.StringValue(bounded(c.ID))})
	}
	return t.emit(yield, contract.EventTypeWarning, map[string]canonjson.Value{
		"code": canonjson.StringValue(WarningToolCallNotRun), "message": canonjson.StringValue(msg),
		"toolCall": canonjson.ObjectValue(call)}, &norm)
}

// bounded cuts a model-chosen name to a length every event schema takes.
func bounded(s string) string {
	const limit = 256
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// effectiveBackend is what a turn's terminal event reports serving; the
// model is omitted when the model reported none (unknown).
type effectiveBackend struct {
	Provider string `json:"provider"`
	Model    string `json:"model,omitzero"`
	Source   string `json:"source"`
}

// backend is the effectiveBackend of the turn's terminal event.
func (t *turnPlay) backend() canonjson.Value {
	v, _ := canonjson.ToValue(effectiveBackend{Provider: t.env.p.cfg.Name, Model: t.served, Source: "response"})
	return v
}
