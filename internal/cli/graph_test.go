package cli_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

var (
	reviewGraph = filepath.Join("testdata", "graph", "review.json")
	directives  = filepath.Join("testdata", "graph", "directives.json")
)

// The root delegates once along its edge; the coder's result wins, and
// the JSON result carries the edge ledger beside the supervised result.
func TestGraphWinner(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := run(t, "", "graph", reviewGraph, "--task", "Make the login tests pass.", "--directives", directives,
		"--run-dir", dir, "--run-id", "login", "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if member(res, "status").Str() != "winner" || member(member(res, "winner"), "node").Str() != "login:s1" {
		t.Errorf("result: %s", out)
	}
	ledger := member(res, "ledger").Items()
	if len(ledger) == 0 || member(ledger[0], "edge").Str() != "delegates:driver->coder" || member(ledger[0], "outcome").Str() != "delivered" {
		t.Errorf("ledger: %s", out)
	}
	if member(res, "runDir").Str() != dir || !strings.Contains(errOut, "spawned login:s1 coder") {
		t.Errorf("run dir or progress:\n%s%s", out, errOut)
	}
	// §3.7 result {result: SupervisedResult, ledger[], exhaustedEdges[],
	// runId}: the supervised result is also its own member.
	sr := member(res, "result")
	if member(sr, "kind").Str() != "winner" || member(sr, "runId").Str() != "login" || member(member(sr, "winner"), "node").Str() != "login:s1" ||
		member(res, "runId").Str() != "login" || len(member(res, "exhaustedEdges").Items()) != 0 {
		t.Errorf("result member, runId or exhaustedEdges: %s", out)
	}
}

// A missing --task is a usage error (2); a graph that does not decode
// is refused (1). (--directives is optional: the built-in directives
// resolve without it, graph_directives_test.go.)
func TestGraphRefusals(t *testing.T) {
	if _, errOut, code := run(t, "", "graph", reviewGraph, "--directives", directives); code != 2 {
		t.Errorf("no --task: exit %d\n%s", code, errOut)
	}
	_, errOut, code := run(t, "", "graph", "-", "--task", "t", "--directives", directives)
	if code != 1 || !strings.Contains(errOut, "agentrt:") {
		t.Errorf("empty graph: exit %d\n%s", code, errOut)
	}
}

