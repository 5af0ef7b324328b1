package clibridge

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// opencodeLine is one line of opencode run --format json: a type, the
// session id, and a part (step_start, text, reasoning, tool_use,
// step_finish) or an error. Unknown members are ignored.
type opencodeLine struct {
	Type      string         `json:"type"`
	SessionID string         `json:"sessionID"`
	Part      *opencodePart  `json:"part"`
	Error     *opencodeError `json:"error"`
}

// opencodePart is a message part of the line.
type opencodePart struct {
	ID        string          `json:"id"`
	MessageID string          `json:"messageID"`
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Tool      string          `json:"tool"`
	CallID    string          `json:"callID"`
	State     *opencodeState  `json:"state"`
	Reason    string          `json:"reason"`
	Tokens    *opencodeTokens `json:"tokens"`
	Cost      *float64        `json:"cost"`
}

// opencodeState is a tool part's state.
type opencodeState struct {
	Status string          `json:"status"`
	Input  json.RawMessage `json:"input"`
	Output json.RawMessage `json:"output"`
	Error  json.RawMessage `json:"error"`
}

// opencodeTokens is a step-finish part's usage: one model call's.
type opencodeTokens struct {
	Total     *float64 `json:"total"`
	Input     *float64 `json:"input"`
	Output    *float64 `json:"output"`
	Reasoning *float64 `json:"reasoning"`
	Cache     *struct {
		Read  *float64 `json:"read"`
		Write *float64 `json:"write"`
	} `json:"cache"`
}

// opencodeError is an error line's error.
type opencodeError struct {
	Name string `json:"name"`
	Data *struct {
		Message    string   `json:"message"`
		StatusCode *float64 `json:"statusCode"`
	} `json:"data"`
}

// opencodeNormalizer maps one turn's opencode stream to environment
// events.
type opencodeNormalizer struct {
	streamBase
	// steps counts step_finish lines; usage sums them (nil once a step
	// reported no readable usage).
	steps     int
	usage     *contract.TokenUsage
	usageGone bool
	// cost sums the steps' reported cost (-1 once it overflows).
	cost float64
	// errs are the error lines' messages.
	errs []string
	// lastReason is the last step's finish reason.
	lastReason string
	// text is the final message's text parts.
	textMessage string
	text        []string
}

func (opencodeDriver) normalizer(t *turnSpec) normalizer {
	return &opencodeNormalizer{streamBase: newStreamBase(t, opencodeDriver{})}
}

// line implements normalizer.
func (n *opencodeNormalizer) line(b []byte) []contract.EnvironmentEvent {
	var l opencodeLine
	pe, evs, ok := n.decodeLine(b, &l, func() string { return l.Type })
	if !ok {
		return evs
	}
	session := n.observeSession(l.SessionID)
	switch {
	case (l.Type == "text" || l.Type == "reasoning") && l.Part != nil:
		evs = n.textPart(l.Type, l.Part)
	case l.Type == "tool_use" && l.Part != nil:
		evs = []contract.EnvironmentEvent{n.toolPart(l.Part)}
	case l.Type == "step_finish" && l.Part != nil:
		evs = []contract.EnvironmentEvent{n.stepFinish(l.Part)}
	case l.Type == "error":
		msg := "opencode reported an error"
		if e := l.Error; e != nil {
			msg = e.Name
			if e.Data != nil && e.Data.Message != "" {
				msg += ": " + e.Data.Message
			}
		}
		n.errs = append(n.errs, bounded(msg, 1000))
		evs = []contract.EnvironmentEvent{n.warning("harness-error", msg)}
	}
	// Any other line (step_start, …) is passed on as raw.
	return append(session, n.finish(evs, l.Type, pe)...)
}

