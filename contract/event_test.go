package contract_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// evCanonical returns the canonical form of JSON text.
func evCanonical(t *testing.T, text string) string {
	t.Helper()
	v, err := canonjson.Decode([]byte(text))
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// evRefusedAt fails t unless err is a *schema.Error with an issue at path.
func evRefusedAt(t *testing.T, name string, err error, path string) {
	t.Helper()
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Errorf("%s: want a refusal at %q, got %v", name, path, err)
		return
	}
	for _, is := range se.Issues {
		if is.Path == path {
			return
		}
	}
	t.Errorf("%s: no issue at %q: %v", name, path, err)
}

const evPartBase = `"id":"part-1","sessionID":"session-1","messageID":"message-1"`

// evValidEvents holds one or more valid events of every variant; the key
// is the expected type.
var evValidEvents = []struct{ name, typ, json string }{
	{"text part", contract.EventTypeMessagePartUpdated, `{"type":"message.part.updated","part":{` + evPartBase + `,"type":"text","text":""},"delta":""}`},
	{"reasoning part", contract.EventTypeMessagePartUpdated, `{"type":"message.part.updated","part":{` + evPartBase + `,"type":"reasoning","text":"think"}}`},
	{"file part", contract.EventTypeMessagePartUpdated, `{"type":"message.part.updated","part":{` + evPartBase + `,"type":"file","filename":"a.txt","mediaType":"text/plain","url":"file:///a.txt"}}`},
	{"bare file part", contract.EventTypeMessagePartUpdated, `{"type":"message.part.updated","part":{` + evPartBase + `,"type":"file"}}`},
	{"subtask part", contract.EventTypeMessagePartUpdated, `{"type":"message.part.updated","part":{` + evPartBase + `,"type":"subtask","prompt":"p","description":"d","agent":"tester"}}`},
	{"tool pending", contract.EventTypeMessagePartUpdated, `{"type":"message.part.updated","part":{` + evPartBase + `,"type":"tool","tool":"bash","state":{"status":"pending","input":{},"raw":"ls"}}}`},
	{"tool running", contract.EventTypeMessagePartUpdated, `{"type":"message.part.updated","part":{` + evPartBase + `,"type":"tool","callID":"call-1","tool":"bash","state":{"status":"running","input":{"cmd":"ls"},"title":"List","metadata":{"__proto__":1},"time":{"start":1}},"metadata":{"k":[1,2]}}}`},
	{"tool completed", contract.EventTypeMessagePartUpdated, `{"type":"message.part.updated","part":{` + evPartBase + `,"type":"tool","tool":"bash","state":{"status":"completed","input":{},"output":null,"time":{"start":1,"end":2}}}}`},
	{"tool error", contract.EventTypeMessagePartUpdated, `{"type":"message.part.updated","part":{` + evPartBase + `,"type":"tool","tool":"bash","state":{"status":"error","input":{},"error":"boom","output":[1],"time":{"start":1}}}}`},
	{"tool failed", contract.EventTypeMessagePartUpdated, `{"type":"message.part.updated","part":{` + evPartBase + `,"type":"tool","tool":"bash","state":{"status":"failed","input":{},"time":{"start":-1,"end":2.5}}}}`},
	{"heartbeat", contract.EventTypeToolHeartbeat, `{"type":"tool-heartbeat","toolName":"bash","partId":"p","elapsedMs":0}`},
	{"slow", contract.EventTypeToolSlow, `{"type":"tool-slow","toolName":"bash","partId":"p","elapsedMs":10.5,"thresholdMs":5}`},
	{"model processing", contract.EventTypeModelProcessing, `{"type":"model-processing","phase":"thinking"}`},
	{"model processing full", contract.EventTypeModelProcessing, `{"type":"model-processing","phase":"tool-result","toolName":"bash","elapsedMs":3}`},
	{"status", contract.EventTypeStatus, `{"type":"status","status":"processing"}`},
	{"warning", contract.EventTypeWarning, `{"type":"warning","code":"slow","message":""}`},
	{"raw", contract.EventTypeRaw, `{"type":"raw","backend":"pi","event":null}`},
	{"native session", contract.EventTypeNativeSessionObserved, `{"type":"native.session.observed","provider":"claude-code","nativeSessionId":"provider-conversation"}`},
	{"session", contract.EventTypeSessionUpdated, `{"type":"session.updated","sessionId":"s","title":"T","time":{}}`},
	{"interaction cancel", contract.EventTypeInteractionCancel, `{"type":"interaction.cancel","id":"i"}`},
	{"plan", contract.EventTypePlanSubmitted, `{"type":"plan.submitted","plan":{"id":"plan-1","revision":1,"title":"Plan","body":"Do it.","submittedAt":"2026-08-01T20:00:00+02:00"}}`},
	{"child", contract.EventTypeChildTask, `{"type":"child-task","childId":"c","status":"cancelled","time":{"started":1,"updated":1,"ended":1},"terminalReason":"caller","sourceEventId":"e"}`},
}