// An analyzes edge naming the built-in registry lens failure-triage:
// the lens runs over the coder's settle, charged to the graph's budget,
// and its traversal is in the ledger; the coder still wins.
func TestGraphLensEdge(t *testing.T) {
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
	out, errOut, code := run(t, "", "graph", graphFile, "--task", "Make the login tests pass.", "--directives", directives,
		"--run-id", "lens", "--workspace", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if member(member(res, "winner"), "node").Str() != "lens:s1" {
		t.Errorf("winner: %s", out)
	}
	var lensRows int
	for _, row := range member(res, "ledger").Items() {
		if member(row, "edge").Str() == "analyzes:failure-triage:coder->driver" && member(row, "outcome").Str() == "delivered" {
			lensRows++
		}
	}
	var analysts int
	for _, n := range member(res, "workers").Items() {
		if member(n, "profile").Str() == "analyst-failure-triage" && !member(n, "delivered").Bool() {
			analysts++
		}
	}
	if lensRows != 1 || analysts != 1 {
		t.Errorf("lens rows %d, analyst workers %d; want 1, 1: %s", lensRows, analysts, out)
	}
}

// --analysts FILE puts caller lenses on the registry an analyzes edge
// reads; a definition out of bounds is refused with its JSON pointer.
func TestGraphAnalystsFile(t *testing.T) {
	graphFile := writeFile(t, "lens.json", `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/coder/v1"},
    {"kind": "analyzes", "analyst": "perf-review", "over": ["coder"], "to": "driver", "directive": "analyze/critic/v1"}
  ],
  "budget": {"tokens": 5000, "iterations": 6}
}`)
	lens := `{"id": "perf-review", "description": "Slow paths.", "area": "performance", "question": "What is slow?", "instructions": "Name quadratic loops.", "toolGroup": "targeted"}`
	good := writeFile(t, "analysts.json", "["+lens+"]")
	bad := writeFile(t, "bad.json", `[`+strings.Replace(lens, `"targeted"`, `"root"`, 1)+`]`)
	args := []string{"graph", graphFile, "--task", "Make the login tests pass.", "--directives", directives, "--run-id", "perf",
		"--workspace", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db"), "--json"}
	if _, errOut, code := run(t, "", args...); code != 1 || !strings.Contains(errOut, "perf-review") {
		t.Errorf("an unknown lens: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := run(t, "", append(args, "--analysts", bad)...); code != 1 || !strings.Contains(errOut, "/0/toolGroup") {
		t.Errorf("a bad lens file: exit %d\n%s", code, errOut)
	}
	out, errOut, code := run(t, "", append(args, "--analysts", good)...)
	if code != 0 || !strings.Contains(out, `"edge": "analyzes:perf-review:coder->driver"`) || !strings.Contains(out, `"profile": "analyst-perf-review"`) {
		t.Errorf("a caller lens: exit %d\n%s%s", code, out, errOut)
	}
}

// §3.6 "Supervisor run layout": a graph run without --run-dir lives at
// WORKSPACE/.agent/supervisor/RUN-ID, as a supervised run does.
func TestGraphDefaultRunDirInWorkspace(t *testing.T) {
	ws := t.TempDir()
	out, errOut, code := run(t, "", "graph", reviewGraph, "--task", "Make the login tests pass.", "--directives", directives,
		"--workspace", ws, "--run-id", "login", "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	dir := filepath.Join(ws, ".agent", "supervisor", "login")
	if got := member(decode(t, out), "runDir").Str(); got != dir {
		t.Errorf("runDir %q, want %q", got, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, supervise.RootStreamFile)); err != nil {
		t.Errorf("the graph's run dir lacks its root stream: %v", err)
	}
}

// The same run id and dir again without --resume is refused, and the
// refusal tells a command-line user what to do: the --resume flag (not
// the library's Resume option), or another run dir. The journal is
// left as it was.
func TestRunIDReuseWithoutResumeSaysWhatToDo(t *testing.T) {
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	graphArgs := []string{"graph", reviewGraph, "--task", "t", "--directives", directives, "--run-dir", dir, "--run-id", "login", "--db", db}
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"supervise", superviseArgsDB(script, dir, db), 2},
		{"graph", graphArgs, 2}, // CL16: a usage error, as agentrt supervise's
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir = t.TempDir()
			tc.args[slices.Index(tc.args, "--run-dir")+1] = dir
			if out, errOut, code := run(t, "", tc.args...); code != 0 {
				t.Fatalf("first run: exit %d\n%s%s", code, out, errOut)
			}
			before, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
			if err != nil {
				t.Fatal(err)
			}
			out, errOut, code := run(t, "", tc.args...)
			if code != tc.code || out != "" {
				t.Errorf("again: exit %d, stdout %q; want exit %d and nothing on stdout", code, out, tc.code)
			}
			if !strings.Contains(errOut, "already has a journal in "+dir) || !strings.Contains(errOut, "--resume") || strings.Contains(errOut, "pass Resume") {
				t.Errorf("the refusal does not say to add --resume:\n%s", errOut)
			}
			if strings.Contains(errOut, "started") || strings.Contains(errOut, "finished") {
				t.Errorf("the refused run shows the journaled run's progress as its own:\n%s", errOut)
			}
			after, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
			if err != nil || string(after) != string(before) {
				t.Errorf("the refused run changed the journal (%v)", err)
			}
		})
	}
}

// The graph's budget is the one conserved pool of its workers too: each
// worker the default plan delegates to reserves from it (one iteration
// and a share of the tokens, as agentrt supervise's workers do), so a
// budget of two iterations runs two of three workers and refuses the
// third. Before the fix the workers reserved nothing: all three ran and
// the run spent three iterations of a pool of two.
func TestGraphWorkersReserveFromTheBudget(t *testing.T) {
	worker := func(id string) string {
		return `{"id": "` + id + `", "profile": {"name": "` + id + `", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/` + id + `"}}}`
	}
	delegates := func(id string) string {
		return `{"kind": "delegates", "from": "driver", "to": "` + id + `", "directive": "delegate/v1"}`
	}
	graphFile := writeFile(t, "three.json", `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    `+worker("a")+`, `+worker("b")+`, `+worker("c")+`],
  "edges": [`+delegates("a")+`, `+delegates("b")+`, `+delegates("c")+`],
  "budget": {"tokens": 5000, "iterations": 2}
}`)
	out, errOut, _ := run(t, "", "graph", graphFile, "--task", "Make the login tests pass.", "--run-id", "three",
		"--workspace", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	res := decode(t, out)
	if n, spent := len(member(res, "workers").Items()), member(member(res, "spent"), "iterations"); n != 2 || spent.Float() != 2 {
		t.Errorf("%d workers ran, spending %s iterations; want 2 of a pool of 2:\n%s%s", n, canonjson.Marshal(spent), out, errOut)
	}
}
