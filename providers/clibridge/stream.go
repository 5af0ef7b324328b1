package clibridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// streamBase is what every harness normalizer shares: event ids, the
// secrets redacted from every line, the outcome being established and
// the mapping of the common shapes (native session, raw line, text and
// tool parts, warnings, the terminal events of a cancelled or
// result-less turn).
type streamBase struct {
	provider string
	turn     int
	seq      int
	// backend names the harness in raw events and effectiveBackend;
	// exe names its process in details.
	backend, exe string
	// secrets are removed from every line before it is read.
	secrets []string

	out Outcome
}

// newStreamBase returns the shared state of one turn's normalizer.
func newStreamBase(t *turnSpec, d driver) streamBase {
	return streamBase{provider: t.provider, turn: t.turn, backend: string(d.harness()), exe: d.executable(), secrets: t.secrets()}
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

// sessionID is the part session id: the native session, once known.
func (n *streamBase) sessionID() string {
	if n.out.NativeSessionID != "" {
		return n.out.NativeSessionID
	}
	return fmt.Sprintf("turn-%d", n.turn)
}

// decodeLine redacts the turn's secrets from b and decodes it into v.
// It returns the line as a provider event (invalid when out of bounds)
// and ok; an empty line is skipped (no events, not ok) and an unreadable
// one, or one whose type typ reports empty, is a warning.
func (n *streamBase) decodeLine(b []byte, v any, typ func() string) (pe canonjson.Value, evs []contract.EnvironmentEvent, ok bool) {
	b = bytes.TrimSpace(redact(b, n.secrets))
	if len(b) == 0 {
		return canonjson.Value{}, nil, false
	}
	if err := json.Unmarshal(b, v); err != nil || typ() == "" {
		reason := "the line has no type"
		if err != nil {
			reason = err.Error()
		}
		return canonjson.Value{}, []contract.EnvironmentEvent{n.warning("unreadable-line",
			n.backend+" wrote a line that is not one of its JSON events: "+reason)}, false
	}
	return providerEvent(b), nil, true
}

// finish completes one line's events: a line that mapped to nothing is
// passed on as a "raw" event under a type of ours (a native type could
// otherwise read as terminal, "x.completed"), and the first event
// carries the line as its provider event.
func (n *streamBase) finish(evs []contract.EnvironmentEvent, nativeType string, pe canonjson.Value) []contract.EnvironmentEvent {
	if len(evs) == 0 {
		ev := n.event(contract.EventTypeRaw, map[string]canonjson.Value{"nativeType": canonjson.StringValue(bounded(nativeType, 512))}, nil)
		if pe.IsValid() {
			ev.Normalized = &contract.StreamEvent{Type: contract.EventTypeRaw, Raw: &contract.RawEvent{Backend: n.backend, Event: pe}}
		}
		evs = []contract.EnvironmentEvent{ev}
	}
	if pe.IsValid() {
		evs[0].ProviderEvent = pe
	}
	return evs
}

// observeSession records the harness's native session id and returns
// the private native.session.observed event (or a warning when id is not
// a native session id); a second id is ignored.
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

// textEvents maps one text or reasoning block to message.part.updated
// events of type typ, split under the contract's string bound.
func (n *streamBase) textEvents(typ, kind, text, msgID, partID string, data map[string]canonjson.Value) []contract.EnvironmentEvent {
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

// toolEvent maps one tool call's state to a message.part.updated event
// of type typ.
func (n *streamBase) toolEvent(typ, callID, msgID, tool string, state *contract.ToolState, data map[string]canonjson.Value) contract.EnvironmentEvent {
	part := contract.Part{ID: callID, SessionID: n.sessionID(), MessageID: msgID, Type: contract.PartTypeTool,
		CallID: &callID, Tool: &tool, State: state}
	norm := contract.StreamEvent{Type: contract.EventTypeMessagePartUpdated, MessagePartUpdated: &contract.MessagePartUpdatedEvent{Part: part}}
	return n.event(typ, data, &norm)
}

// cancelled is the terminal event of a turn the caller cancelled,
// whatever the stream said.
func (n *streamBase) cancelled() []contract.EnvironmentEvent {
	n.out.Terminal = contract.TerminalCancelled
	detail := "the caller cancelled the turn; the bridge killed the " + n.exe + " process group"
	norm := contract.StatusStreamEvent(contract.StreamStatusCancelled, &detail)
	return []contract.EnvironmentEvent{n.event(contract.EventTypeStatus, map[string]canonjson.Value{
		"status": canonjson.StringValue(contract.StreamStatusCancelled)}, &norm)}
}

// noResult is the terminal event of a process that ended without the
// stream's result line (named what): failed.
func (n *streamBase) noResult(x exit, what string) []contract.EnvironmentEvent {
	return n.failed(x, "without", what)
}

// failed is the terminal status event of a failed turn whose harness
// wrote no result of its own: the process ended (x) "without" or "after"
// what, and the stderr tail.
func (n *streamBase) failed(x exit, rel, what string) []contract.EnvironmentEvent {
	n.out.Terminal = contract.TerminalFailed
	detail := fmt.Sprintf("the %s process ended (%s) %s %s", n.exe, x.describe(), rel, what)
	if x.stderr != "" {
		detail += ": " + x.stderr
	}
	detail = bounded(detail, 4000)
	norm := contract.StatusStreamEvent(contract.StreamStatusFailed, &detail)
	return []contract.EnvironmentEvent{n.event(contract.EventTypeStatus, map[string]canonjson.Value{
		"status": canonjson.StringValue(contract.StreamStatusFailed), "exitCode": canonjson.NumberValue(float64(x.code))}, &norm)}
}

// terminal is the turn's terminal "result" event: completed when ok, with
// the turn's usage (cumulative) when known; failed otherwise, with
// detail and no usage (a failed turn's account is the harness's own
// partial one: unknown). pe is the harness's end line.
func (n *streamBase) terminal(ok bool, detail string, data map[string]canonjson.Value, pe canonjson.Value, usage *contract.TokenUsage) contract.EnvironmentEvent {
	status, d := contract.StreamStatusCompleted, (*string)(nil)
	if !ok {
		status = contract.StreamStatusFailed
		detail = bounded(detail, 4000)
		d = &detail
	}
	data["status"] = canonjson.StringValue(status)
	norm := contract.StatusStreamEvent(status, d)
	ev := n.event("result", data, &norm)
	if pe.IsValid() {
		ev.ProviderEvent = pe
	}
	if !ok {
		n.out.Terminal = contract.TerminalFailed
		return ev
	}
	n.out.Terminal = contract.TerminalCompleted
	if usage != nil {
		n.out.Usage = usage
		ev.Usage, ev.UsageMode = usage, contract.UsageCumulative
	}
	return ev
}

// count is a usage count: present, whole and non-negative, or not.
func count(f *float64) (int64, bool) {
	if f == nil || *f < 0 || !canonjson.IsSafeInteger(*f) {
		return 0, false
	}
	return int64(*f), true
}

// optCount is a reported optional usage count (nil when absent or not a
// count).
func optCount(f *float64) *int64 {
	if c, ok := count(f); ok {
		return &c
	}
	return nil
}

// tokenUsage is a harness's reported usage: the input and output counts
// must be present, whole and non-negative, or the usage is unknown
// (nil); the other counts are kept when they are counts.
//
// A report of no input token at all (input, cache reads and cache writes
// all zero) is unknown too. Every model call the bridge's harnesses make
// sends at least the prompt, so zero is never measured: it is what all
// three CLIs print when the endpoint sent no usage (observed with claude
// 2.1.197, codex 0.171.0 and opencode 1.18.33 against an endpoint
// omitting it: TestMissingUsageStaysUnknown), and unknown is never 0.
func tokenUsage(in, out, cacheRead, cacheCreation, reasoning *float64) *contract.TokenUsage {
	i, ok1 := count(in)
	o, ok2 := count(out)
	if !ok1 || !ok2 {
		return nil
	}
	u := &contract.TokenUsage{InputTokens: i, OutputTokens: o, CacheReadInputTokens: optCount(cacheRead),
		CacheCreationInputTokens: optCount(cacheCreation), ReasoningTokens: optCount(reasoning)}
	if i == 0 && zeroOrAbsent(u.CacheReadInputTokens) && zeroOrAbsent(u.CacheCreationInputTokens) {
		return nil
	}
	return u
}

// withCacheInInput makes u's InputTokens the whole prompt (spec runtime
// §2.1, the rule every provider follows) for a harness whose input count
// excludes the cache, as the Messages API's input_tokens does: the cache
// reads and writes it reported beside it are added in (and stay broken
// out). A cache count it did not report adds nothing and stays unknown;
// a total past the safe-integer range makes the usage unknown (nil).
func withCacheInInput(u *contract.TokenUsage) *contract.TokenUsage {
	if u == nil {
		return nil
	}
	for _, c := range []*int64{u.CacheReadInputTokens, u.CacheCreationInputTokens} {
		if c == nil {
			continue
		}
		if u.InputTokens > 1<<53-1-*c {
			return nil
		}
		u.InputTokens += *c
	}
	return u
}

func zeroOrAbsent(n *int64) bool { return n == nil || *n == 0 }

// describe says how the process exited.
func (x exit) describe() string {
	switch {
	case x.aborted != "":
		return "stopped by the bridge: " + x.aborted
	case x.timedOut > 0:
		return "killed when the turn's timeout of " + x.timedOut.String() + " elapsed"
	case x.lingered > 0:
		return "killed: it had not exited " + x.lingered.String() + " after its result"
	case x.err != nil:
		return "error: " + x.err.Error()
	case x.code < 0:
		return "killed by a signal"
	}
	return "exit status " + strconv.Itoa(x.code)
}

// providerEvent is the line as bounded JSON, or an invalid Value when it
// is not within the contract's bounds.
func providerEvent(b []byte) canonjson.Value {
	v, err := canonjson.Decode(b)
	if err != nil || !contract.IsBoundedJSON(v) {
		return canonjson.Value{}
	}
	return v
}

// jsonRecord is a tool input as a bounded JSON object; an input that is
// not one is recorded by its digest.
func jsonRecord(raw json.RawMessage) map[string]canonjson.Value {
	v, err := canonjson.Decode(raw)
	if err == nil && v.Kind() == canonjson.Object && contract.IsBoundedJSON(v) {
		out := make(map[string]canonjson.Value, v.Len())
		for _, m := range v.Members() {
			out[m.Name] = m.Value
		}
		return out
	}
	if len(raw) == 0 {
		return map[string]canonjson.Value{}
	}
	return map[string]canonjson.Value{"unboundedInputDigest": canonjson.StringValue(canonjson.DigestBytes(raw))}
}

// chunkUnits bounds one text event's text, in UTF-16 units, below the
// contract's string limit.
const chunkUnits = contract.MaxStringLength / 2

// chunks splits text into pieces of at most chunkUnits UTF-16 units,
// never inside a character; an empty text is one empty piece.
func chunks(text string) []string {
	out := []string{prefixUnits(text, chunkUnits)}
	for rest := text[len(out[0]):]; rest != ""; rest = rest[len(out[len(out)-1]):] {
		out = append(out, prefixUnits(rest, chunkUnits))
	}
	return out
}

// bounded cuts s to at most max UTF-16 units (never inside a character),
// marking a cut with "…".
func bounded(s string, max int) string {
	if canonjson.UTF16Len(s) <= max {
		return s
	}
	return prefixUnits(s, max-1) + "…"
}

// prefixUnits is the longest prefix of s of at most units UTF-16 units
// that ends at a character boundary.
func prefixUnits(s string, units int) string {
	n := 0
	for i, r := range s {
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if n+w > units {
			return s[:i]
		}
		n += w
	}
	return s
}

// isIdent reports whether s is a bounded identifier: 1..512 units, no
// outer whitespace, no control characters.
func isIdent(s string) bool {
	return s != "" && canonjson.UTF16Len(s) <= contract.MaxIdentifierLength && canonjson.TrimJS(s) == s &&
		!canonjson.HasControl(s) && canonjson.IsWellFormed(s)
}

// identOr returns s when it is a bounded identifier, else fallback.
func identOr(s, fallback string) string {
	if isIdent(s) {
		return s
	}
	return fallback
}

// stringsValue is a bounded array of bounded strings.
func stringsValue(ss []string) canonjson.Value {
	items := make([]canonjson.Value, 0, min(len(ss), contract.MaxArrayLength))
	for i, s := range ss {
		if i == contract.MaxArrayLength {
			break
		}
		items = append(items, canonjson.StringValue(bounded(s, 512)))
	}
	return canonjson.ArrayValue(items)
}