// TestStreamEventVariants: every canonical variant validates, decodes into
// its Go variant and converts back to the same canonical JSON (CTL-06).
func TestStreamEventVariants(t *testing.T) {
	for _, c := range evValidEvents {
		e, err := contract.ParseStreamEvent([]byte(c.json))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if e.Type != c.typ || e.Variant() == nil {
			t.Errorf("%s: type %q variant %v", c.name, e.Type, e.Variant())
		}
		v, err := canonjson.ToValue(e)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := canonjson.Canonical(v)
		if want := evCanonical(t, c.json); string(got) != want {
			t.Errorf("%s: round trip\n got %s\nwant %s", c.name, got, want)
		}
		again, err := contract.NewStreamEvent(e.Variant())
		if err != nil || again.Type != e.Type {
			t.Errorf("%s: NewStreamEvent: %v", c.name, err)
		}
	}
	if _, err := contract.NewStreamEvent(&contract.TurnResult{}); err == nil {
		t.Error("NewStreamEvent accepted a non-variant")
	}
	if _, err := contract.NewStreamEvent((*contract.StatusEvent)(nil)); err == nil {
		t.Error("NewStreamEvent accepted a nil variant")
	}
	if _, err := canonjson.ToValue(contract.StreamEvent{Type: contract.EventTypeStatus}); err == nil {
		t.Error("a stream event without its variant converted to JSON")
	}
}

