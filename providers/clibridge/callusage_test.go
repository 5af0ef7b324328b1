package clibridge_test

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/clibridge"
)

// CallUsage reads one model call's usage from opencode's step_finish
// event only, and only when both counts are whole and non-negative: a
// turn's result (its total) and an unreadable step are not a call's.
func TestCallUsage(t *testing.T) {
	num := canonjson.NumberValue
	ev := func(typ string, data map[string]canonjson.Value) contract.EnvironmentEvent {
		return contract.EnvironmentEvent{Type: typ, Data: data}
	}
	tests := []struct {
		name string
		e    contract.EnvironmentEvent
		want *contract.TokenUsage
	}{
		{"step", ev("step_finish", map[string]canonjson.Value{"inputTokens": num(11), "outputTokens": num(7), "reason": canonjson.StringValue("tool-calls")}),
			&contract.TokenUsage{InputTokens: 11, OutputTokens: 7}},
		{"result", ev("result", map[string]canonjson.Value{"inputTokens": num(11), "outputTokens": num(7)}), nil},
		{"step without usage", ev("step_finish", map[string]canonjson.Value{"reason": canonjson.StringValue("stop")}), nil},
		{"fractional", ev("step_finish", map[string]canonjson.Value{"inputTokens": num(1.5), "outputTokens": num(7)}), nil},
		{"negative", ev("step_finish", map[string]canonjson.Value{"inputTokens": num(3), "outputTokens": num(-1)}), nil},
		{"string", ev("step_finish", map[string]canonjson.Value{"inputTokens": canonjson.StringValue("3"), "outputTokens": num(1)}), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := clibridge.CallUsage(tc.e)
			if ok != (tc.want != nil) || (ok && got != *tc.want) {
				t.Errorf("CallUsage = %+v, %v; want %+v", got, ok, tc.want)
			}
		})
	}
}
