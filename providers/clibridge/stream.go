package clibridge

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// streamBase is what every driver's normalizer shares: event numbering,
// secret redaction, the outcome, the native session observation, raw and
// warning events, and the terminal events that do not depend on the
// harness's own result (cancelled; failed without one).
type streamBase struct {
	provider string
	turn     int
	seq      int
	// backend names the harness in raw events and details.
	backend string
	// secrets are removed from every line before it is read.
	secrets []string

	out Outcome
}

func newStreamBase(t *turnSpec, backend string) streamBase {
	return streamBase{provider: t.provider, turn: t.turn, backend: backend, secrets: t.secrets()}
}

func (n *streamBase) outcome() Outcome { return n.out }

// event returns a new event of type typ with data and normalized form.
func (n *streamBase) event(typ string, data map[string]canonjson.Value, norm *contract.StreamEvent) contract.EnvironmentEvent {
	n.seq++
	id := fmt.Sprintf("turn-%d-%d", n.turn, n.seq)
	if data == nil {
		data = map[string]canonjson.Value{}
	}
	return contract.EnvironmentEvent{Type: typ, ID: &id, Data: data, Normalized: norm}
}

// warning returns a warning event.
func (n *streamBase) warning(code, message string) contract.EnvironmentEvent {
	message = bounded(message, 2000)
	norm := contract.StreamEvent{Type: contract.EventTypeWarning, Warning: &contract.WarningEvent{Code: code, Message: message}}
	return n.event(contract.EventTypeWarning, map[string]canonjson.Value{"code": canonjson.StringValue(code)}, &norm)
}

// raw passes a line on as a raw event under a type of ours (a native
// type could otherwise read as terminal: "x.completed").
func (n *streamBase) raw(nativeType string, pe canonjson.Value) contract.EnvironmentEvent {
	ev := n.event(contract.EventTypeRaw, map[string]canonjson.Value{"nativeType": canonjson.StringValue(bounded(nativeType, 512))}, nil)
	if pe.IsValid() {
		ev.Normalized = &contract.StreamEvent{Type: contract.EventTypeRaw, Raw: &contract.RawEvent{Backend: n.backend, Event: pe}}
	}
	return ev
}

// observeSession records the harness's session id the first time the
// stream reports one and returns the private native.session.observed
// event (or a warning for an id that is not a native session id).
func (n *streamBase) observeSession(id string) []contract.EnvironmentEvent {
	if id == "" || n.out.NativeSessionID != "" {
		return nil
	}
	obs, err := contract.NewNativeSessionObserved(n.provider, id)
	if err != nil {
		return []contract.EnvironmentEvent{n.warning("invalid-session-id", n.backend+" reported a session id that is not a native session id")}
	}
	n.out.NativeSessionID = obs.NativeSessionID
	norm := obs.Event()
	return []contract.EnvironmentEvent{n.event(contract.EventTypeNativeSessionObserved, map[string]canonjson.Value{
		"provider": canonjson.StringValue(obs.Provider), "nativeSessionId": canonjson.StringValue(obs.NativeSessionID)}, &norm)}
}

// sessionID is the part session id: the native session, once known.
func (n *streamBase) sessionID() string {
	if n.out.NativeSessionID != "" {
		return n.out.NativeSessionID
	}
	return fmt.Sprintf("turn-%d", n.turn)
}

// cancelledEnd is the terminal event of a cancelled turn; process
// names the harness process in the detail.
func (n *streamBase) cancelledEnd(process string) []contract.EnvironmentEvent {
	n.out.Terminal = contract.TerminalCancelled
	detail := "the caller cancelled the turn; the bridge killed the " + process + " process group"
	norm := contract.StatusStreamEvent(contract.StreamStatusCancelled, &detail)
	return []contract.EnvironmentEvent{n.event(contract.EventTypeStatus, map[string]canonjson.Value{
		"status": canonjson.StringValue(contract.StreamStatusCancelled)}, &norm)}
}

// failedEnd is the terminal event of a turn that failed as detail says
// (the stderr tail is added); it reports no usage.
func (n *streamBase) failedEnd(detail string, x exit) []contract.EnvironmentEvent {
	n.out.Terminal = contract.TerminalFailed
	if x.stderr != "" {
		detail += ": " + x.stderr
	}
	detail = bounded(detail, 4000)
	norm := contract.StatusStreamEvent(contract.StreamStatusFailed, &detail)
	return []contract.EnvironmentEvent{n.event(contract.EventTypeStatus, map[string]canonjson.Value{
		"status": canonjson.StringValue(contract.StreamStatusFailed), "exitCode": canonjson.NumberValue(float64(x.code))}, &norm)}
}

// tokenCount is a reported token count: present, whole and
// non-negative, or not a count.
func tokenCount(f *float64) (int64, bool) {
	if f == nil || *f < 0 || !canonjson.IsSafeInteger(*f) {
		return 0, false
	}
	return int64(*f), true
}

// decode reads one stdout line into v, whose type typeOf reports: the
// line redacted and trimmed, with its bounded JSON form. A blank line
// yields nothing; an unreadable or untyped one a warning (what names the
// line format the harness should have written).
func (n *streamBase) decode(b []byte, v any, typeOf func() string, what string) (pe canonjson.Value, evs []contract.EnvironmentEvent, ok bool) {
	b = bytes.TrimSpace(redact(b, n.secrets))
	if len(b) == 0 {
		return pe, nil, false
	}
	if err := json.Unmarshal(b, v); err != nil || typeOf() == "" {
		reason := "the line has no type"
		if err != nil {
			reason = err.Error()
		}
		return pe, []contract.EnvironmentEvent{n.warning("unreadable-line", n.backend+" wrote a line that is not "+what+": "+reason)}, false
	}
	return providerEvent(b), nil, true
}

// optCount is a reported optional count (nil when it is not one).
func optCount(f *float64) *int64 {
	if c, ok := tokenCount(f); ok {
		return &c
	}
	return nil
}

// newUsage is a usage with the input and output counts reported, or nil
// (unknown) unless both are counts.
func newUsage(in, out *float64) *contract.TokenUsage {
	i, ok1 := tokenCount(in)
	o, ok2 := tokenCount(out)
	if !ok1 || !ok2 {
		return nil
	}
	return &contract.TokenUsage{InputTokens: i, OutputTokens: o}
}

// textEvents are the message.part.updated events of one text or
// reasoning part whose delta is text: one per piece under the contract's
// string bound, the first with partID, the others suffixed "-j".
func (n *streamBase) textEvents(typ string, data map[string]canonjson.Value, msgID, partID, kind, text string) []contract.EnvironmentEvent {
	var evs []contract.EnvironmentEvent
	for j, chunk := range chunks(text) {
		id := partID
		if j > 0 {
			id = fmt.Sprintf("%s-%d", partID, j)
		}
		part := contract.Part{ID: id, SessionID: n.sessionID(), MessageID: msgID, Type: kind, Text: &chunk}
		norm := contract.StreamEvent{Type: contract.EventTypeMessagePartUpdated,
			MessagePartUpdated: &contract.MessagePartUpdatedEvent{Part: part, Delta: &chunk}}
		evs = append(evs, n.event(typ, data, &norm))
	}
	return evs
}