// TestStreamEventRefusals: unknown types, unknown members and bad payloads
// are refused at the reference's paths (CTL-06, scenario 20).
func TestStreamEventRefusals(t *testing.T) {
	part := func(p string) string { return `{"type":"message.part.updated","part":{` + evPartBase + `,` + p + `}}` }
	for _, c := range []struct{ name, json, path string }{
		{"unknown type", `{"type":"result","data":{}}`, "/type"},
		{"no type", `{"status":"completed"}`, "/type"},
		{"not an object", `[]`, ""},
		{"part unknown type", part(`"type":"image"`), "/part/type"},
		{"part extra member", part(`"type":"text","text":"x","extra":1`), "/part"},
		{"part missing message", `{"type":"message.part.updated","part":{"id":"p","sessionID":"s","type":"text","text":"x"}}`, "/part/messageID"},
		{"part padded id", `{"type":"message.part.updated","part":{"id":" p","sessionID":"s","messageID":"m","type":"text","text":"x"}}`, "/part/id"},
		{"text too long", part(`"type":"text","text":"` + strings.Repeat("x", contract.MaxStringLength+1) + `"`), "/part/text"},
		{"tool unknown status", part(`"type":"tool","tool":"bash","state":{"status":"done","input":{}}`), "/part/state/status"},
		{"tool pending no input", part(`"type":"tool","tool":"bash","state":{"status":"pending"}`), "/part/state/input"},
		{"tool pending title", part(`"type":"tool","tool":"bash","state":{"status":"pending","input":{},"title":"x"}`), "/part/state"},
		{"tool completed no output", part(`"type":"tool","tool":"bash","state":{"status":"completed","input":{}}`), "/part/state/output"},
		{"tool completed no end", part(`"type":"tool","tool":"bash","state":{"status":"completed","input":{},"output":1,"time":{"start":1}}`), "/part/state/time/end"},
		{"tool running end", part(`"type":"tool","tool":"bash","state":{"status":"running","input":{},"time":{"start":1,"end":2}}`), "/part/state/time"},
		{"tool input array", part(`"type":"tool","tool":"bash","state":{"status":"pending","input":[]}`), "/part/state/input"},
		{"subtask no agent", part(`"type":"subtask","prompt":"p","description":"d"`), "/part/agent"},
		{"heartbeat negative", `{"type":"tool-heartbeat","toolName":"bash","partId":"p","elapsedMs":-1}`, "/elapsedMs"},
		{"model phase", `{"type":"model-processing","phase":"idle"}`, "/phase"},
		{"status running", `{"type":"status","status":"running"}`, "/status"},
		{"warning empty code", `{"type":"warning","code":"","message":"m"}`, "/code"},
		{"raw no event", `{"type":"raw","backend":"pi"}`, "/event"},
		{"session time extra", `{"type":"session.updated","sessionId":"s","time":{"closed":1}}`, "/time"},
		{"plan revision zero", `{"type":"plan.submitted","plan":{"id":"p","revision":0,"body":"b","submittedAt":"2026-08-01T20:00:00Z"}}`, "/plan/revision"},
		{"cancel extra", `{"type":"interaction.cancel","id":"i","by":"me"}`, ""},
	} {
		_, err := contract.ParseStreamEvent([]byte(c.json))
		evRefusedAt(t, c.name, err, c.path)
	}
}

