package contract_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// TestTurnInputProfile: the turn profile is the exact AgentProfile,
// validated by the canonical profile schema (TRN-01), and kept apart from
// bounded providerOptions (TRN-02, TRN-03).
func TestTurnInputProfile(t *testing.T) {
	p, _ := pcProfile(t)
	in := contract.TurnInput{Profile: p, Prompt: pcPtr("hi"), Interactions: contract.RequestedInteractions{},
		ProviderOptions: map[string]canonjson.Value{"region": canonjson.StringValue("eu")}}
	text := pcMarshal(t, in)
	back, err := contract.ParseTurnInput([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if pcMarshal(t, back) != text || back.Interactions == nil || len(back.Interactions) != 0 {
		t.Fatalf("turn input does not round-trip: %s", pcMarshal(t, back))
	}
	for _, c := range []struct{ name, json, path string }{
		{"unknown harness", `{"profile":{"harness":"nope"}}`, "/profile/harness"},
		{"profile not object", `{"profile":"claude"}`, "/profile"},
		{"profile unknown member", `{"profile":{"harness":"codex","persona":"x"}}`, "/profile"},
		{"providerOptions not object", `{"providerOptions":[1]}`, "/providerOptions"},
		{"providerOptions oversized", `{"providerOptions":{"systemPrompt":"` + strings.Repeat("x", contract.MaxStringLength+1) + `"}}`, "/providerOptions"},
		{"prompt oversized", `{"prompt":"` + strings.Repeat("x", contract.MaxStringLength+1) + `"}`, "/prompt"},
		{"timeout zero", `{"timeoutMs":0}`, "/timeoutMs"},
		{"timeout fraction", `{"timeoutMs":1.5}`, "/timeoutMs"},
		{"interactions non-boolean", `{"prompt":"continue","interactions":{"permission":1}}`, "/interactions/permission"},
		{"padded session", `{"sessionId":" s"}`, "/sessionId"},
		{"partial control ref", `{"controlRef":{"runId":"r"}}`, "/controlRef/provider"},
		{"image part with content", `{"parts":[{"type":"image","content":"x"}]}`, "/parts/0"},
		// An abort signal is the caller's context, never a wire member.
		{"signal", `{"signal":{}}`, ""},
	} {
		_, err := contract.ParseTurnInput([]byte(c.json))
		evRefusedAt(t, c.name, err, c.path)
	}
	if _, err := contract.ParseTurnInput([]byte(`{}`)); err != nil {
		t.Fatalf("an empty turn is refused: %v", err)
	}
}

// TestTurnResultEvents: events carry an optional usage mode, delta or
// cumulative (USG-01), and a normalized canonical event.
func TestTurnResultEvents(t *testing.T) {
	const text = `{"text":"done","success":true,"usage":{"inputTokens":3,"outputTokens":4},"events":[` +
		`{"type":"assistant","data":{"delta":"x"},"id":"e1","usage":{"inputTokens":1,"outputTokens":2},"usageMode":"delta"},` +
		`{"type":"result","data":{"status":"completed"},"id":"e2","normalized":{"type":"status","status":"completed"},"usage":{"inputTokens":3,"outputTokens":4},"usageMode":"cumulative","providerEvent":[1]}]}`
	r, err := contract.ParseTurnResult([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if r.Events[0].UsageMode != contract.UsageDelta || r.Events[1].UsageMode != contract.UsageCumulative || r.Events[1].Normalized == nil {
		t.Fatalf("%+v", r.Events)
	}
	if pcMarshal(t, r) != evCanonical(t, text) {
		t.Fatalf("round trip %s", pcMarshal(t, r))
	}
	if _, mode, ok := r.Events[0].UsageReport(); !ok || mode != contract.UsageDelta {
		t.Fatal("usage report")
	}
	if kind, ok := contract.EnvironmentEventTerminal(r.Events[1]); !ok || kind != contract.TerminalCompleted {
		t.Fatal("the result event is not terminal")
	}
	for _, c := range []struct{ name, json, path string }{
		{"unknown usage mode", strings.Replace(text, `"usageMode":"delta"`, `"usageMode":"total"`, 1), "/events/0/usageMode"},
		{"empty usage mode", strings.Replace(text, `"usageMode":"delta"`, `"usageMode":""`, 1), "/events/0/usageMode"},
		{"event without data", strings.Replace(text, `"data":{"delta":"x"},`, ``, 1), "/events/0/data"},
		{"bad normalized", strings.Replace(text, `"type":"status","status":"completed"}`, `"type":"status","status":"done"}`, 1), "/events/1/normalized/status"},
		{"usage without output", strings.Replace(text, `,"outputTokens":4},"events"`, `},"events"`, 1), "/usage/outputTokens"},
		{"success not boolean", strings.Replace(text, `"success":true`, `"success":"yes"`, 1), "/success"},
	} {
		_, err := contract.ParseTurnResult([]byte(c.json))
		evRefusedAt(t, c.name, err, c.path)
	}
}

func evUsage(in, out int64) contract.TokenUsage {
	return contract.TokenUsage{InputTokens: in, OutputTokens: out}
}

func evUsageEvent(id string, u contract.TokenUsage, mode contract.UsageMode) contract.EnvironmentEvent {
	e := contract.EnvironmentEvent{Type: "usage", Data: map[string]canonjson.Value{}, Usage: &u, UsageMode: mode}
	if id != "" {
		e.ID = &id
	}
	return e
}

// TestTurnUsage: usage aggregation within one turn honors the usage mode
// (USG-02..USG-05).
func TestTurnUsage(t *testing.T) {
	total := func(events ...contract.EnvironmentEvent) (int64, bool) {
		var u contract.TurnUsage
		for _, e := range events {
			u.Add(e)
		}
		got, exact := u.Total()
		if got == nil {
			return -1, exact
		}
		return got.InputTokens, exact
	}
	for _, c := range []struct {
		name   string
		events []contract.EnvironmentEvent
		want   int64
		exact  bool
	}{
		{"USG-02 deltas add", []contract.EnvironmentEvent{evUsageEvent("a", evUsage(10, 0), contract.UsageDelta), evUsageEvent("b", evUsage(5, 0), contract.UsageDelta)}, 15, true},
		{"USG-03 cumulative replaces", []contract.EnvironmentEvent{evUsageEvent("a", evUsage(10, 0), contract.UsageCumulative), evUsageEvent("b", evUsage(15, 0), contract.UsageCumulative)}, 15, true},
		{"USG-04 repeated cumulative adds nothing", []contract.EnvironmentEvent{evUsageEvent("a", evUsage(15, 0), contract.UsageCumulative), evUsageEvent("b", evUsage(15, 0), contract.UsageCumulative), evUsageEvent("c", evUsage(15, 0), contract.UsageCumulative)}, 15, true},
		{"replayed delta ids count once", []contract.EnvironmentEvent{evUsageEvent("a", evUsage(10, 0), contract.UsageDelta), evUsageEvent("a", evUsage(10, 0), contract.UsageDelta)}, 10, true},
		{"cumulative after deltas", []contract.EnvironmentEvent{evUsageEvent("a", evUsage(4, 0), contract.UsageDelta), evUsageEvent("b", evUsage(6, 0), contract.UsageDelta), evUsageEvent("c", evUsage(12, 0), contract.UsageCumulative), evUsageEvent("d", evUsage(1, 0), contract.UsageDelta)}, 13, true},
		{"USG-05 no mode is a floor, never a sum", []contract.EnvironmentEvent{evUsageEvent("a", evUsage(10, 0), ""), evUsageEvent("b", evUsage(15, 0), "")}, 15, false},
		{"USG-05 single report without mode", []contract.EnvironmentEvent{evUsageEvent("a", evUsage(10, 0), "")}, 10, false},
		{"no usage", []contract.EnvironmentEvent{{Type: "x", Data: map[string]canonjson.Value{}}}, -1, true},
	} {
		got, exact := total(c.events...)
		if got != c.want || exact != c.exact {
			t.Errorf("%s: total %d exact %v, want %d %v", c.name, got, exact, c.want, c.exact)
		}
	}

	// Unknown counts are never invented: a count that only some deltas
	// report stays a floor.
	var u contract.TurnUsage
	withTotal := evUsage(1, 1)
	withTotal.TotalTokens = pcPtr(int64(2))
	withTotal.Cost = pcPtr(0.5)
	u.AddUsage(withTotal, contract.UsageDelta)
	u.AddUsage(evUsage(1, 1), contract.UsageDelta)
	got, exact := u.Total()
	if exact || *got.TotalTokens != 2 || *got.Cost != 0.5 || got.InputTokens != 2 || got.CacheReadInputTokens != nil {
		t.Fatalf("partial counts: %+v exact %v", got, exact)
	}
	// A count no report had stays absent, and the total stays exact.
	var v contract.TurnUsage
	v.AddUsage(evUsage(1, 1), contract.UsageDelta)
	v.AddUsage(evUsage(2, 2), contract.UsageDelta)
	got, exact = v.Total()
	if !exact || got.TotalTokens != nil || got.Cost != nil || got.OutputTokens != 3 {
		t.Fatalf("absent counts: %+v exact %v", got, exact)
	}
	got.InputTokens = 99
	if again, _ := v.Total(); again.InputTokens != 3 {
		t.Fatal("Total shares its state")
	}
}

// evContinuation builds a successful continuation outcome for req.
func evContinuation(t *testing.T, req *contract.NativeContextContinuationRequest) *contract.NativeContinuationResult {
	t.Helper()
	next := req.Run
	next.RunID, next.ExecutionID, next.RequestDigest = "run-2", "exec-2", pcDigestOf("d")
	return &contract.NativeContinuationResult{
		Acknowledgement: *natAck(req, contract.ContinuationStatusAccepted),
		Result:          &contract.TurnResult{Text: "continued", Success: true, SessionID: pcPtr(req.Run.SessionID)},
		ControlRef:      &next,
	}
}

// TestNativeContinuationResult: the result shape (NAT-12) and the match
// against its request and retained session (NAT-13).
func TestNativeContinuationResult(t *testing.T) {
	req := natRequest(t)
	ok := evContinuation(t, req)
	text := pcMarshal(t, ok)
	parsed, err := contract.ParseNativeContinuationResult([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if pcMarshal(t, parsed) != text || !parsed.Succeeded() {
		t.Fatal("round trip")
	}
	if !contract.NativeContinuationResultMatchesRequest(req, ok) {
		t.Fatal("a matching result does not match")
	}
	for name, edit := range map[string]func(r *contract.NativeContinuationResult){
		"other session":        func(r *contract.NativeContinuationResult) { r.ControlRef.SessionID = "session-2" },
		"other environment":    func(r *contract.NativeContinuationResult) { r.ControlRef.EnvironmentID = "env-2" },
		"other provider":       func(r *contract.NativeContinuationResult) { r.ControlRef.Provider = "other" },
		"result other session": func(r *contract.NativeContinuationResult) { r.Result.SessionID = pcPtr("session-2") },
		"history sent":         func(r *contract.NativeContinuationResult) { r.Acknowledgement.HistoryMessagesSent = 1 },
		"other operation":      func(r *contract.NativeContinuationResult) { r.Acknowledgement.OperationID = "continue-2" },
		"no control ref":       func(r *contract.NativeContinuationResult) { r.ControlRef = nil },
		"invalid control ref":  func(r *contract.NativeContinuationResult) { r.ControlRef.RunID = " padded" },
		"boundary of other run": func(r *contract.NativeContinuationResult) {
			r.Acknowledgement.ActualBoundary.RunID = "run-2"
		},
		"failure": func(r *contract.NativeContinuationResult) {
			r.Acknowledgement = contract.NativeContextContinuationAcknowledgement{OperationID: req.OperationID, RequestDigest: req.RequestDigest,
				Status: contract.ContinuationStatusUnknownSession}
			r.Result, r.ControlRef = nil, nil
		},
	} {
		r := pcClone(t, ok)
		edit(r)
		if contract.NativeContinuationResultMatchesRequest(req, r) {
			t.Errorf("%s: matches", name)
		}
	}
	noSession := pcClone(t, ok)
	noSession.Result.SessionID = nil
	if !contract.NativeContinuationResultMatchesRequest(req, noSession) {
		t.Error("a result without a session id does not match")
	}
	if contract.NativeContinuationResultMatchesRequest(nil, ok) || contract.NativeContinuationResultMatchesRequest(req, nil) {
		t.Error("nil matches")
	}

	// Shape rules.
	failure := func(status, extra string) string {
		return `{"acknowledgement":{"operationId":"continue-1","requestDigest":"` + req.RequestDigest + `","status":"` + status +
			`","historyMessagesSent":0` + extra + `}}`
	}
	if _, err := contract.ParseNativeContinuationResult([]byte(failure("transport_failure", `,"message":"lost","retryable":true`))); err != nil {
		t.Fatalf("retryable transport failure refused: %v", err)
	}
	_, err = contract.ParseNativeContinuationResult([]byte(failure("transport_failure", `,"message":"lost","retryable":false`)))
	evRefusedAt(t, "transport failure not retryable", err, "/acknowledgement/retryable")
	_, err = contract.ParseNativeContinuationResult([]byte(failure("accepted", "")))
	evRefusedAt(t, "success without result", err, "")

	// A receipt of portable context never comes back from a native
	// continuation.
	receipt := pcReceipt(t, pcRequest(t, pcPlan(t), contract.ContextTransferInputs{}))
	withReceipt := pcClone(t, ok)
	withReceipt.Result.ContextTransferReceipt = receipt
	_, err = contract.ParseNativeContinuationResult([]byte(pcMarshal(t, withReceipt)))
	evRefusedAt(t, "receipt", err, "/result/contextTransferReceipt")

	// A missing bounded-JSON member is a failed check, not a shape error,
	// so the union still reports it where it is (as the reference does).
	noData := strings.Replace(text, `"success":true`, `"success":true,"events":[{"type":"x"}]`, 1)
	_, err = contract.ParseNativeContinuationResult([]byte(noData))
	evRefusedAt(t, "event without data", err, "/result/events/0/data")

	// As in the reference, members the acknowledgement does not declare
	// are dropped inside a result rather than refused.
	extra := strings.Replace(text, `"historyMessagesSent":0`, `"historyMessagesSent":0,"note":"x"`, 1)
	dropped, err := contract.ParseNativeContinuationResult([]byte(extra))
	if err != nil || pcMarshal(t, dropped) != text {
		t.Fatalf("unknown acknowledgement member: %v", err)
	}
	_, err = contract.ParseNativeContinuationResult([]byte(strings.Replace(text, `"controlRef":{`, `"controlRef":{"note":"x",`, 1)))
	evRefusedAt(t, "unknown control ref member", err, "")
}
