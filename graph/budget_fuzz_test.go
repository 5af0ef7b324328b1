package graph_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/ledger"
)

// budgetJSON writes b in the form Decode read it in (legacy: the old
// keys), each resource under unit "u" (a Budget keeps no unit).
func budgetJSON(b *ledger.Budget, legacy bool) string {
	tokens, iterations, usd := "maxTokens", "maxIterations", "maxUsd"
	if legacy {
		tokens, iterations, usd = "tokens", "iterations", "usd"
	}
	m := map[string]any{}
	if b.Tokens != nil {
		m[tokens] = *b.Tokens
	}
	if b.Iterations != nil {
		m[iterations] = *b.Iterations
	}
	if b.MicroUSD != nil {
		m[usd] = float64(*b.MicroUSD) / 1e6
	}
	if b.Resources != nil {
		rs := map[string]any{}
		for name, limit := range b.Resources {
			rs[name] = map[string]any{"unit": "u", "limit": limit}
		}
		m["resources"] = rs
	}
	out, _ := json.Marshal(m)
	return string(out)
}

// pointsInto reports whether pointer, or the member holding it (a
// required member's refusal names the member that is absent), is in
// doc.
func pointsInto(doc canonjson.Value, pointer string) bool {
	if _, ok := canonjson.Resolve(doc, pointer); ok {
		return true
	}
	i := strings.LastIndexByte(pointer, '/')
	if i < 0 {
		return false
	}
	_, ok := canonjson.Resolve(doc, pointer[:i])
	return ok
}

// FuzzDecodeBudget: whatever a graph document's budget holds (the spec's
// keys, the old ones, both, deadlineMs, resources), Decode never panics;
// it refuses with a *graph.ValidationError whose JSON pointer is in the
// document (or names an absent member of an object in it), or it reads a
// budget that, written back in the same form, reads back the same.
func FuzzDecodeBudget(f *testing.F) {
	for _, b := range []string{
		`{"maxTokens": 5000, "maxIterations": 6, "maxUsd": 0.05, "resources": {"gpu": {"unit": "gpu-ms", "limit": 9}}}`,
		`{"tokens": 5000, "iterations": 6, "usd": 0.05}`, `{"tokens": 1}`, `{"maxTokens": 1}`,
		`{"maxTokens": 1, "maxIterations": 1, "tokens": 1}`, `{"maxTokens": 1, "maxIterations": 1, "deadlineMs": 100}`,
		`{"maxTokens": 1, "maxIterations": 1, "maxUsd": 1e9}`, `{"maxTokens": 1, "maxIterations": 1, "maxUsd": -0.000001}`,
		`{"maxTokens": 1.5, "maxIterations": 1}`, `{"maxTokens": 1, "maxIterations": 1, "resources": {"": {"unit": "", "limit": 1}}}`,
		`{"maxTokens": 1, "maxIterations": 1, "resources": {"a/b~c": {"unit": "u"}}}`, `{"maxTokens": 1, "maxTokens": 2, "maxIterations": 1}`,
		`{"maxTokens": 1, "maxIterations": 1, "resources": []}`, `null`, `[]`, `{"usd": 123456.789123}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, budget []byte) {
		data := append(append([]byte(`{"nodes": [], "edges": [], "budget": `), budget...), '}')
		g, err := graph.Decode(data)
		if err != nil {
			var ve *graph.ValidationError
			if !errors.As(err, &ve) || ve.Path == "" {
				t.Fatalf("refusal %T %v is not a *graph.ValidationError with a path", err, err)
			}
			if doc, derr := canonjson.Decode(data); derr == nil && !pointsInto(doc, ve.Pointer()) {
				t.Fatalf("refusal at %q, not in the document: %v", ve.Pointer(), err)
			}
			return
		}
		again, err := graph.Decode(budgetDoc(t, budgetJSON(g.Budget, g.LegacyBudgetKeys)))
		if err != nil {
			t.Fatalf("budget %s read, its re-encoding %s refused: %v", budget, budgetJSON(g.Budget, g.LegacyBudgetKeys), err)
		}
		if diff := cmp.Diff(g.Budget, again.Budget); diff != "" || again.LegacyBudgetKeys != g.LegacyBudgetKeys {
			t.Fatalf("budget %s reads back otherwise (-first +again):\n%s", budget, diff)
		}
	})
}
