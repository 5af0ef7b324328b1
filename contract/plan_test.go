package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

func TestDurablePlan(t *testing.T) {
	// Spec D.1 plan.submitted: title and body are trimmed and non-empty,
	// revision a positive integer, submittedAt may carry an offset.
	for _, tc := range []struct {
		in   string
		want string // canonical form; "" = refused
	}{
		{`{"id":"p","revision":1,"body":"Do it","submittedAt":"2026-07-10T00:00:00.000Z"}`, `{"body":"Do it","id":"p","revision":1,"submittedAt":"2026-07-10T00:00:00.000Z"}`},
		{`{"id":"p","revision":2,"title":"  T \u00a0","body":"\n Do it \ufeff","submittedAt":"2026-07-10T02:00+02:00"}`, `{"body":"Do it","id":"p","revision":2,"submittedAt":"2026-07-10T02:00+02:00","title":"T"}`},
		{`{"id":"p","revision":1,"body":"x","submittedAt":"2024-02-29T23:59:59.123456-23:59"}`, `{"body":"x","id":"p","revision":1,"submittedAt":"2024-02-29T23:59:59.123456-23:59"}`},
		{`{"id":"p","revision":1,"body":"x\u0085","submittedAt":"2026-07-10T00:00:00Z"}`, "{\"body\":\"x\u0085\",\"id\":\"p\",\"revision\":1,\"submittedAt\":\"2026-07-10T00:00:00Z\"}"}, // U+0085 is not JS whitespace
		{`{"id":"p","revision":1,"body":" ","submittedAt":"2026-07-10T00:00:00Z"}`, ""},
		{`{"id":"p","revision":1,"title":"","body":"x","submittedAt":"2026-07-10T00:00:00Z"}`, ""},
		{`{"id":"","revision":1,"body":"x","submittedAt":"2026-07-10T00:00:00Z"}`, ""},
		{`{"id":"p","revision":0,"body":"x","submittedAt":"2026-07-10T00:00:00Z"}`, ""},
		{`{"id":"p","revision":1.5,"body":"x","submittedAt":"2026-07-10T00:00:00Z"}`, ""},
		{`{"id":"p","revision":9007199254740992,"body":"x","submittedAt":"2026-07-10T00:00:00Z"}`, ""},
		{`{"id":"p","revision":1,"body":"x","submittedAt":"2026-07-10T00:00:00+24:00"}`, ""},
		{`{"id":"p","revision":1,"body":"x","submittedAt":"2026-07-10T00:00:00+0200"}`, ""},
		{`{"id":"p","revision":1,"body":"x","submittedAt":"2026-07-10T00:00:00"}`, ""},
		{`{"id":"p","revision":1,"body":"x","submittedAt":"2023-02-29T00:00:00Z"}`, ""},
		{`{"id":"p","revision":1,"body":"x","submittedAt":"2026-07-10T00:00:00Z","extra":1}`, ""},
	} {
		p, err := contract.ParseDurablePlan([]byte(tc.in))
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: accepted", tc.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		v, _ := canonjson.ToValue(p)
		if got, _ := canonjson.Canonical(v); string(got) != tc.want {
			t.Errorf("%s: canonical %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestPlanShapes(t *testing.T) {
	plan := `{"id":"plan-1","revision":1,"body":"Implement","submittedAt":"2026-07-10T00:00:00.000Z"}`
	for _, tc := range []struct {
		parse func([]byte) error
		in    string
		valid bool
	}{
		{intParsePlanSubmission, `{"body":"Plan","sourceToolCallId":"tool-1","providerState":{"kind":"claude-code","version":1,"nativeSessionId":"s"}}`, true},
		{intParsePlanSubmission, `{"body":"Plan","sourceToolCallId":"tool-1","providerState":{"kind":"opencode","version":1}}`, true},
		{intParsePlanSubmission, `{"body":"Plan","sourceToolCallId":"tool-1","providerState":{"kind":"opencode","version":2}}`, false},
		{intParsePlanSubmission, `{"body":"Plan","sourceToolCallId":"tool-1","providerState":{"kind":"codex","version":1}}`, false},
		{intParsePlanSubmission, `{"body":"Plan","sourceToolCallId":"","providerState":{"kind":"opencode","version":1}}`, false},
		{intParsePlanSubmission, `{"body":"Plan","sourceToolCallId":"t","providerState":{"kind":"opencode","version":1,"threadId":"x"}}`, false},
		{intParsePlanContinuation, `{"version":1,"plan":` + plan + `,"sourceToolCallId":"tool-1","decision":{"outcome":"rejected","feedback":"shorter"},"providerState":{"kind":"codex","version":1,"threadId":"t"}}`, true},
		{intParsePlanContinuation, `{"version":1,"plan":` + plan + `,"sourceToolCallId":"tool-1","decision":{"outcome":"rejected"},"providerState":{"kind":"codex","version":1,"threadId":"t"}}`, false},
		{intParsePlanContinuation, `{"version":1,"plan":` + plan + `,"sourceToolCallId":"tool-1","decision":{"outcome":"approved","feedback":"x"},"providerState":{"kind":"codex","version":1,"threadId":"t"}}`, false},
		{intParsePlanContinuation, `{"version":2,"plan":` + plan + `,"sourceToolCallId":"tool-1","decision":{"outcome":"approved"},"providerState":{"kind":"codex","version":1,"threadId":"t"}}`, false},
		{intParseOutcome, `{"type":"completed"}`, true},
		{intParseOutcome, `{"type":"completed","plan":` + plan + `}`, false},
		{intParseOutcome, `{"type":"awaiting_plan_decision"}`, false},
		{intParseOutcome, `{"type":"awaiting_plan_decision","plan":` + plan + `}`, true},
	} {
		if err := tc.parse([]byte(tc.in)); (err == nil) != tc.valid {
			t.Errorf("%s: %v, want valid=%v", tc.in, err, tc.valid)
		}
	}
}

func intParsePlanSubmission(b []byte) error {
	_, err := contract.ParsePlanSubmission(b)
	return err
}

func intParsePlanContinuation(b []byte) error {
	_, err := contract.ParsePlanContinuation(b)
	return err
}

func intParseOutcome(b []byte) error {
	_, err := contract.ParseAgentExecutionOutcome(b)
	return err
}