// textPart maps a text or reasoning part: opencode writes each part once,
// complete, so its text is also the delta (split under the contract's
// string bound).
func (n *opencodeNormalizer) textPart(typ string, p *opencodePart) []contract.EnvironmentEvent {
	msgID := identOr(p.MessageID, fmt.Sprintf("turn-%d-message-%d", n.turn, n.seq+1))
	partID := identOr(p.ID, fmt.Sprintf("turn-%d-part-%d", n.turn, n.seq+1))
	kind := contract.PartTypeText
	if typ == "reasoning" {
		kind = contract.PartTypeReasoning
	} else {
		if msgID != n.textMessage {
			n.textMessage, n.text = msgID, nil
		}
		n.text = append(n.text, p.Text)
	}
	return n.textEvents(typ, kind, p.Text, msgID, partID, nil)
}

// toolPart maps a tool part in whatever state opencode reports it
// (observed: completed, written once when the call ended).
func (n *opencodeNormalizer) toolPart(p *opencodePart) contract.EnvironmentEvent {
	msgID := identOr(p.MessageID, fmt.Sprintf("turn-%d-message-%d", n.turn, n.seq+1))
	callID := identOr(p.CallID, identOr(p.ID, fmt.Sprintf("turn-%d-call-%d", n.turn, n.seq+1)))
	tool := identOr(p.Tool, "unknown")
	st := p.State
	if st == nil {
		st = &opencodeState{}
	}
	state := &contract.ToolState{Status: contract.ToolStatusRunning, Input: jsonRecord(st.Input)}
	switch st.Status {
	case "pending":
		state.Status = contract.ToolStatusPending
	case "completed":
		state.Status, state.Output = contract.ToolStatusCompleted, canonjson.StringValue(toolText(st.Output))
	case "error":
		msg := toolText(st.Error)
		state.Status, state.Error = contract.ToolStatusError, &msg
	}
	return n.toolEvent("tool_use", callID, msgID, tool, state, nil)
}

// toolText is a tool output or error as bounded text: a JSON string's
// value, else the JSON itself.
func toolText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return bounded(s, contract.MaxStringLength/2)
	}
	return bounded(strings.ToValidUTF8(string(raw), "\uFFFD"), contract.MaxStringLength/2)
}

// stepFinish adds one model call's usage to the turn's and reports the
// step (with its usage as data, never as the turn's usage).
func (n *opencodeNormalizer) stepFinish(p *opencodePart) contract.EnvironmentEvent {
	n.steps++
	n.lastReason = bounded(p.Reason, 200)
	data := map[string]canonjson.Value{"reason": canonjson.StringValue(n.lastReason)}
	u := p.Tokens.token()
	switch {
	case u == nil:
		n.usage, n.usageGone = nil, true
	case !n.usageGone:
		n.usage = addUsage(n.usage, u)
	}
	if p.Cost != nil && canonjson.IsFinite(*p.Cost) && *p.Cost >= 0 {
		if n.cost >= 0 && canonjson.IsFinite(n.cost+*p.Cost) {
			n.cost += *p.Cost
		} else {
			n.cost = -1 // past what a number holds: not reported
		}
		data["reportedCostUsd"] = canonjson.NumberValue(*p.Cost)
	}
	if u != nil {
		data["inputTokens"] = canonjson.NumberValue(float64(u.InputTokens))
		data["outputTokens"] = canonjson.NumberValue(float64(u.OutputTokens))
	}
	return n.event("step_finish", data, nil)
}

// token converts one step's tokens: input and output must be counts, or
// the step's usage is unknown (nil).
func (t *opencodeTokens) token() *contract.TokenUsage {
	if t == nil {
		return nil
	}
	var read, write *float64
	if c := t.Cache; c != nil {
		read, write = c.Read, c.Write
	}
	// opencode's tokens.input excludes the cache reads and writes it
	// reports beside it (it normalizes every vendor to the Messages
	// API's split): InputTokens adds them back, the whole prompt.
	u := withCacheInInput(tokenUsage(t.Input, t.Output, read, write, t.Reasoning))
	if u != nil {
		u.TotalTokens = optCount(t.Total)
	}
	return u
}

