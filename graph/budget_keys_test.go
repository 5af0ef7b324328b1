package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// budgetDoc is a one-edge graph document with budget b.
func budgetDoc(t *testing.T, b string) []byte {
	t.Helper()
	prof := func(name string, tools bool) string {
		p := map[string]any{"name": name, "harness": "cli-base", "model": map[string]any{"default": "scripted/" + name}}
		if tools {
			p["tools"] = map[string]any{"agent_runtime_coordination_spawn_worker": true}
		}
		out, _ := json.Marshal(p)
		return string(out)
	}
	return []byte(`{"nodes": [{"id": "driver", "profile": ` + prof("driver", true) + `}, {"id": "coder", "profile": ` + prof("coder", false) + `}],
		"edges": [{"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/coder/v1"}],
		"budget": ` + b + `}`)
}

// §2.1's Budget keys (maxTokens, maxIterations required, maxUsd?,
// resources?) are the canonical graph budget; the old {tokens,
// iterations, usd} still loads as the same pool; a budget mixing both,
// or missing a required spec key, is refused at its JSON pointer.
func TestDecodeBudgetSpecKeys(t *testing.T) {
	spec, err := graph.Decode(budgetDoc(t, `{"maxTokens": 5000, "maxIterations": 6, "maxUsd": 0.05, "resources": {"gpu": {"unit": "gpu-ms", "limit": 9}}}`))
	if err != nil {
		t.Fatalf("spec keys: %v", err)
	}
	want := ledger.Budget{Tokens: i64(5000), Iterations: i64(6), MicroUSD: i64(50_000), Resources: map[string]int64{"gpu": 9}}
	if diff := cmp.Diff(want, *spec.Budget); diff != "" {
		t.Errorf("spec budget (-want +got):\n%s", diff)
	}
	old, err := graph.Decode(budgetDoc(t, `{"tokens": 5000, "iterations": 6, "usd": 0.05}`))
	if err != nil {
		t.Fatalf("old keys: %v", err)
	}
	want.Resources = nil
	if diff := cmp.Diff(want, *old.Budget); diff != "" {
		t.Errorf("old budget (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ budget, pointer, reason string }{
		{`{"maxTokens": 5000, "iterations": 6}`, "/budget/iterations", "mixes"},
		{`{"tokens": 5000, "maxIterations": 6, "maxUsd": 1}`, "/budget/tokens", "mixes"},
		{`{"maxIterations": 6}`, "/budget/maxTokens", "required"},
		{`{"maxTokens": 5000}`, "/budget/maxIterations", "required"},
		{`{"maxTokens": 5000, "maxIterations": 6, "maxUsd": -1}`, "/budget/maxUsd", "dollars"},
		{`{"maxTokens": 5000, "maxIterations": 6, "resources": {"gpu": {"limit": 9}}}`, "/budget/resources/gpu/unit", "required"},
		{`{"maxTokens": 5000, "maxIterations": 6, "resources": {"gpu": {"unit": "ms", "limit": 9, "x": 1}}}`, "/budget/resources/gpu/x", "unknown"},
		{`{"maxTokens": 5000, "maxIterations": 6, "deadlineMs": 1000}`, "/budget/deadlineMs", "deadline"},
	} {
		_, err := graph.Decode(budgetDoc(t, tc.budget))
		var ve *graph.ValidationError
		if !errors.As(err, &ve) || ve.Pointer() != tc.pointer || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("budget %s: %v; want a refusal at %s saying %q", tc.budget, err, tc.pointer, tc.reason)
		}
	}
}

// A run journaled from a graph file in the old budget form resumes from
// the same graph written with the spec's keys (the journal holds the
// pool, not the keys), and a changed budget is named by the keys of the
// file given: the spec's for a spec file, the old for an old one.
func TestGraphJournaledWithOldBudgetKeysResumesFromSpecKeys(t *testing.T) {
	decode := func(b string) graph.Graph {
		g, err := graph.Decode(budgetDoc(t, b))
		if err != nil {
			t.Fatal(err)
		}
		s := starGraph(t)
		s.Budget = g.Budget
		s.LegacyBudgetKeys = g.LegacyBudgetKeys
		return s
	}
	dir := t.TempDir()
	o := resumeCheckOptions(t, dir, nil, &taskBrain{})
	if _, err := graph.RunGraph(context.Background(), decode(`{"tokens": 10000, "iterations": 10, "usd": 1}`), o); err != nil {
		t.Fatal(err)
	}
	second := &taskBrain{}
	o = resumeCheckOptions(t, dir, nil, second)
	o.Supervise.Resume = true
	res, err := graph.RunGraph(context.Background(), decode(`{"maxTokens": 10000, "maxIterations": 10, "maxUsd": 1}`), o)
	if err != nil {
		t.Fatalf("resume from the spec-keyed graph: %v", err)
	}
	if res.Result.Status != supervise.StatusWinner {
		t.Errorf("resumed run: %s %s, want a winner", res.Result.Status, res.Result.Reason)
	}
	for _, tc := range []struct{ budget, field, pointer string }{
		{`{"maxTokens": 20000, "maxIterations": 10, "maxUsd": 1}`, "budget.maxTokens", "/budget/maxTokens"},
		{`{"tokens": 20000, "iterations": 10, "usd": 1}`, "budget.tokens", "/budget/tokens"},
	} {
		o = resumeCheckOptions(t, dir, nil, &taskBrain{})
		o.Supervise.Resume = true
		_, err := graph.RunGraph(context.Background(), decode(tc.budget), o)
		var m *supervise.ResumeMismatchError
		if !errors.As(err, &m) || m.Field != tc.field || m.Pointer != tc.pointer {
			t.Errorf("changed budget %s: %v; want a mismatch at %s (%s)", tc.budget, err, tc.pointer, tc.field)
		}
	}
}
