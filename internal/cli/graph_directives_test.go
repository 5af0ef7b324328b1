package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/graph"
)

// builtinGraph names only built-in directives: the coder's delegates
// edge delegate/implement/v1, the critic's analyzes edge
// analyze/critique/v1.
const builtinGraph = `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}},
    {"id": "critic", "profile": {"name": "critic", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/critic"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/implement/v1"},
    {"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "driver", "directive": "analyze/critique/v1"}
  ],
  "budget": {"tokens": 5000, "iterations": 6}
}`

// §3.7 "every directive resolves" without a registry of the user's: a
// graph naming built-in handles runs with no --directives, each
// worker's task opened by its built-in text (the scripted workers answer
// only a task that starts so), and --directives FILE replaces a
// built-in of the same handle.
func TestGraphBuiltinDirectives(t *testing.T) {
	graphFile := writeFile(t, "graph.json", builtinGraph)
	implement, _ := graph.BuiltinRegistry().Resolve("delegate/implement/v1")
	critique, _ := graph.BuiltinRegistry().Resolve("analyze/critique/v1")
	script := writeFile(t, "workers.json", `{"turns": [
  {"match": `+quoteJSON(implement[:40])+`, "repeat": true, "steps": [{"text": "patch: the login test passes"}]},
  {"match": `+quoteJSON(critique[:40])+`, "repeat": true, "steps": [{"text": "finding: nothing unsafe"}]},
  {"match": "OVERRIDDEN", "repeat": true, "steps": [{"text": "patch: by the caller's directive"}]}]}`)
	base := []string{"graph", graphFile, "--task", "Make the login test pass.", "--script", script, "--expect", "patch", "--json"}

	out, errOut, code := run(t, "", append(base, "--run-id", "builtin", "--workspace", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db"))...)
	if code != 0 {
		t.Fatalf("built-in directives: exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if got := member(member(res, "winner"), "text").Str(); got != "patch: the login test passes" {
		t.Errorf("winner %q: the coder's task did not open with delegate/implement/v1: %s", got, out)
	}
	rows := map[string]string{}
	for _, row := range member(res, "ledger").Items() {
		rows[member(row, "directive").Str()] = member(row, "outcome").Str()
	}
	if rows["delegate/implement/v1"] != "delivered" || rows["analyze/critique/v1"] != "delivered" {
		t.Errorf("ledger outcomes by directive %v, want both delivered: %s", rows, out)
	}

	override := writeFile(t, "directives.json", `{"delegate/implement/v1": "OVERRIDDEN: fix it your way."}`)
	out, errOut, code = run(t, "", append(base, "--directives", override, "--run-id", "override", "--workspace", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db"))...)
	if code != 0 || member(member(decode(t, out), "winner"), "text").Str() != "patch: by the caller's directive" {
		t.Errorf("--directives replacing a built-in: exit %d\n%s%s", code, out, errOut)
	}
}

// agentrt graph directives lists the registry (built-ins, plus a
// --directives file's); a file with a handle that is not <surface>/v<n>
// is refused naming it, and so is a graph naming a handle no registry
// holds, before anything runs.
func TestGraphDirectivesCommand(t *testing.T) {
	out, errOut, code := run(t, "", "graph", "directives", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	listed := decode(t, out)
	for _, h := range graph.BuiltinRegistry().Handles() {
		if _, ok := listed.Get(h); !ok {
			t.Errorf("agentrt graph directives lacks %s: %s", h, out)
		}
	}
	mine := writeFile(t, "directives.json", `{"delegate/coder/v1": "Code."}`)
	if out, _, code := run(t, "", "graph", "directives", "--directives", mine); code != 0 || !strings.Contains(out, "delegate/coder/v1\n  Code.") || !strings.Contains(out, "delegate/v1\n") {
		t.Errorf("with a file: exit %d\n%s", code, out)
	}
	if _, errOut, code := run(t, "", "graph", "directives", "--directives", writeFile(t, "twice.json", `{"a/v1": "A", "a/v1": "B"}`)); code != 1 || !strings.Contains(errOut, `directives["a/v1"] (at /directives/a~1v1): is given twice`) {
		t.Errorf("a handle given twice: exit %d\n%s", code, errOut)
	}
	bad := writeFile(t, "bad.json", `{"Delegate Coder": "Code."}`)
	if _, errOut, code := run(t, "", "graph", "directives", "--directives", bad); code != 1 || !strings.Contains(errOut, `directives["Delegate Coder"]`) {
		t.Errorf("a bad handle: exit %d\n%s", code, errOut)
	}
	unknown := writeFile(t, "graph.json", strings.Replace(builtinGraph, "delegate/implement/v1", "delegate/coder/v9", 1))
	if _, errOut, code := run(t, "", "graph", unknown, "--task", "t", "--workspace", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db")); code != 1 ||
		!strings.Contains(errOut, "edges[0].directive") || !strings.Contains(errOut, "does not resolve") {
		t.Errorf("an unknown handle: exit %d\n%s", code, errOut)
	}
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
