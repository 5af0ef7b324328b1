package contract_test

import (
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// Each constructor makes an event the kernel reads as the terminal kind
// it names, valid against the event schema, carrying the caller's data.
func TestTerminalEventConstructors(t *testing.T) {
	backend := func() map[string]canonjson.Value {
		return map[string]canonjson.Value{"effectiveBackend": canonjson.StringValue("b")}
	}
	for _, tc := range []struct {
		e      contract.EnvironmentEvent
		kind   contract.TerminalKind
		typ    string
		member string
		value  string
	}{
		{contract.CompletedEvent(backend()), contract.TerminalCompleted, "done", "status", "completed"},
		{contract.FailedEvent("boom", backend()), contract.TerminalFailed, "error", "error", "boom"},
		{contract.CancelledEvent(backend()), contract.TerminalCancelled, "execution.cancelled", "status", "cancelled"},
		{contract.CompletedEvent(nil), contract.TerminalCompleted, "done", "status", "completed"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			kind, ok := contract.EnvironmentEventTerminal(tc.e)
			if !ok || kind != tc.kind {
				t.Errorf("terminal %v %q, want %q", ok, kind, tc.kind)
			}
			if tc.e.Type != tc.typ || tc.e.Data[tc.member].Str() != tc.value {
				t.Errorf("event %s with %s %q", tc.e.Type, tc.member, tc.e.Data[tc.member].Str())
			}
			if _, err := contract.Validate(contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, tc.e); err != nil {
				t.Error(err)
			}
		})
	}
	if e := contract.FailedEvent("boom", backend()); e.Data["effectiveBackend"].Str() != "b" || *e.Normalized.Status.Detail != "boom" {
		t.Errorf("failed event %+v", e)
	}
}

func ExampleFailedEvent() {
	e := contract.FailedEvent("the model refused", nil)
	kind, _ := contract.EnvironmentEventTerminal(e)
	fmt.Println(e.Type, kind, e.Data["error"].Str())
	// Output: error failed the model refused
}
