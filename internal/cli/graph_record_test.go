package cli_test

import (
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// agentrt graph with an analyzes edge records the run in its store as
// agentrt supervise does: every node of the result's tree, the lens's
// analyst included, is in the record with the kernel run it ran as,
// that run names the graph run as its judge and ledgers the node's
// spend, and the nodes' and the driver's spend add up to the outcome's.
func TestGraphRunRecordHoldsItsAnalysts(t *testing.T) {
	graphFile := writeFile(t, "lens.json", `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/coder/v1"},
    {"kind": "analyzes", "analyst": "failure-triage", "over": ["coder"], "to": "driver", "directive": "analyze/critic/v1"}
  ],
  "budget": {"tokens": 5000, "iterations": 6}
}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "", "graph", graphFile, "--task", "Make the login tests pass.", "--directives", directives,
		"--run-id", "lens", "--workspace", t.TempDir(), "--db", db, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	shown, showErr, code := run(t, "", "runs", "show", "lens", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("runs show lens: exit %d\n%s%s", code, shown, showErr)
	}
	rec := member(decode(t, shown), "record")
	workers := member(rec, "workers").Items()
	if got, want := len(workers), len(member(res, "workers").Items()); got != want {
		t.Fatalf("%d recorded nodes, the result has %d: %s", got, want, shown)
	}
	outcome := member(rec, "outcome")
	sum := int64(member(member(outcome, "driverInference"), "tokens").Float())
	allKnown := member(member(outcome, "driverInference"), "tokensKnown").Bool()
	var analysts int
	for _, w := range workers {
		id, execution := member(w, "id").Str(), member(w, "execution").Str()
		if member(w, "profile").Str() == "analyst-failure-triage" {
			analysts++
		}
		if execution == "" {
			t.Errorf("node %s (%s) names no execution: %s", id, member(w, "profile").Str(), shown)
			continue
		}
		wout, werr, code := run(t, "", "runs", "show", execution, "--db", db, "--json")
		if code != 0 {
			t.Errorf("node %s's run %s: exit %d\n%s%s", id, execution, code, wout, werr)
			continue
		}
		wrun := decode(t, wout)
		if got, want := member(member(wrun, "record"), "judgedBy").Str(), "supervise run lens, node "+id; got != want {
			t.Errorf("node %s's run judgedBy %q, want %q", id, got, want)
		}
		// The scripted provider reports no tokens: unknown on both sides,
		// never 0 on one of them.
		tk, known := tokensOf(member(w, "spent"))
		spend := member(wrun, "spend")
		in, o := member(spend, "inputTokens"), member(spend, "outputTokens")
		ledgered := in.Kind() == canonjson.Number && o.Kind() == canonjson.Number
		if known != ledgered || (known && int64(in.Float()+o.Float()) != tk) {
			t.Errorf("node %s: recorded spent %s, its run ledgers %s", id, canonjson.Marshal(member(w, "spent")), canonjson.Marshal(spend))
		}
		allKnown = allKnown && known
		sum += tk
	}
	if analysts != 1 {
		t.Errorf("%d analyst nodes recorded, want 1: %s", analysts, shown)
	}
	if member(member(outcome, "spent"), "tokensKnown").Bool() != allKnown {
		t.Errorf("the outcome's tokens known %v, its nodes' and driver's %v: %s", !allKnown, allKnown, shown)
	}
	if got := int64(member(member(outcome, "spent"), "tokens").Float()); allKnown && got != sum {
		t.Errorf("the outcome spent %d tokens, its nodes and driver %d: %s", got, sum, shown)
	}
}
