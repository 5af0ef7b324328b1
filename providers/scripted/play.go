package scripted

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// ErrTransport is the error a turn scripted to "die" breaks with.
var ErrTransport = errors.New("scripted: transport broke mid-turn")

// served returns the model the turn reports serving: the script's claim,
// or else what the profile requested.
func served(s *Script, t Turn, p *profile.Profile) string {
	switch {
	case t.ServedModel != "":
		return t.ServedModel
	case s.ServedModel != "":
		return s.ServedModel
	case p != nil && p.Model != nil && p.Model.Default != nil:
		return *p.Model.Default
	}
	return ""
}

// player emits one turn's events.
type player struct {
	env    *envState
	run    *runState
	seq    int
	yield  func(contract.EnvironmentEvent, error) bool
	now    func() time.Time
	prompt string
	text   strings.Builder
	result canonjson.Value
	// ended: a step ended the turn (an expired interaction failed it).
	ended bool
}

func (pl *player) id() string {
	pl.seq++
	return fmt.Sprintf("%s-t%d-e%d", pl.env.id, pl.run.turnNo, pl.seq)
}

func (pl *player) emit(typ string, data map[string]canonjson.Value, normalized *contract.StreamEvent, usage *contract.TokenUsage, mode contract.UsageMode) bool {
	id := pl.id()
	if data == nil {
		data = map[string]canonjson.Value{}
	}
	return pl.yield(contract.EnvironmentEvent{Type: typ, Data: data, ID: &id, Normalized: normalized, Usage: usage, UsageMode: mode}, nil)
}

func (pl *player) backend(model string) canonjson.Value {
	members := []canonjson.Member{
		{Name: "provider", Value: canonjson.StringValue(pl.env.b.name)},
		{Name: "source", Value: canonjson.StringValue("scripted")},
	}
	if model != "" {
		members = append(members, canonjson.Member{Name: "model", Value: canonjson.StringValue(model)})
	}
	return canonjson.ObjectValue(members)
}

func status(s string, detail *string) *contract.StreamEvent {
	e := contract.StatusStreamEvent(s, detail)
	return &e
}

// end yields the turn's terminal event e with its id.
func (pl *player) end(e contract.EnvironmentEvent) {
	id := pl.id()
	e.ID = &id
	pl.yield(e, nil)
}

func (pl *player) cancelled() { pl.end(contract.CancelledEvent(nil)) }

// setText records the turn's text as the run's result text.
func (pl *player) setText() {
	r := pl.run
	r.mu.Lock()
	r.text.Reset()
	r.text.WriteString(pl.text.String())
	r.mu.Unlock()
}

func (pl *player) script(ctx context.Context, t Turn, model string) {
	defer pl.setText()
	if !pl.emit("execution.started", map[string]canonjson.Value{"effectiveBackend": pl.backend(model)}, status(contract.StreamStatusStarted, nil), nil, "") {
		return
	}
	for _, step := range t.Steps {
		if err := ctx.Err(); err != nil {
			pl.cancelled()
			return
		}
		if !pl.step(ctx, step) || pl.ended {
			return
		}
	}
	if err := ctx.Err(); err != nil {
		pl.cancelled()
		return
	}
	switch t.End {
	case EndNoTerminal:
		return
	case EndDie:
		pl.yield(contract.EnvironmentEvent{}, fmt.Errorf("%w: %s", ErrTransport, t.Error))
		return
	case EndQuota:
		ref := pl.run.exact()
		pl.yield(contract.EnvironmentEvent{}, &contract.QuotaRefusalError{Provider: pl.env.b.name, Stage: -1,
			Message: cmp.Or(t.Error, "the subscription's quota ran out mid-turn"), Run: &ref})
		return
	case EndFailed:
		msg := t.Error
		if msg == "" {
			msg = "scripted failure"
		}
		pl.fail(msg, model)
	case EndCancelled:
		pl.cancelled()
	default:
		data := map[string]canonjson.Value{
			"text":             canonjson.StringValue(pl.text.String()),
			"effectiveBackend": pl.backend(model),
		}
		if pl.result.IsValid() {
			data["result"] = pl.result
		}
		pl.end(contract.CompletedEvent(data))
	}
}

