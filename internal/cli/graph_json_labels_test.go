package cli_test

import (
	"fmt"
	"testing"
)

// agentrt graph --json names a worker alike in workers[] and spendGaps[]
// (spec §3.6 result: workers with label, the tree's nodes with label,
// spendGaps[{id, label?, …}]): a
// graph spawns its nodes without a label, and a spend gap names such a
// worker by its profile, so workers[].label must too — not "" beside a
// gap that says "coder".
func TestOutsideGraphWorkerLabelMatchesSpendGap(t *testing.T) {
	dir := t.TempDir()
	graph := gGraph([]string{leadNode, gNode("coder", "m-coder")},
		[]string{`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/v1"}`},
		`{"maxTokens": 5000, "maxIterations": 6}`)
	turns := managerTurns([]epCall{spawnCall("coder", "do it")}, []epCall{awaitCall})
	s := newEPServer(t, turns, func(epRequest) epAnswer { return epAnswer{Text: "RESULT done", NoUsage: true} })
	r := graphRun(t, s, dir, graph, "--expect", "RESULT")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	v := r.json(t)
	labels := map[string]string{}
	for _, w := range asList(v["workers"]) {
		labels[fmt.Sprint(at(w, "id"))] = fmt.Sprint(at(w, "label"))
		if at(w, "profile") == "coder" && at(w, "label") != "coder" {
			t.Errorf("worker %v of node coder has label %q, want %q (its profile, as spendGaps names it)", at(w, "id"), at(w, "label"), "coder")
		}
	}
	for _, n := range asList(at(v, "tree", "nodes")) {
		id := fmt.Sprint(at(n, "id"))
		if l, ok := labels[id]; ok && at(n, "label") != l {
			t.Errorf("tree.nodes[] %s has label %q, workers[] %q", id, at(n, "label"), l)
		}
	}
	matched := 0
	for _, g := range asList(v["spendGaps"]) {
		id := fmt.Sprint(at(g, "id"))
		l, ok := labels[id]
		if !ok {
			continue // the manager's own gap: no worker
		}
		matched++
		if got := fmt.Sprint(at(g, "label")); got != l {
			t.Errorf("worker %s: workers[].label %q, spendGaps[].label %q", id, l, got)
		}
	}
	if matched == 0 {
		t.Errorf("no spend gap names a worker (the coder reported no usage): gaps %v, workers %v", v["spendGaps"], v["workers"])
	}
}

// agentrt graph --json prints an amount no one measured and nothing was
// charged for as null, never 0 (spec §2.1: unknown is not zero): with
// dollars unreported by every model and no dollar ceiling, spent.usd and
// spentTotal.usd are null — and so is what the pool charged in dollars,
// spent.charged.usd and manager.charged.usd, which printed 0.
func TestOutsideGraphUnknownDollarsChargedAreNull(t *testing.T) {
	dir := t.TempDir()
	graph := gGraph([]string{leadNode, gNode("coder", "m-coder")},
		[]string{`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/v1"}`},
		`{"maxTokens": 5000, "maxIterations": 6}`)
	turns := managerTurns([]epCall{spawnCall("coder", "do it")}, []epCall{awaitCall})
	s := newEPServer(t, turns, func(epRequest) epAnswer { return epAnswer{Text: "RESULT done", NoUsage: true} })
	r := graphRun(t, s, dir, graph, "--expect", "RESULT")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	v := r.json(t)
	if known := at(v, "spentTotal", "usdKnown"); known != false {
		t.Fatalf("spentTotal.usdKnown %v, want false (no model reported dollars)", known)
	}
	for _, path := range [][]any{{"spent", "usd"}, {"spentTotal", "usd"}, {"spent", "charged", "usd"}, {"manager", "charged", "usd"}} {
		if got := at(v, path...); got != nil {
			t.Errorf("%v = %v with dollars unknown and none charged, want null", path, got)
		}
	}
}
