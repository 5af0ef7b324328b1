package supervise

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// A lens journaled before its limits took the reference's names
// (iterations, llmCalls, toolCalls, outputChars) still decodes on
// resume, under the new names; a record that is not a lens still fails.
func TestJournaledLensReadsLegacyLimitNames(t *testing.T) {
	v, err := canonjson.Decode([]byte(`{"id":"old-lens","description":"d","area":"a","question":"q","instructions":"i","toolGroup":"all",` +
		`"limits":{"iterations":3,"llmCalls":2,"toolCalls":5,"outputChars":100}}`))
	if err != nil {
		t.Fatal(err)
	}
	l, err := journaledLens(v)
	if err != nil {
		t.Fatalf("journaledLens: %v", err)
	}
	if m := l.Limits; m == nil || *m.Iterations != 3 || *m.LLMCalls != 2 || *m.ToolCalls != 5 || *m.OutputChars != 100 {
		t.Errorf("limits %+v", l.Limits)
	}
	bad, _ := canonjson.Decode([]byte(`{"id":"x","limits":{"seconds":3}}`))
	if _, err := journaledLens(bad); err == nil {
		t.Error("an unknown limit decoded")
	}
}