// fail ends the turn with an in-band error event.
func (pl *player) fail(msg, model string) {
	pl.end(contract.FailedEvent(msg, map[string]canonjson.Value{"effectiveBackend": pl.backend(model)}))
}

func (pl *player) step(ctx context.Context, s Step) bool {
	switch {
	case s.Text != nil:
		delta := pl.answers(strings.ReplaceAll(*s.Text, "{{prompt}}", pl.prompt))
		pl.text.WriteString(delta)
		env := pl.env
		turnNo := pl.run.turnNo
		part := contract.Part{ID: "text-" + strconv.Itoa(turnNo), SessionID: env.id, MessageID: fmt.Sprintf("%s-m%d", env.id, turnNo),
			Type: contract.PartTypeText, Text: ptr(pl.text.String())}
		ev, err := contract.NewStreamEvent(&contract.MessagePartUpdatedEvent{Part: part, Delta: &delta})
		if err != nil {
			return pl.yield(contract.EnvironmentEvent{}, err)
		}
		return pl.emit(contract.EventTypeMessagePartUpdated, map[string]canonjson.Value{"delta": canonjson.StringValue(delta)}, &ev, nil, "")
	case s.Usage != nil:
		mode := contract.UsageMode("")
		if s.Mode != nil {
			mode = contract.UsageMode(*s.Mode)
		}
		u := *s.Usage
		return pl.emit("usage", nil, nil, &u, mode)
	case s.ToolCall != nil:
		tc := s.ToolCall
		input := map[string]canonjson.Value{}
		for _, m := range tc.Arguments.Members() {
			input[m.Name] = m.Value
		}
		part := contract.Part{ID: tc.ID, SessionID: pl.env.id, MessageID: fmt.Sprintf("%s-m%d", pl.env.id, pl.run.turnNo),
			Type: contract.PartTypeTool, CallID: ptr(tc.ID), Tool: ptr(tc.Name),
			State: &contract.ToolState{Status: contract.ToolStatusPending, Input: input}}
		ev, err := contract.NewStreamEvent(&contract.MessagePartUpdatedEvent{Part: part})
		if err != nil {
			return pl.yield(contract.EnvironmentEvent{}, err)
		}
		return pl.emit(contract.EventTypeMessagePartUpdated, nil, &ev, nil, "")
	case s.Result != nil:
		pl.result = *s.Result
		return true
	case s.DelayMS != nil:
		select {
		case <-time.After(time.Duration(*s.DelayMS) * time.Millisecond):
			return true
		case <-ctx.Done():
			return true // the next step reports the cancellation
		}
	case s.Interaction != nil:
		req, err := bindInteraction(s.Interaction.Request, pl.run.executionBinding())
		if err != nil {
			return pl.yield(contract.EnvironmentEvent{}, err)
		}
		return pl.interact(ctx, req, s.Interaction.Unreachable)
	}
	return true
}

// worker plays a turn answered by the provider's OnPrompt function.
func (pl *player) worker(ctx context.Context, in *contract.TurnInput) {
	events, err := pl.callWorker(ctx, PromptContext{Round: pl.run.turnNo - 1, EnvironmentID: pl.env.id, Input: in})
	if err != nil {
		pl.yield(contract.EnvironmentEvent{}, fmt.Errorf("scripted: the worker failed: %w", err))
		return
	}
	for _, ev := range events {
		if ev.ID == nil {
			ev.ID = ptr(pl.id())
		}
		if !pl.yield(ev, nil) {
			return
		}
		if t, ok := ev.Data["text"]; ok && t.Kind() == canonjson.String {
			if _, terminal := contract.EnvironmentEventTerminal(ev); terminal {
				pl.text.WriteString(t.Str())
				pl.setText()
			}
		}
	}
}

// callWorker calls OnPrompt, turning a panic into the turn's error.
func (pl *player) callWorker(ctx context.Context, pc PromptContext) (events []contract.EnvironmentEvent, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return pl.env.b.answer(ctx, pl.prompt, pc)
}
