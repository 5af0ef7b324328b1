package cli

import (
	"encoding/json"
	"testing"
)

// FuzzParseManagerScript: whatever a --manager-script file holds, it is
// parsed or refused with an error, never a panic; what is accepted is
// one JSON document (nothing after it) and a script of at least one turn.
func FuzzParseManagerScript(f *testing.F) {
	for _, s := range []string{
		`{"turns": [{"calls": [{"verb": "spawn_worker", "args": {"profile": "writer", "task": "t"}}], "usage": {"inputTokens": 1, "outputTokens": 2}}, {"text": "done"}]}`,
		`{"turns": [{"calls": [{"tool": "trace", "args": {}}]}], "cycle": true}`,
		`{"turns": [{"hang": true}]}`,
		`{"turns": []}`, `{"turns": [{"calls": [{}]}]}`, `{"turns": [{"calls": [{"verb": "a", "tool": "b"}]}]}`,
		`{"turns": [{"text": "x"}]} trailing`, `{"turns": [{"text": "x"}]}{"turns": []}`, `{"bogus": 1}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		script, err := parseManagerScript(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted %q, which is not one JSON document", data)
		}
		if len(script.Turns) == 0 {
			t.Fatalf("accepted %q as a script of no turns", data)
		}
	})
}
