package profile

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/schema"
)

// everyField sets every member of every type a Profile holds, each union
// in each of its forms. It is not a valid profile (its seats break the
// seat rules), which does not matter here: the conversions are compared,
// and neither validates.
const everyField = `{
 "name": "n", "description": "d", "version": "1.0.0", "tags": ["a", "b"],
 "prompt": {"systemPrompt": "s", "appendSystemPrompt": "a", "instructions": ["i"]},
 "model": {"default": "p/m", "small": "p/s", "provider": "p", "reasoningEffort": "high",
  "maxVisibleOutputTokens": 10, "maxReasoningTokens": 20, "maxTotalOutputTokens": 30, "metadata": {"k": [1, null]}},
 "harness": "claude-code",
 "seats": [{"harness": "codex", "provider": "openai", "model": "gpt", "selector": {"kind": "seat", "id": "x"},
  "tools": {"bash": true}, "permissions": {"edit": "ask", "bash": {"git *": "allow", "*": "deny"}}},
  {"harness": "codex", "provider": "openai", "model": "gpt", "selector": {"kind": "all-eligible"}}],
 "permissions": {"edit": "allow", "webfetch": {"*": "ask"}},
 "tools": {"bash": false},
 "mcp": {"local": {"transport": "stdio", "command": "srv", "args": [{"kind": "public", "value": "--x"}],
   "env": {"TOKEN": {"kind": "secret-ref", "key": "k", "format": "bearer"}}, "cwd": "w", "enabled": true, "metadata": {}},
  "off": {"enabled": false},
  "remote": {"url": "https://example.com/mcp", "headers": {"H": {"kind": "public", "value": "v"}}}},
 "connections": [{"connectionId": "c", "capabilities": ["read"], "alias": "al"}],
 "subagents": {"r": {"description": "d", "prompt": "p", "model": "m", "tools": {"t": true},
  "permissions": {"edit": "deny"}, "maxSteps": 3, "metadata": {"x": "y"}}},
 "resources": {"files": [{"path": "/f", "resource": {"kind": "inline", "name": "f", "content": "c"}, "executable": true}],
  "tools": [{"kind": "github", "repository": "o/r", "path": "p", "ref": "main"}], "skills": [], "agents": [],
  "commands": [{"kind": "inline", "name": "c", "content": "c"}], "instructions": {"kind": "inline", "name": "i", "content": "i"}, "failOnError": false},
 "hooks": {"PreToolUse": [{"command": "c", "timeoutMs": 5, "blocking": true, "matcher": "m", "env": {"E": {"kind": "public", "value": "v"}}}]},
 "modes": {"plan": {"description": "d", "model": "m", "prompt": "p", "tools": {}, "permissions": {}, "metadata": {}}},
 "confidential": {"tee": "t", "attestationNonce": "n", "sealed": true, "attestationRefresh": false},
 "metadata": {"owner": {"team": "x"}},
 "extensions": {"vendor": {"k": 1}}
}`

// fromValueReflect is what typed replaces: canonjson.FromValue over the
// struct tags.
func fromValueReflect(v canonjson.Value) (*Profile, error) {
	p := new(Profile)
	if err := canonjson.FromValue(v, p); err != nil {
		return nil, err
	}
	return p, nil
}

// checkSame holds typed to canonjson.FromValue on one value: the same
// Profile, or the same *canonjson.UnmarshalError (pointer and reason).
func checkSame(t *testing.T, v canonjson.Value) {
	t.Helper()
	want, wantErr := fromValueReflect(v)
	got, err := typed(v)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("typed error %v; FromValue error %v", err, wantErr)
	}
	if err != nil {
		var ue *canonjson.UnmarshalError
		if !errors.As(err, &ue) {
			t.Fatalf("typed error %v is not an *UnmarshalError", err)
		}
		if d := cmp.Diff(wantErr, error(ue)); d != "" {
			t.Errorf("error (-FromValue +typed):\n%s", d)
		}
		return
	}
	if d := cmp.Diff(want, got, cmp.Comparer(canonjson.Equal)); d != "" {
		t.Errorf("profile (-FromValue +typed):\n%s", d)
	}
}

// The reflection-free conversion decodes exactly as canonjson.FromValue:
// on every AgentProfile vector's input, valid or not (unvalidated, so the
// strictness is compared too), and on a profile that sets every field.
func TestTypedMatchesFromValue(t *testing.T) {
	k, err := vectors.Load(KindProfile)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range k.Cases {
		v, err := schema.Decode(KindProfile, c.Raw())
		if err != nil {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) { checkSame(t, v) })
	}
	if n < 100 {
		t.Errorf("only %d vector inputs decoded", n)
	}
	all, err := schema.Decode(KindProfile, []byte(everyField))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("every field", func(t *testing.T) { checkSame(t, all) })
}

// Values the schema would refuse still convert as FromValue converts
// them, errors and their pointers included.
func TestTypedStrictness(t *testing.T) {
	tests := []struct{ name, doc string }{
		{"not an object", `[]`},
		{"unknown member", `{"nope": 1}`},
		{"unknown nested member", `{"seats": [{"harness": "h", "provider": "p", "model": "m", "selector": {"kind": "seat", "x": 1}}]}`},
		{"missing required", `{"seats": [{"harness": "h", "selector": {"kind": "seat"}}]}`},
		{"missing selector", `{"seats": [{"harness": "h", "model": "m", "provider": "p"}]}`},
		{"missing connection members", `{"connections": [{}]}`},
		{"missing capabilities", `{"connections": [{"connectionId": "c"}]}`},
		{"missing file path", `{"resources": {"files": [{"resource": {"kind": "inline"}}]}}`},
		{"missing file resource", `{"resources": {"files": [{"path": "p"}]}}`},
		{"missing hook command", `{"hooks": {"a/b~c": [{}]}}`},
		{"missing config kind", `{"mcp": {"s": {"env": {"E": {}}}}}`},
		{"wrong kind", `{"tags": ["a", 1]}`},
		{"wrong bool", `{"tools": {"t": "yes"}}`},
		{"wrong permission", `{"permissions": {"edit": {"*": 1}}}`},
		{"permission of another kind", `{"permissions": {"edit": 1}}`},
		{"instructions of another kind", `{"resources": {"instructions": 1}}`},
		{"fractional integer", `{"model": {"maxTotalOutputTokens": 1.5}}`},
		{"huge integer", `{"model": {"maxTotalOutputTokens": 1e300}}`},
		{"null pointer", `{"name": null}`},
		{"extensions not objects", `{"extensions": {"v": 1}}`},
		{"escaped pointer", `{"metadata": {"a/b": 1}, "mcp": {"x~y/z": {"args": [{"kind": 1}]}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := canonjson.Decode([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, v)
		})
	}
}