// TestChildTaskRules: identity, lifecycle and certainty rules of the
// child-task event (CHD-02..CHD-07, scenario 20).
func TestChildTaskRules(t *testing.T) {
	child := func(body string) string { return `{"type":"child-task",` + body + `}` }
	for _, c := range []struct{ name, json, path string }{
		{"no child id", child(`"status":"started","time":{"started":1,"updated":1},"sourceEventId":"e"`), "/childId"},                                  // CHD-02
		{"unknown status", child(`"childId":"c","status":"paused","time":{"started":1,"updated":1},"sourceEventId":"e"`), "/status"},                   // CHD-04
		{"no times", child(`"childId":"c","status":"started","sourceEventId":"e"`), "/time"},                                                           // CHD-05
		{"no update time", child(`"childId":"c","status":"started","time":{"started":1},"sourceEventId":"e"`), "/time/updated"},                        // CHD-05
		{"update before start", child(`"childId":"c","status":"running","time":{"started":2,"updated":1},"sourceEventId":"e"`), "/time/updated"},       // CHD-05
		{"end before start", child(`"childId":"c","status":"failed","time":{"started":2,"updated":2,"ended":1},"sourceEventId":"e"`), "/time/ended"},   //
		{"end while running", child(`"childId":"c","status":"running","time":{"started":1,"updated":1,"ended":1},"sourceEventId":"e"`), "/time/ended"}, //
		{"reason while started", child(`"childId":"c","status":"started","time":{"started":1,"updated":1},"terminalReason":"x","sourceEventId":"e"`), "/terminalReason"},
		{"own parent", child(`"childId":"c","parentChildId":"c","status":"started","time":{"started":1,"updated":1},"sourceEventId":"e"`), "/parentChildId"},
		{"no source event", child(`"childId":"c","status":"started","time":{"started":1,"updated":1}`), "/sourceEventId"}, // CHD-07
		{"negative start", child(`"childId":"c","status":"started","time":{"started":-1,"updated":1},"sourceEventId":"e"`), "/time/started"},
		{"raw not object", child(`"childId":"c","status":"started","time":{"started":1,"updated":1},"sourceEventId":"e","raw":[1]`), "/raw"},
		{"usage negative", child(`"childId":"c","status":"started","time":{"started":1,"updated":1},"sourceEventId":"e","usage":{"inputTokens":-1,"outputTokens":0}`), "/usage/inputTokens"},
	} {
		_, err := contract.ParseChildTaskEvent([]byte(c.json))
		evRefusedAt(t, c.name, err, c.path)
		_, err = contract.ParseStreamEvent([]byte(c.json))
		evRefusedAt(t, c.name+" (stream)", err, c.path)
	}

	// CHD-06: fields the provider did not report stay absent after a round
	// trip: no zero times, no empty strings, no zero usage.
	bare := child(`"childId":"c","status":"started","time":{"started":0,"updated":0},"sourceEventId":"e"`)
	ev, err := contract.ParseChildTaskEvent([]byte(bare))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Runner != nil || ev.Model != nil || ev.Usage != nil || ev.TerminalReason != nil || ev.Title != nil || ev.Time.Ended != nil || ev.Raw != nil || ev.ParentChildID != nil {
		t.Fatalf("absent fields became present: %+v", ev)
	}
	v, _ := canonjson.ToValue(contract.StreamEvent{Type: contract.EventTypeChildTask, ChildTask: ev})
	if got, _ := canonjson.Canonical(v); string(got) != evCanonical(t, bare) {
		t.Fatalf("round trip %s", got)
	}
	// CHD-11: cancelled is a terminal status of its own, never failed.
	cancelled, err := contract.ParseChildTaskEvent([]byte(child(`"childId":"c","status":"cancelled","time":{"started":1,"updated":1},"sourceEventId":"e"`)))
	if err != nil {
		t.Fatal(err)
	}
	if kind, ok := cancelled.Terminal(); !ok || kind != contract.TerminalCancelled {
		t.Fatalf("cancelled child: %q %v", kind, ok)
	}
	if kind, ok := ev.Terminal(); ok {
		t.Fatalf("started child is terminal: %q", kind)
	}
}

func evChild(t *testing.T, childID, parent, status, source string, updated float64, raw string) contract.StreamEvent {
	t.Helper()
	body := `{"type":"child-task","childId":"` + childID + `","status":"` + status + `","time":{"started":1,"updated":` +
		canonjsonNumber(updated) + `},"sourceEventId":"` + source + `"`
	if parent != "" {
		body += `,"parentChildId":"` + parent + `"`
	}
	if raw != "" {
		body += `,"raw":` + raw
	}
	e, err := contract.ParseStreamEvent([]byte(body + "}"))
	if err != nil {
		t.Fatal(err)
	}
	return *e
}

func canonjsonNumber(f float64) string { return string(canonjson.AppendNumber(nil, f)) }

