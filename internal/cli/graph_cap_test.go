package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// §3.7: a delegates cap spent with no winner is a GraphEdgeCapError,
// thrown with the ledger. agentrt graph prints the result and every
// traversal (one JSON document with --json: the ledger's cap row and
// exhaustedEdges) and exits 1 — and says on stderr why, naming the
// spent edge and what to change, so the run is not mistaken for a
// task that merely failed.
func TestGraphCapExhaustedSaysWhy(t *testing.T) {
	g := writeFile(t, "capped.json", `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}}
  ],
  "edges": [{"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/v1", "maxTraversals": 1}],
  "budget": {"tokens": 50000, "iterations": 6}
}`)
	spawnCoder := `{"calls": [{"verb": "spawn_worker", "args": {"profile": "coder", "task": "Fix it."}}], "usage": {"inputTokens": 20, "outputTokens": 5}}`
	script := managerScript(t, `{"turns": [`+spawnCoder+`, `+awaitOne+`, `+spawnCoder+`, `+awaitOne+`, `+answerDone+`]}`)
	for _, asJSON := range []bool{false, true} {
		args := []string{"graph", g, "--task", "Make the login tests pass.", "--expect", "a result no worker gives",
			"--manager-script", script, "--run-dir", t.TempDir(), "--run-id", "cap", "--db", filepath.Join(t.TempDir(), "runs.db")}
		if asJSON {
			args = append(args, "--json")
		}
		out, errOut, code := run(t, "", args...)
		if code != 1 {
			t.Fatalf("json %v: exit %d, want 1\n%s%s", asJSON, code, out, errOut)
		}
		if !strings.Contains(errOut, "traversal cap exhausted on delegates:driver->coder") || !strings.Contains(errOut, "maxTraversals") {
			t.Errorf("json %v: stderr does not say the cap ended the run:\n%s", asJSON, errOut)
		}
		if !asJSON {
			if !strings.Contains(out, "delegates:driver->coder #2 unpropagated") || !strings.Contains(out, "exhausted delegates:driver->coder") {
				t.Errorf("stdout:\n%s", out)
			}
			continue
		}
		res := decode(t, out)
		rows := member(res, "ledger").Items()
		if len(rows) != 2 || member(rows[1], "reason").Str() != "traversal-cap-exhausted (max 1)" {
			t.Errorf("ledger: %s", out)
		}
		if ex := member(res, "exhaustedEdges").Items(); len(ex) != 1 || ex[0].Str() != "delegates:driver->coder" {
			t.Errorf("exhaustedEdges: %s", out)
		}
	}
}

// The shipped review graph (testdata/graph/review.json: a driver, its
// coder capped at one traversal, a critic node analyzing the coder; 5000
// tokens) under a manager that delegates to the coder twice: the
// critic's analysis of the first settle runs (two worker nodes reserve a
// quarter of the pool each, as agentrt graph's help says, so the coder
// charged its whole ceiling for unreported usage leaves the critic
// room), and the run ends on the spent cap — exit 1, said on stderr —
// not budget-exhausted with the cap hidden.
func TestGraphReviewGraphEndsOnItsCapNotTheBudget(t *testing.T) {
	spawnCoder := `{"calls": [{"verb": "spawn_worker", "args": {"profile": "coder", "task": "Fix it."}}], "usage": {"inputTokens": 20, "outputTokens": 5}}`
	script := managerScript(t, `{"turns": [`+spawnCoder+`, `+awaitOne+`, `+awaitOne+`, `+spawnCoder+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", "graph", reviewGraph, "--task", "Make the login tests pass.", "--directives", directives,
		"--expect", "a result no worker gives", "--manager-script", script, "--run-dir", t.TempDir(), "--run-id", "review",
		"--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if r := member(res, "reason").Str(); r == "budget-exhausted" {
		t.Errorf("the run ended budget-exhausted, hiding the cap:\n%s", out)
	}
	if !strings.Contains(errOut, "traversal cap exhausted on delegates:driver->coder") {
		t.Errorf("stderr does not say the cap ended the run:\n%s", errOut)
	}
	var outcomes []string
	for _, row := range member(res, "ledger").Items() {
		outcomes = append(outcomes, member(row, "edge").Str()+" "+member(row, "outcome").Str())
	}
	want := []string{"delegates:driver->coder delivered", "analyzes:critic:coder->driver delivered", "delegates:driver->coder unpropagated"}
	if strings.Join(outcomes, "; ") != strings.Join(want, "; ") {
		t.Errorf("ledger %q, want %q\n%s", outcomes, want, out)
	}
	if ex := member(res, "exhaustedEdges").Items(); len(ex) != 1 || ex[0].Str() != "delegates:driver->coder" {
		t.Errorf("exhaustedEdges: %s", out)
	}
}

// §3.7 result.exhaustedEdges lists every edge whose cap was reached,
// analyzes caps included, also when a delegates cap makes the run a
// GraphEdgeCapError (whose own list names only the delegates caps, the
// cause): the coder's second settle finds the critic's cap spent, its
// third spawn the coder's; the JSON result lists both, in the order
// they were reached, and the text result says which are exhausted.
func TestGraphCapErrorListsEveryExhaustedEdge(t *testing.T) {
	g := writeFile(t, "capped-review.json", `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}},
    {"id": "critic", "profile": {"name": "critic", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/critic"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/coder/v1", "maxTraversals": 2},
    {"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "driver", "directive": "analyze/critic/v1", "maxTraversals": 1}
  ],
  "budget": {"tokens": 20000, "iterations": 12}
}`)
	spawnCoder := `{"calls": [{"verb": "spawn_worker", "args": {"profile": "coder", "task": "Fix it."}}], "usage": {"inputTokens": 20, "outputTokens": 5}}`
	script := managerScript(t, `{"turns": [`+spawnCoder+`, `+awaitOne+`, `+awaitOne+`, `+spawnCoder+`, `+awaitOne+`, `+spawnCoder+`, `+answerDone+`]}`)
	want := []string{"analyzes:critic:coder->driver", "delegates:driver->coder"}
	for _, asJSON := range []bool{false, true} {
		args := []string{"graph", g, "--task", "Make the login tests pass.", "--directives", directives, "--expect", "a result no worker gives",
			"--manager-script", script, "--run-dir", t.TempDir(), "--run-id", "capped", "--db", filepath.Join(t.TempDir(), "runs.db")}
		if asJSON {
			args = append(args, "--json")
		}
		out, errOut, code := run(t, "", args...)
		if code != 1 || !strings.Contains(errOut, "traversal cap exhausted on delegates:driver->coder and") {
			t.Fatalf("json %v: exit %d, want 1 and the cap error\n%s%s", asJSON, code, out, errOut)
		}
		if !asJSON {
			if !strings.Contains(out, "exhausted "+strings.Join(want, ", ")) {
				t.Errorf("stdout does not list every exhausted edge:\n%s", out)
			}
			continue
		}
		var got []string
		for _, e := range member(decode(t, out), "exhaustedEdges").Items() {
			got = append(got, e.Str())
		}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("exhaustedEdges %q, want %q\n%s", got, want, out)
		}
	}
}