// addUsage sums two usages; an optional count is kept only when both
// report it. A sum past the safe-integer range is unknown (nil).
func addUsage(a, b *contract.TokenUsage) *contract.TokenUsage {
	if a == nil {
		return b
	}
	const limit = 1<<53 - 1
	sum := func(x, y int64) (int64, bool) { return x + y, x+y <= limit }
	in, ok1 := sum(a.InputTokens, b.InputTokens)
	out, ok2 := sum(a.OutputTokens, b.OutputTokens)
	if !ok1 || !ok2 {
		return nil
	}
	opt := func(x, y *int64) *int64 {
		if x == nil || y == nil {
			return nil
		}
		if s, ok := sum(*x, *y); ok {
			return &s
		}
		return nil
	}
	return &contract.TokenUsage{InputTokens: in, OutputTokens: out, TotalTokens: opt(a.TotalTokens, b.TotalTokens),
		ReasoningTokens:          opt(a.ReasoningTokens, b.ReasoningTokens),
		CacheReadInputTokens:     opt(a.CacheReadInputTokens, b.CacheReadInputTokens),
		CacheCreationInputTokens: opt(a.CacheCreationInputTokens, b.CacheCreationInputTokens)}
}

// end implements normalizer: the turn's one terminal event. A cancelled
// turn is cancelled; a turn is completed only when opencode finished at
// least one step, the last one not for an error, wrote no error line and
// exited 0 — with the sum of its steps' usage as usageMode cumulative.
// Anything else is failed, with no usage.
func (n *opencodeNormalizer) end(x exit) []contract.EnvironmentEvent {
	if x.cancelled {
		return n.cancelled()
	}
	n.out.Text = strings.Join(n.text, "")
	ok := x.code == 0 && x.err == nil && len(n.errs) == 0 && n.steps > 0 && n.lastReason != "error"
	if !ok {
		why := fmt.Sprintf("%d finished steps", n.steps)
		if len(n.errs) > 0 {
			why += ": " + strings.Join(n.errs, "; ")
		}
		return n.failed(x, "after", why)
	}
	data := map[string]canonjson.Value{"exitCode": canonjson.NumberValue(float64(x.code)),
		"steps": canonjson.NumberValue(float64(n.steps)), "status": canonjson.StringValue(contract.StreamStatusCompleted),
		"finalText":       canonjson.StringValue(bounded(n.out.Text, contract.MaxStringLength/2)),
		"reportedCostUsd": canonjson.NumberValue(n.cost)}
	if n.lastReason != "" {
		data["stopReason"] = canonjson.StringValue(n.lastReason)
	}
	norm := contract.StatusStreamEvent(contract.StreamStatusCompleted, nil)
	ev := n.event("result", data, &norm)
	n.out.Terminal = contract.TerminalCompleted
	if n.usage != nil && !n.usageGone {
		n.out.Usage = n.usage
		ev.Usage, ev.UsageMode = n.usage, contract.UsageCumulative
	}
	return []contract.EnvironmentEvent{ev}
}

// CallUsage is the usage of one model call that e reports while its turn
// runs, and whether e reports one: opencode's step_finish, whose input
// and output tokens are that call's. The turn's result still reports the
// turn's total (cumulative); claude-code and codex report usage only
// then, so none of their events is a call's.
func CallUsage(e contract.EnvironmentEvent) (contract.TokenUsage, bool) {
	if e.Type != "step_finish" {
		return contract.TokenUsage{}, false
	}
	in, okIn := e.Data["inputTokens"]
	out, okOut := e.Data["outputTokens"]
	if !okIn || !okOut || in.Kind() != canonjson.Number || out.Kind() != canonjson.Number {
		return contract.TokenUsage{}, false
	}
	i, o := in.Float(), out.Float()
	if i < 0 || o < 0 || !canonjson.IsSafeInteger(i) || !canonjson.IsSafeInteger(o) {
		return contract.TokenUsage{}, false
	}
	return contract.TokenUsage{InputTokens: int64(i), OutputTokens: int64(o)}, true
}