// TestChildTaskDeduper: the first event with a given source event id wins
// and later copies are ignored, so live and replayed streams build the same
// child tree (CHD-08), and a copy with a different raw payload creates no
// second child or update (CHD-09).
func TestChildTaskDeduper(t *testing.T) {
	live := []contract.StreamEvent{
		evChild(t, "a", "", "started", "e1", 1, ""),
		contract.StatusStreamEvent(contract.StreamStatusProcessing, nil),
		evChild(t, "b", "a", "started", "e2", 2, `{"vendor":1}`),
		evChild(t, "a", "", "running", "e3", 3, ""),
		evChild(t, "b", "a", "completed", "e4", 4, ""),
	}
	var liveTree contract.ChildTaskDeduper
	for _, e := range live {
		liveTree.ApplyEvent(e)
	}
	// The replay after a reconnect repeats a prefix, and one duplicate
	// carries a changed raw payload.
	replay := append([]contract.StreamEvent{}, live[:3]...)
	replay = append(replay, evChild(t, "b", "a", "failed", "e2", 9, `{"vendor":2}`))
	replay = append(replay, live...)
	var replayTree contract.ChildTaskDeduper
	applied := 0
	for _, e := range replay {
		if replayTree.ApplyEvent(e) {
			applied++
		}
	}
	if applied != 4 {
		t.Fatalf("applied %d updates, want 4", applied)
	}
	lv, rv := liveTree.Children(), replayTree.Children()
	if len(lv) != 2 || len(rv) != 2 {
		t.Fatalf("children: live %d replay %d", len(lv), len(rv))
	}
	for id, want := range lv {
		got := rv[id]
		if pcMarshal(t, contract.StreamEvent{Type: contract.EventTypeChildTask, ChildTask: &got}) !=
			pcMarshal(t, contract.StreamEvent{Type: contract.EventTypeChildTask, ChildTask: &want}) {
			t.Errorf("child %s differs between live and replay", id)
		}
	}
	if rv["b"].Status != contract.ChildTaskStatusCompleted {
		t.Errorf("child b: %s", rv["b"].Status)
	}
	if replayTree.Parent("b") != "a" || replayTree.Parent("a") != "" || !replayTree.Seen("e2") || replayTree.Seen("e9") {
		t.Error("parent links or seen ids are wrong")
	}
	if ids := replayTree.ChildIDs(); len(ids) != 2 || ids[0] != "a" || ids[1] != "b" {
		t.Errorf("child order %v", ids)
	}
	if replayTree.ApplyEvent(contract.StatusStreamEvent(contract.StreamStatusCompleted, nil)) {
		t.Error("a status event was applied as a child update")
	}

	// Concurrent duplicates: exactly one copy is applied.
	var d contract.ChildTaskDeduper
	ev := *evChild(t, "c", "", "started", "same", 1, "").ChildTask
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 16 {
		wg.Go(func() {
			if d.Apply(ev) {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d concurrent copies applied", wins)
	}
}

// TestEventTerminal: completed, failed and cancelled status events end a
// run; cancelled is never failed (CHD-11); child-task events never end the
// run. Environment events follow the provider-type rules (scenario 19).
func TestEventTerminal(t *testing.T) {
	for status, want := range map[string]contract.TerminalKind{
		contract.StreamStatusCompleted:  contract.TerminalCompleted,
		contract.StreamStatusFailed:     contract.TerminalFailed,
		contract.StreamStatusCancelled:  contract.TerminalCancelled,
		contract.StreamStatusStarted:    "",
		contract.StreamStatusProcessing: "",
	} {
		kind, ok := contract.EventTerminal(contract.StatusStreamEvent(status, nil))
		if kind != want || ok != (want != "") {
			t.Errorf("%s: %q %v", status, kind, ok)
		}
	}
	if _, ok := contract.EventTerminal(evChild(t, "a", "", "completed", "e", 1, "")); ok {
		t.Error("a completed child ended the run")
	}
	str := func(s string) canonjson.Value { return canonjson.StringValue(s) }
	normalized := contract.StatusStreamEvent(contract.StreamStatusCancelled, nil)
	for _, c := range []struct {
		name string
		e    contract.EnvironmentEvent
		want contract.TerminalKind
	}{
		{"result ok", contract.EnvironmentEvent{Type: "result", Data: map[string]canonjson.Value{"status": str("completed")}}, contract.TerminalCompleted},
		{"result failed", contract.EnvironmentEvent{Type: "result", Data: map[string]canonjson.Value{"status": str("failed")}}, contract.TerminalFailed},
		{"result unsuccessful", contract.EnvironmentEvent{Type: "done", Data: map[string]canonjson.Value{"success": canonjson.BoolValue(false)}}, contract.TerminalFailed},
		{"final", contract.EnvironmentEvent{Type: "final", Data: map[string]canonjson.Value{}}, contract.TerminalCompleted},
		{"run.completed", contract.EnvironmentEvent{Type: "run.completed", Data: map[string]canonjson.Value{}}, contract.TerminalCompleted},
		{"turn.failed", contract.EnvironmentEvent{Type: "turn.failed", Data: map[string]canonjson.Value{}}, contract.TerminalFailed},
		{"turn.cancelled", contract.EnvironmentEvent{Type: "turn.cancelled", Data: map[string]canonjson.Value{}}, contract.TerminalCancelled},
		{"status cancelled", contract.EnvironmentEvent{Type: "status", Data: map[string]canonjson.Value{"status": str("cancelled")}}, contract.TerminalCancelled},
		{"status running", contract.EnvironmentEvent{Type: "status", Data: map[string]canonjson.Value{"status": str("running")}}, ""},
		{"normalized", contract.EnvironmentEvent{Type: "vendor.stop", Data: map[string]canonjson.Value{}, Normalized: &normalized}, contract.TerminalCancelled},
		{"delta", contract.EnvironmentEvent{Type: "message.part.updated", Data: map[string]canonjson.Value{"delta": str("x")}}, ""},
	} {
		kind, ok := contract.EnvironmentEventTerminal(c.e)
		if kind != c.want || ok != (c.want != "") {
			t.Errorf("%s: %q %v", c.name, kind, ok)
		}
	}
}

// TestNativeSessionObserved: the private identity observation is strict;
// padded, empty and over-long ids are refused (NSO-01, scenario 22).
func TestNativeSessionObserved(t *testing.T) {
	const base = `{"type":"native.session.observed","provider":"claude-code","nativeSessionId":"provider-conversation"}`
	o, err := contract.ParseNativeSessionObserved([]byte(base))
	if err != nil || o.Provider != "claude-code" || o.NativeSessionID != "provider-conversation" {
		t.Fatalf("%+v %v", o, err)
	}
	if got := pcMarshal(t, o.Event()); got != evCanonical(t, base) {
		t.Fatalf("round trip %s", got)
	}
	max := strings.Repeat("a", contract.MaxNativeSessionIDLength)
	if _, err := contract.NewNativeSessionObserved("codex", max); err != nil {
		t.Fatalf("512-unit id refused: %v", err)
	}
	for _, c := range []struct{ name, provider, id, path string }{
		{"empty provider", "", "x", "/provider"},
		{"upper-case provider", "Claude", "x", "/provider"},
		{"provider digit first", "1code", "x", "/provider"},
		{"provider too long", "a" + strings.Repeat("b", 128), "x", "/provider"},
		{"empty id", "codex", "", "/nativeSessionId"},
		{"padded id", "codex", " padded", "/nativeSessionId"},
		{"inner space", "codex", "a b", "/nativeSessionId"},
		{"nbsp", "codex", "a\u00a0b", "/nativeSessionId"},
		{"bom", "codex", "\ufeffa", "/nativeSessionId"},
		{"too long", "codex", max + "a", "/nativeSessionId"},
	} {
		_, err := contract.NewNativeSessionObserved(c.provider, c.id)
		evRefusedAt(t, c.name, err, c.path)
	}
	// Extra members, such as a caller session id, are refused.
	_, err = contract.ParseStreamEvent([]byte(`{"type":"native.session.observed","provider":"claude-code","nativeSessionId":"x","sessionId":"caller-resume"}`))
	evRefusedAt(t, "extra sessionId", err, "")
	_, err = contract.ParseNativeSessionObserved([]byte(`{"type":"session.updated","sessionId":"caller-resume"}`))
	evRefusedAt(t, "session.updated", err, "/type")
}

// TestPrivateEvents: the native identity observation never appears on a
// public stream (NSO-03); session.updated stays public and carries no
// native identity (NSO-04).
func TestPrivateEvents(t *testing.T) {
	o, err := contract.NewNativeSessionObserved("claude-code", "conv-1")
	if err != nil {
		t.Fatal(err)
	}
	private := o.Event()
	if !contract.IsPrivateEvent(private) || !errors.Is(contract.CheckPublicEvent(private), contract.ErrPrivateEvent) {
		t.Fatal("the observation is not private")
	}
	public := contract.StreamEvent{Type: contract.EventTypeSessionUpdated, SessionUpdated: &contract.SessionUpdatedEvent{SessionID: "s"}}
	if contract.IsPrivateEvent(public) || contract.CheckPublicEvent(public) != nil {
		t.Fatal("session.updated is private")
	}
	for name, e := range map[string]contract.EnvironmentEvent{
		"by type":       {Type: contract.EventTypeNativeSessionObserved, Data: map[string]canonjson.Value{}},
		"by normalized": {Type: "system", Data: map[string]canonjson.Value{}, Normalized: &private},
	} {
		if !contract.IsPrivateEnvironmentEvent(e) || !errors.Is(contract.CheckPublicEnvironmentEvent(e), contract.ErrPrivateEvent) {
			t.Errorf("%s: not private", name)
		}
	}
	if contract.IsPrivateEnvironmentEvent(contract.EnvironmentEvent{Type: "session.updated", Data: map[string]canonjson.Value{}, Normalized: &public}) {
		t.Error("public environment event is private")
	}
	env := contract.EventEnvelope{RunID: "r", EventID: "e", ReceivedAt: "2026-08-01T20:00:00Z", Event: private}
	if !env.Private() {
		t.Error("envelope of a private event is public")
	}
}

// TestEventEnvelope: the envelope keeps run, event, sequence, cursor and
// timestamps around a canonical event, identically on replay (CTL-05).
func TestEventEnvelope(t *testing.T) {
	const text = `{"runId":"run-1","eventId":"event-3","sequence":3,"cursor":"3:0","occurredAt":"2026-08-01T20:00:00.000Z","receivedAt":"2026-08-01T20:00:00.500Z","event":{"type":"status","status":"cancelled","detail":"by caller"}}`
	env, err := contract.ParseEventEnvelope([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if kind, ok := env.Terminal(); !ok || kind != contract.TerminalCancelled {
		t.Fatalf("terminal %q %v", kind, ok)
	}
	first := pcMarshal(t, env)
	again, _ := contract.ParseEventEnvelope([]byte(first))
	if pcMarshal(t, again) != first || first != evCanonical(t, text) {
		t.Fatal("envelope does not replay identically")
	}
	for _, c := range []struct{ name, json, path string }{
		{"sequence fraction", strings.Replace(text, `"sequence":3`, `"sequence":3.5`, 1), "/sequence"},
		{"sequence beyond 2^53-1", strings.Replace(text, `"sequence":3`, `"sequence":9007199254740992`, 1), "/sequence"},
		{"offset time", strings.Replace(text, `20:00:00.500Z`, `20:00:00.500+01:00`, 1), "/receivedAt"},
		{"no received", strings.Replace(text, `"receivedAt":"2026-08-01T20:00:00.500Z",`, ``, 1), "/receivedAt"},
		{"padded cursor", strings.Replace(text, `"3:0"`, `" 3:0"`, 1), "/cursor"},
		{"bad event", strings.Replace(text, `"cancelled"`, `"aborted"`, 1), "/event/status"},
		{"unknown member", strings.Replace(text, `"runId"`, `"extra":1,"runId"`, 1), ""},
	} {
		_, err := contract.ParseEventEnvelope([]byte(c.json))
		evRefusedAt(t, c.name, err, c.path)
	}
	if _, err := contract.ParseEventEnvelope([]byte(strings.Replace(text, `"sequence":3`, `"sequence":9007199254740991`, 1))); err != nil {
		t.Fatalf("largest safe sequence refused: %v", err)
	}
}
