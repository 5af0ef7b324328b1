package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Outside scenarios for agentrt graph (spec §3.7, behaviours 52 and 53)
// through the built binary on --provider openai, against the scripted
// endpoint of outside_graph_endpoint_test.go: only exit codes, stdout,
// stderr, the run dir and what reached the endpoint are checked.

// gNode is a graph node's JSON: a cli-base profile on model, with the
// coordination verbs it declares.
func gNode(id, model string, verbs ...string) string {
	tools := ""
	for i, v := range verbs {
		if i > 0 {
			tools += ","
		}
		tools += fmt.Sprintf("%q: true", "agent_runtime_coordination_"+v)
	}
	return fmt.Sprintf(`{"id": %q, "profile": {"name": %q, "harness": "cli-base", "model": {"default": %q}, "tools": {%s}}}`, id, id, model, tools)
}

// leadNode is the root of the scenarios' graphs.
var leadNode = gNode("lead", "m-lead", "spawn_worker", "await_event", "submit_result", "stop")

// gGraph is a graph document of nodes, edges and budget.
func gGraph(nodes, edges []string, budget string) string {
	return fmt.Sprintf(`{"nodes": [%s], "edges": [%s], "budget": %s}`, strings.Join(nodes, ",\n"), strings.Join(edges, ",\n"), budget)
}

// spawnCall is a spawn_worker call of node with task.
func spawnCall(node, task string) epCall {
	return epCall{"spawn_worker", map[string]any{"profile": node, "task": task}}
}

// awaitCall is an await_event call.
var awaitCall = epCall{"await_event", map[string]any{}}

// managerTurns answers the manager from turns by its turn index; past them it
// ends its turn with text.
func managerTurns(turns ...[]epCall) func(r epRequest) epAnswer {
	return func(r epRequest) epAnswer {
		if r.Steps < len(turns) {
			return epAnswer{Calls: turns[r.Steps]}
		}
		return epAnswer{Text: "manager done"}
	}
}

// answerByModel answers each worker model with its text.
func answerByModel(texts map[string]string) func(r epRequest) epAnswer {
	return func(r epRequest) epAnswer {
		if t, ok := texts[r.Model]; ok {
			return epAnswer{Text: t}
		}
		return epAnswer{Status: 400}
	}
}

// workerText is the instruction a worker request carried (its messages).
func workerText(t *testing.T, s *epServer, model string) string {
	t.Helper()
	for _, r := range s.requests() {
		if r.Model == model {
			return r.User
		}
	}
	t.Fatalf("no request of %s reached the endpoint", model)
	return ""
}

// ledgerRow is the part of an edge ledger row a scenario checks.
type ledgerRow struct {
	Edge, Kind, From, To, Directive, Outcome, Continuity, WorkerID string
	Traversal                                                      float64
}

func ledgerRows(v map[string]any) []ledgerRow {
	var rows []ledgerRow
	for _, x := range asList(v["ledger"]) {
		m, _ := x.(map[string]any)
		s := func(k string) string { r, _ := m[k].(string); return r }
		tr, _ := m["traversal"].(float64)
		rows = append(rows, ledgerRow{Edge: s("edge"), Kind: s("kind"), From: s("from"), To: s("to"), Directive: s("directive"),
			Outcome: s("outcome"), Continuity: s("continuity"), WorkerID: s("workerId"), Traversal: tr})
	}
	return rows
}

func asList(v any) []any { l, _ := v.([]any); return l }

// workerIDs maps each worker's profile to its ids, in order.
func workerIDs(v map[string]any) map[string][]string {
	ids := map[string][]string{}
	for _, x := range asList(v["workers"]) {
		m, _ := x.(map[string]any)
		p, _ := m["profile"].(string)
		id, _ := m["id"].(string)
		ids[p] = append(ids[p], id)
	}
	return ids
}

// Behaviour 53 (SUP graph ledger) and the §3.6 run layout: two delegated
// spawns are two delivered rows, continuity fresh, whose bytes are the
// instruction the worker received and whose workerIds are the workers the
// result lists; each row is journaled as an edge event; every worker ran
// once; the winner's result is a content-addressed blob.
func TestOutsideGraphTwoDelegatesLedger(t *testing.T) {
	dir := t.TempDir()
	graph := epFile(t, dir, "g.json", gGraph(
		[]string{leadNode, gNode("coder", "m-coder"), gNode("tester", "m-tester")},
		[]string{
			`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/implement/v1"}`,
			`{"kind": "delegates", "from": "lead", "to": "tester", "directive": "delegate/test/v1"}`,
		}, `{"maxTokens": 5000, "maxIterations": 6}`))
	s := newEPServer(t,
		managerTurns([]epCall{spawnCall("coder", "implement the parser"), spawnCall("tester", "test the parser")}, []epCall{awaitCall}, []epCall{awaitCall}),
		answerByModel(map[string]string{"m-coder": "RESULT parser implemented", "m-tester": "RESULT tests pass"}))
	rd := filepath.Join(dir, "run")
	r := runAgentrtEP(t, "graph", graph, "--task", "build a parser", "--provider", "openai", "--base-url", s.URL(), "--run-dir", rd, "--json", "--expect", "RESULT")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	v := r.json(t)
	ids := workerIDs(v)
	if len(ids["coder"]) != 1 || len(ids["tester"]) != 1 {
		t.Fatalf("workers by profile %v, want one coder and one tester", ids)
	}
	want := []ledgerRow{
		{Edge: "delegates:lead->coder", Kind: "delegates", From: "lead", To: "coder", Directive: "delegate/implement/v1", Outcome: "delivered", Continuity: "fresh", WorkerID: ids["coder"][0], Traversal: 1},
		{Edge: "delegates:lead->tester", Kind: "delegates", From: "lead", To: "tester", Directive: "delegate/test/v1", Outcome: "delivered", Continuity: "fresh", WorkerID: ids["tester"][0], Traversal: 1},
	}
	if diff := cmp.Diff(want, ledgerRows(v)); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	// bytes counts the directive's and the task's bytes (the reference's
	// byteLength(directive)+byteLength(task)); the worker got them joined
	// by a blank line.
	for i, c := range []struct{ model, task string }{{"m-coder", "implement the parser"}, {"m-tester", "test the parser"}} {
		got, _ := at(v, "ledger", i, "bytes").(float64)
		sent := workerText(t, s, c.model)
		directive, ok := strings.CutSuffix(sent, "\n\n"+c.task)
		if !ok || directive == "" {
			t.Errorf("%s received %q: not a directive then its task %q", c.model, sent, c.task)
		}
		if w := len(directive) + len(c.task); int(got) != w {
			t.Errorf("ledger row %d bytes %v, want %d (directive and task %s received)", i, got, w, c.model)
		}
	}
	if n := len(asList(v["exhaustedEdges"])); n != 0 {
		t.Errorf("exhaustedEdges %v, want none", v["exhaustedEdges"])
	}
	if c, tt := s.count("m-coder"), s.count("m-tester"); c != 1 || tt != 1 {
		t.Errorf("worker requests coder %d tester %d, want 1 each", c, tt)
	}
	// The journal holds the same rows as edge events.
	var edges []string
	for _, rec := range jsonl(t, filepath.Join(rd, "spawn-journal.jsonl")) {
		if rec["kind"] == "edge" {
			edges = append(edges, fmt.Sprint(at(rec, "data", "edge"), " ", at(rec, "data", "outcome"), " ", at(rec, "data", "workerId")))
		}
	}
	wantEdges := []string{"delegates:lead->coder delivered " + ids["coder"][0], "delegates:lead->tester delivered " + ids["tester"][0]}
	if diff := cmp.Diff(wantEdges, edges); diff != "" {
		t.Errorf("journaled edge events (-want +got):\n%s", diff)
	}
	outRef, _ := v["outRef"].(string)
	if !strings.HasPrefix(outRef, "sha256:") {
		t.Fatalf("winner outRef %q", outRef)
	}
	for _, f := range []string{"state.json", "progress.ndjson", "root-stream.jsonl", "workers/coder.ndjson", "workers/tester.ndjson",
		"blobs/sha256-" + strings.TrimPrefix(outRef, "sha256:") + ".json"} {
		if _, err := os.Stat(filepath.Join(rd, f)); err != nil {
			t.Errorf("run dir: %v", err)
		}
	}
	for _, p := range []string{"spawned", "settled", "finished winner"} {
		if !strings.Contains(r.stderr, p) {
			t.Errorf("stderr progress lacks %q:\n%s", p, r.stderr)
		}
	}
}

// Behaviour 52 through the CLI: each invalid graph is refused before any
// request reaches the model endpoint, exit 1 and the reason on stderr.
func TestOutsideGraphRejectedBeforeAnyRequest(t *testing.T) {
	coder, critic := gNode("coder", "m-coder"), gNode("critic", "m-critic")
	del := `{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/v1"}`
	budget := `{"maxTokens": 5000, "maxIterations": 6}`
	tests := []struct {
		name, graph, stderr string
		directives          string
	}{
		{"name differs from id", gGraph([]string{leadNode, `{"id": "coder", "profile": {"name": "koder", "harness": "cli-base", "model": {"default": "m-coder"}}}`}, []string{del}, budget), "name", ""},
		{"no root: everyone is delegated to", gGraph([]string{leadNode, gNode("coder", "m-coder", "spawn_worker")}, []string{del,
			`{"kind": "delegates", "from": "coder", "to": "lead", "directive": "delegate/v1"}`}, budget), "root", ""},
		{"two roots", gGraph([]string{leadNode, coder, gNode("boss", "m-boss", "spawn_worker"), critic}, []string{del,
			`{"kind": "delegates", "from": "boss", "to": "critic", "directive": "delegate/v1"}`}, budget), "root", ""},
		{"self-delegation", gGraph([]string{leadNode, coder}, []string{del,
			`{"kind": "delegates", "from": "lead", "to": "lead", "directive": "delegate/v1"}`}, budget), "lead", ""},
		{"root lacks the spawn tool", gGraph([]string{gNode("lead", "m-lead", "await_event"), coder}, []string{del}, budget), "spawn_worker", ""},
		{"analyst node delegated to", gGraph([]string{leadNode, coder, critic}, []string{del,
			`{"kind": "delegates", "from": "lead", "to": "critic", "directive": "delegate/v1"}`,
			`{"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "lead", "directive": "analyze/v1"}`}, budget), "critic", ""},
		{"id both node and lens", gGraph([]string{leadNode, coder, gNode("failure-triage", "m-ft")}, []string{del,
			`{"kind": "analyzes", "analyst": "failure-triage", "over": ["coder"], "to": "lead", "directive": "analyze/v1"}`}, budget), "failure-triage", ""},
		{"unknown directive", gGraph([]string{leadNode, coder}, []string{
			`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/nonesuch/v1"}`}, budget), "delegate/nonesuch/v1", ""},
		{"no delegates edge", gGraph([]string{leadNode, coder, critic}, []string{
			`{"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "lead", "directive": "analyze/v1"}`}, budget), "delegates", ""},
		{"analyzes edge with continuity", gGraph([]string{leadNode, coder, critic}, []string{del,
			`{"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "lead", "directive": "analyze/v1", "continuity": "fresh"}`}, budget), "continuity", ""},
		{"two analyzes edges of one analyst", gGraph([]string{leadNode, coder, critic}, []string{del,
			`{"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "lead", "directive": "analyze/v1"}`,
			`{"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "lead", "directive": "analyze/critique/v1"}`}, budget), "critic", ""},
		{"delegation not from the root", gGraph([]string{leadNode, gNode("coder", "m-coder", "spawn_worker"), critic}, []string{del,
			`{"kind": "delegates", "from": "coder", "to": "critic", "directive": "delegate/v1"}`}, budget), "root", ""},
		{"unreachable node", gGraph([]string{leadNode, coder, gNode("idle", "m-idle")}, []string{del}, budget), "idle", ""},
		{"two delegates edges to one node", gGraph([]string{leadNode, coder}, []string{del,
			`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/fix/v1"}`}, budget), "coder", ""},
		{"analyzes over the root", gGraph([]string{leadNode, coder, critic}, []string{del,
			`{"kind": "analyzes", "analyst": "critic", "over": ["lead"], "to": "lead", "directive": "analyze/v1"}`}, budget), "root", ""},
		{"the root as analyst", gGraph([]string{leadNode, coder}, []string{del,
			`{"kind": "analyzes", "analyst": "lead", "over": ["coder"], "to": "lead", "directive": "analyze/v1"}`}, budget), "lead", ""},
		{"analyst neither node nor lens", gGraph([]string{leadNode, coder}, []string{del,
			`{"kind": "analyzes", "analyst": "ghost", "over": ["coder"], "to": "lead", "directive": "analyze/v1"}`}, budget), "ghost", ""},
		{"analyzes edge over nothing", gGraph([]string{leadNode, coder, critic}, []string{del,
			`{"kind": "analyzes", "analyst": "critic", "over": [], "to": "lead", "directive": "analyze/v1"}`}, budget), "over", ""},
		{"zero traversal cap", gGraph([]string{leadNode, coder}, []string{
			`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/v1", "maxTraversals": 0}`}, budget), "maxTraversals", ""},
		{"negative budget", gGraph([]string{leadNode, coder}, []string{del}, `{"maxTokens": -5, "maxIterations": 6}`), "maxTokens", ""},
		{"duplicate node id", gGraph([]string{leadNode, coder, coder}, []string{del}, budget), "coder", ""},
		{"invalid continuity", gGraph([]string{leadNode, coder}, []string{
			`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/v1", "continuity": "sometimes"}`}, budget), "continuity", ""},
		{"no budget", fmt.Sprintf(`{"nodes": [%s, %s], "edges": [%s]}`, leadNode, coder, del), "budget", ""},
		{"unknown graph key", fmt.Sprintf(`{"nodes": [%s, %s], "edges": [%s], "budget": %s, "deliverables": {}}`, leadNode, coder, del, budget), "deliverables", ""},
		{"empty directive text", gGraph([]string{leadNode, coder}, []string{
			`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/custom/v1"}`}, budget), "delegate/custom/v1", `{"delegate/custom/v1": ""}`},
	}
	s := newEPServer(t, managerTurns([]epCall{spawnCall("coder", "x")}), func(epRequest) epAnswer { return epAnswer{Text: "RESULT"} })
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"graph", epFile(t, dir, "g.json", tc.graph), "--task", "t", "--provider", "openai", "--base-url", s.URL(),
				"--run-dir", filepath.Join(dir, "run"), "--json"}
			if tc.directives != "" {
				args = append(args, "--directives", epFile(t, dir, "d.json", tc.directives))
			}
			before := s.count("")
			r := runAgentrtEP(t, args...)
			if r.code == 0 {
				t.Fatalf("exit 0 for an invalid graph\nstdout:\n%s", r.stdout)
			}
			if r.code != 1 && r.code != 2 {
				t.Errorf("exit %d, want 1 (invalid graph) or 2 (usage)", r.code)
			}
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr does not name %q:\n%s", tc.stderr, r.stderr)
			}
			if n := s.count("") - before; n != 0 {
				t.Errorf("%d requests reached the endpoint before the graph was refused", n)
			}
		})
	}
}

// graphRun runs agentrt graph on graph with the scenario's endpoint; extra
// flags follow.
func graphRun(t *testing.T, s *epServer, dir, graph string, extra ...string) epRun {
	t.Helper()
	args := append([]string{"graph", epFile(t, dir, "g.json", graph), "--task", "build a parser", "--provider", "openai",
		"--base-url", s.URL(), "--run-dir", filepath.Join(dir, "run"), "--json"}, extra...)
	return runAgentrtEP(t, args...)
}

// Behaviour 53's cap half: a delegates edge of maxTraversals 1 spends its
// one traversal; the manager's second spawn of the node is refused before
// the worker runs (one worker request), the refusal is ledgered
// unpropagated, and the run without a winner ends in the cap error: exit
// 1, the edge named on stderr, exhaustedEdges and the ledger in --json.
func TestOutsideGraphDelegatesCapExhausted(t *testing.T) {
	dir := t.TempDir()
	graph := gGraph([]string{leadNode, gNode("coder", "m-coder")},
		[]string{`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/v1", "maxTraversals": 1}`},
		`{"maxTokens": 5000, "maxIterations": 6}`)
	s := newEPServer(t,
		managerTurns([]epCall{spawnCall("coder", "first try")}, []epCall{awaitCall}, []epCall{spawnCall("coder", "second try")}),
		answerByModel(map[string]string{"m-coder": "not what was asked"}))
	r := graphRun(t, s, dir, graph, "--expect", "RESULT")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if n := s.count("m-coder"); n != 1 {
		t.Errorf("coder requests %d, want 1: the capped spawn reached the endpoint", n)
	}
	for _, p := range []string{"delegates:lead->coder", "cap"} {
		if !strings.Contains(r.stderr, p) {
			t.Errorf("stderr does not name %q:\n%s", p, r.stderr)
		}
	}
	v := r.json(t)
	if diff := cmp.Diff([]any{"delegates:lead->coder"}, v["exhaustedEdges"]); diff != "" {
		t.Errorf("exhaustedEdges (-want +got):\n%s", diff)
	}
	rows := ledgerRows(v)
	if len(rows) != 2 || rows[0].Outcome != "delivered" || rows[0].Traversal != 1 || rows[1].Outcome != "unpropagated" || rows[1].Traversal != 2 {
		t.Fatalf("ledger %+v, want traversal 1 delivered then traversal 2 unpropagated", rows)
	}
	if b, _ := at(v, "ledger", 1, "bytes").(float64); b != 0 {
		t.Errorf("refused traversal bytes %v, want 0: nothing crossed", b)
	}
	if reason, _ := at(v, "ledger", 1, "reason").(string); !strings.Contains(reason, "cap") {
		t.Errorf("refused traversal reason %q does not name the cap", reason)
	}
	if k := v["kind"]; k != "no-winner" {
		t.Errorf("kind %v, want no-winner", k)
	}
	// The manager was told the second spawn was refused.
	var told string
	for _, q := range s.requests() {
		if q.Manager && q.Steps == 3 && len(q.ToolResults) > 0 {
			told = q.ToolResults[len(q.ToolResults)-1]
		}
	}
	if !strings.Contains(told, "cap") {
		t.Errorf("the manager's refused spawn result %q does not name the cap", told)
	}
}

// §3.7 analyzes with a node analyst: each settle of the analyzed node
// spawns the analyst node's pinned profile (its own model) on the edge's
// directive and the settled output; its output reaches the root as a
// finding, ledgered once on the analyzes edge; the analyst never wins.
func TestOutsideGraphNodeAnalyst(t *testing.T) {
	dir := t.TempDir()
	graph := gGraph([]string{leadNode, gNode("coder", "m-coder"), gNode("critic", "m-critic")},
		[]string{`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/implement/v1"}`,
			`{"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "lead", "directive": "analyze/mine/v1"}`},
		`{"maxTokens": 5000, "maxIterations": 6}`)
	s := newEPServer(t,
		managerTurns([]epCall{spawnCall("coder", "implement the parser")}, []epCall{awaitCall}, []epCall{awaitCall}),
		answerByModel(map[string]string{"m-coder": "RESULT parser with CODER-MARK", "m-critic": "FINDING-MARK: no tests ran"}))
	ids := func(v map[string]any) string {
		if c := workerIDs(v)["coder"]; len(c) == 1 {
			return c[0]
		}
		return fmt.Sprintf("not one coder in %v", workerIDs(v))
	}
	const critique, finding = "CRITIQUE-DIRECTIVE: name every untested path.", "FINDING-MARK: no tests ran"
	r := graphRun(t, s, dir, graph, "--expect", "RESULT", "--directives", epFile(t, dir, "d.json", fmt.Sprintf(`{"analyze/mine/v1": %q}`, critique)))
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if c, a := s.count("m-coder"), s.count("m-critic"); c != 1 || a != 1 {
		t.Errorf("requests coder %d critic %d, want 1 each", c, a)
	}
	told := workerText(t, s, "m-critic")
	for _, p := range []string{"CODER-MARK", critique} {
		if !strings.Contains(told, p) {
			t.Errorf("the critic was not given %q:\n%s", p, told)
		}
	}
	v := r.json(t)
	if out, _ := v["out"].(string); !strings.Contains(out, "CODER-MARK") {
		t.Errorf("winner out %q, want the coder's", out)
	}
	var analyzes []ledgerRow
	for _, row := range ledgerRows(v) {
		if row.Kind == "analyzes" {
			analyzes = append(analyzes, row)
		}
	}
	if len(analyzes) != 1 {
		t.Fatalf("analyzes rows %+v, want one", analyzes)
	}
	// from is the analyzed nodes, workerId the SOURCE worker of a
	// driver-destined finding, continuity steer (a delivery to the live
	// root), bytes the directive's and the findings'.
	want := ledgerRow{Edge: "analyzes:critic:coder->lead", Kind: "analyzes", From: "coder", To: "lead", Directive: "analyze/mine/v1",
		Outcome: "delivered", Continuity: "steer", WorkerID: ids(v), Traversal: 1}
	if diff := cmp.Diff(want, analyzes[0]); diff != "" {
		t.Errorf("analyzes row (-want +got):\n%s", diff)
	}
	for _, x := range asList(v["ledger"]) {
		if at(x, "kind") == "analyzes" {
			if b, _ := at(x, "bytes").(float64); int(b) != len(critique)+len(finding) {
				t.Errorf("analyzes bytes %v, want %d", b, len(critique)+len(finding))
			}
		}
	}
	// The root heard the finding.
	heard := false
	for _, q := range s.requests() {
		if q.Manager && strings.Contains(q.Text, "FINDING-MARK") {
			heard = true
		}
	}
	if !heard {
		t.Errorf("no manager request carried the critic's finding")
	}
}

// --directives adds a directive and replaces a built-in one: the workers
// receive those texts, and the ledger counts their bytes.
func TestOutsideGraphDirectivesFile(t *testing.T) {
	dir := t.TempDir()
	graph := gGraph([]string{leadNode, gNode("coder", "m-coder"), gNode("tester", "m-tester")},
		[]string{`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/zebra/v2"}`,
			`{"kind": "delegates", "from": "lead", "to": "tester", "directive": "delegate/implement/v1"}`},
		`{"maxTokens": 5000, "maxIterations": 6}`)
	const zebra, replaced = "ZEBRA: answer in one line, é included.", "REPLACED implement directive."
	directives := epFile(t, dir, "d.json", fmt.Sprintf(`{"delegate/zebra/v2": %q, "delegate/implement/v1": %q}`, zebra, replaced))
	s := newEPServer(t,
		managerTurns([]epCall{spawnCall("coder", "task one"), spawnCall("tester", "task two")}, []epCall{awaitCall}, []epCall{awaitCall}),
		answerByModel(map[string]string{"m-coder": "RESULT one", "m-tester": "RESULT two"}))
	r := graphRun(t, s, dir, graph, "--expect", "RESULT", "--directives", directives)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	v := r.json(t)
	for i, c := range []struct{ model, directive, task string }{{"m-coder", zebra, "task one"}, {"m-tester", replaced, "task two"}} {
		if got := workerText(t, s, c.model); !strings.HasPrefix(got, c.directive) || !strings.HasSuffix(got, c.task) || strings.Contains(got, "Implement the change") {
			t.Errorf("%s received %q, want its directive %q then its task", c.model, got, c.directive)
		}
		if b, _ := at(v, "ledger", i, "bytes").(float64); int(b) != len(c.directive)+len(c.task) {
			t.Errorf("ledger row %d bytes %v, want %d", i, b, len(c.directive)+len(c.task))
		}
	}
}

// Usage absent from the endpoint: the workers' and the manager's tokens
// are unknown, never 0 — spentTotal.tokens null, tokensKnown false, and
// spendGaps naming each unreported node — while the run still wins.
func TestOutsideGraphUsageAbsent(t *testing.T) {
	dir := t.TempDir()
	graph := gGraph([]string{leadNode, gNode("coder", "m-coder")},
		[]string{`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/v1"}`},
		`{"maxTokens": 5000, "maxIterations": 6}`)
	turns := managerTurns([]epCall{spawnCall("coder", "do it")}, []epCall{awaitCall})
	s := newEPServer(t, func(r epRequest) epAnswer { a := turns(r); a.NoUsage = true; return a },
		func(epRequest) epAnswer { return epAnswer{Text: "RESULT done", NoUsage: true} })
	r := graphRun(t, s, dir, graph, "--expect", "RESULT")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	v := r.json(t)
	if known := at(v, "spentTotal", "tokensKnown"); known != false {
		t.Errorf("spentTotal.tokensKnown %v, want false", known)
	}
	// agentrt's spent.tokens is the measured amount: unknown, null.
	if tok := at(v, "spent", "tokens"); tok != nil {
		t.Errorf("spent.tokens %v, want null (unknown)", tok)
	}
	// The spec's Spend is what was charged: an unreported worker at its
	// reservation (so a positive floor, or null), never a 0 that reads as
	// "nothing spent".
	for _, path := range [][]any{{"spentTotal", "tokens", "total"}, {"spentBreakdown", "childWork", "tokens", "total"}, {"spentBreakdown", "driverInference", "tokens", "total"}} {
		if tok := at(v, path...); tok != nil {
			if n, _ := tok.(float64); n <= 0 {
				t.Errorf("%v = %v with tokens unreported, want null or a positive charge", path, tok)
			}
		}
		known := at(v, append(path[:len(path)-2:len(path)-2], "tokensKnown")...)
		if known != false {
			t.Errorf("%v tokensKnown %v, want false", path[:len(path)-2], known)
		}
	}
	gapped := map[string]bool{}
	for _, g := range asList(v["spendGaps"]) {
		for _, ch := range asList(at(g, "channels")) {
			if ch == "tokens" {
				gapped[fmt.Sprint(at(g, "label"))] = true
			}
		}
	}
	if !gapped["coder"] || !gapped["manager"] {
		t.Errorf("spendGaps with tokens %v, want the coder and the manager; gaps %v", gapped, v["spendGaps"])
	}
}

// A worker endpoint that fails — an HTTP 500, or a 200 whose body is not
// a completion — settles the worker down; the run has no winner (exit 1,
// reason all-children-down) and nothing is reported as delivered.
func TestOutsideGraphWorkerEndpointFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer epAnswer
	}{
		{"status 500", epAnswer{Status: 500}},
		{"garbage body", epAnswer{Garbage: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			graph := gGraph([]string{leadNode, gNode("coder", "m-coder")},
				[]string{`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/v1"}`},
				`{"maxTokens": 5000, "maxIterations": 6}`)
			s := newEPServer(t, managerTurns([]epCall{spawnCall("coder", "do it")}, []epCall{awaitCall}),
				func(epRequest) epAnswer { return tc.answer })
			r := graphRun(t, s, dir, graph, "--expect", "RESULT")
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			v := r.json(t)
			if v["kind"] != "no-winner" || v["reason"] != "all-children-down" {
				t.Errorf("kind %v reason %v, want no-winner all-children-down", v["kind"], v["reason"])
			}
			if d, _ := v["downCount"].(float64); d != 1 {
				t.Errorf("downCount %v, want 1", v["downCount"])
			}
			if at(v, "workers", 0, "delivered") != false {
				t.Errorf("worker %v reported delivered", at(v, "workers", 0))
			}
			t.Logf("coder requests: %d", s.count("m-coder"))
		})
	}
}

// startAgentrtEP starts the built binary against the endpoint without
// waiting; the caller kills or waits for it.
func startAgentrtEP(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(buildAgentrt(t), args...)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-outside-graph")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &out, &errb
}

// journalHas polls the run dir's journal until a record satisfies ok, or
// the deadline passes.
func journalHas(t *testing.T, runDir string, what string, ok func(map[string]any) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	path := filepath.Join(runDir, "spawn-journal.jsonl")
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			for line := range bytes.SplitSeq(b, []byte("\n")) {
				var m map[string]any
				if json.Unmarshal(line, &m) == nil && ok(m) {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the journal never held %s", what)
}

// Behaviour 46 through agentrt graph: the process is SIGKILLed while the
// tester's answer is held at the endpoint, after the coder settled; the
// --resume run replays the coder (no second coder request), runs what was
// in flight, carries the ledger on (one delivered row per edge, traversal
// 1, same worker ids) and ends with the winner an uninterrupted run has:
// the coder's result, same outRef.
func TestOutsideGraphResumeAfterKill(t *testing.T) {
	dir := t.TempDir()
	graph := epFile(t, dir, "g.json", gGraph([]string{leadNode, gNode("coder", "m-coder"), gNode("tester", "m-tester")},
		[]string{`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/implement/v1", "maxTraversals": 1}`,
			`{"kind": "delegates", "from": "lead", "to": "tester", "directive": "delegate/test/v1", "maxTraversals": 1}`},
		`{"maxTokens": 5000, "maxIterations": 6}`))
	hold := make(chan struct{})
	var held sync.Once
	s := newEPServer(t,
		managerTurns([]epCall{spawnCall("coder", "implement the parser"), spawnCall("tester", "test the parser")}, []epCall{awaitCall}, []epCall{awaitCall}),
		func(r epRequest) epAnswer {
			switch r.Model {
			case "m-coder":
				return epAnswer{Text: "RESULT parser implemented"}
			case "m-tester":
				a := epAnswer{Text: "RESULT tests pass"}
				held.Do(func() { a.Hold = hold })
				return a
			}
			return epAnswer{Status: 400}
		})
	rd := filepath.Join(dir, "run")
	common := []string{"--provider", "openai", "--base-url", s.URL(), "--run-dir", rd, "--json", "--expect", "RESULT"}
	cmd, _, _ := startAgentrtEP(t, append([]string{"graph", graph, "--task", "build a parser"}, common...)...)
	journalHas(t, rd, "the coder's settlement", func(m map[string]any) bool {
		return m["kind"] == "settled" && m["state"] == "done" && strings.HasSuffix(fmt.Sprint(m["node"]), ":s1")
	})
	// The tester's request is at the endpoint, held.
	deadline := time.Now().Add(30 * time.Second)
	for s.count("m-tester") == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if s.count("m-tester") == 0 {
		t.Fatal("the tester never reached the endpoint")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(hold)
	coderBefore := s.count("m-coder")

	r := runAgentrtEP(t, append([]string{"graph", graph, "--resume"}, common...)...)
	if r.code != 0 {
		t.Fatalf("resume exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if n := s.count("m-coder"); n != coderBefore || n != 1 {
		t.Errorf("coder requests %d (before the resume %d), want 1: a committed worker ran again", n, coderBefore)
	}
	v := r.json(t)
	if out, _ := v["out"].(string); out != "RESULT parser implemented" {
		t.Errorf("winner out %q, want the coder's result", out)
	}
	ids := workerIDs(v)
	if len(ids["coder"]) != 1 {
		t.Fatalf("coder workers %v, want one", ids["coder"])
	}
	var coderRows, testerRows []ledgerRow
	for _, row := range ledgerRows(v) {
		switch row.To {
		case "coder":
			coderRows = append(coderRows, row)
		case "tester":
			testerRows = append(testerRows, row)
		}
	}
	if len(coderRows) != 1 || coderRows[0].Outcome != "delivered" || coderRows[0].WorkerID != ids["coder"][0] {
		t.Errorf("coder ledger rows %+v, want the one delivered traversal to %s", coderRows, ids["coder"][0])
	}
	if len(testerRows) != 1 || testerRows[0].Traversal != 1 {
		t.Errorf("tester ledger rows %+v, want one traversal", testerRows)
	}
	if e := asList(v["exhaustedEdges"]); len(e) != 0 {
		t.Errorf("exhaustedEdges %v after the resume, want none: the replay spent a cap", e)
	}
	if v["resumed"] != true {
		t.Errorf("resumed %v, want true", v["resumed"])
	}
	// The tester was in flight when the process died: it is either run to
	// its end by the resume or charged at its ceiling as never settled
	// (behaviour 40) — never delivered without an answer.
	for _, w := range asList(v["workers"]) {
		if at(w, "profile") != "tester" || at(w, "state") == "done" {
			continue
		}
		if at(w, "delivered") != false {
			t.Errorf("unsettled tester %v reported delivered", w)
		}
		gap := false
		for _, g := range asList(v["spendGaps"]) {
			gap = gap || (at(g, "id") == at(w, "id") && at(g, "kind") == "never-settled")
		}
		if !gap || at(v, "spentTotal", "tokensKnown") != false {
			t.Errorf("unsettled tester %v is not a never-settled spend gap: %v", at(w, "id"), v["spendGaps"])
		}
	}
}

// A graph budget that runs out mid-run: the pool's one iteration went to
// the first coder, the second spawn is refused budget-exhausted before
// the worker runs (ledgered unpropagated, 0 bytes), and the run ends
// no-winner budget-exhausted — a lifecycle ending, so even with a spent
// delegates cap along the way it is no cap error (exit 1, no cap on
// stderr) — with the pool conserved: the spend is the manager's plus the
// workers', within the budget's iterations.
func TestOutsideGraphBudgetRunsOut(t *testing.T) {
	dir := t.TempDir()
	graph := gGraph([]string{leadNode, gNode("coder", "m-coder"), gNode("tester", "m-tester")},
		[]string{`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/v1", "maxTraversals": 1}`,
			`{"kind": "delegates", "from": "lead", "to": "tester", "directive": "delegate/v1"}`},
		`{"maxTokens": 5000, "maxIterations": 2}`)
	s := newEPServer(t,
		managerTurns([]epCall{spawnCall("coder", "first")}, []epCall{awaitCall},
			[]epCall{spawnCall("coder", "again")}, []epCall{spawnCall("tester", "test")}, []epCall{awaitCall},
			[]epCall{spawnCall("tester", "test again")}),
		answerByModel(map[string]string{"m-coder": "not it", "m-tester": "not it either"}))
	r := graphRun(t, s, dir, graph, "--expect", "RESULT")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	v := r.json(t)
	if v["kind"] != "no-winner" || v["reason"] != "budget-exhausted" {
		t.Errorf("kind %v reason %v, want no-winner budget-exhausted", v["kind"], v["reason"])
	}
	if strings.Contains(strings.ToLower(r.stderr), "cap") {
		t.Errorf("a budget-exhausted run reported as the cap error:\n%s", r.stderr)
	}
	if diff := cmp.Diff([]any{"delegates:lead->coder"}, v["exhaustedEdges"]); diff != "" {
		t.Errorf("exhaustedEdges (-want +got):\n%s", diff)
	}
	if c, tt := s.count("m-coder"), s.count("m-tester"); c != 1 || tt != 1 {
		t.Errorf("worker requests coder %d tester %d, want 1 each", c, tt)
	}
	var outcomes []string
	for _, x := range asList(v["ledger"]) {
		outcomes = append(outcomes, fmt.Sprint(at(x, "to"), " ", at(x, "traversal"), " ", at(x, "outcome"), " ", at(x, "bytes")))
		if at(x, "outcome") == "unpropagated" && at(x, "reason") == nil {
			t.Errorf("unpropagated row %v gives no reason", x)
		}
	}
	want := []string{"coder 1 delivered 206", "coder 2 unpropagated 0", "tester 1 delivered 205", "tester 2 unpropagated 0"}
	for i := range want {
		if i < len(outcomes) {
			// the delivered rows' bytes depend on the built-in directive's
			// length: compare up to the outcome.
			w, g := want[i], outcomes[i]
			if strings.Contains(w, "delivered") {
				w, g = strings.TrimRight(w, "0123456789"), strings.TrimRight(g, "0123456789")
			}
			if w != g {
				t.Errorf("ledger row %d %q, want %q", i, outcomes[i], want[i])
			}
		}
	}
	if len(outcomes) != len(want) {
		t.Errorf("ledger %q, want %d rows", outcomes, len(want))
	}
	if it, _ := at(v, "spentTotal", "iterations").(float64); it != 2 {
		t.Errorf("spentTotal.iterations %v, want 2 (the budget's)", at(v, "spentTotal", "iterations"))
	}
	total, _ := at(v, "spentTotal", "tokens", "total").(float64)
	driver, _ := at(v, "spentBreakdown", "driverInference", "tokens", "total").(float64)
	child, _ := at(v, "spentBreakdown", "childWork", "tokens", "total").(float64)
	if total == 0 || total != driver+child || total > 5000 {
		t.Errorf("tokens: total %v, driver %v + child %v: not conserved within 5000", total, driver, child)
	}
}

// A graph run that traversed no edge still prints its result under
// --json, with an empty ledger: the manager's own endpoint failing (HTTP
// 500 on its first turn) ends the run driver-failed with error{name,
// message}; a manager ending its turn without a spawn ends it without a
// winner. Exit 1 either way, and no worker request.
func TestOutsideGraphNoTraversalJSON(t *testing.T) {
	for _, tc := range []struct {
		name    string
		manager epAnswer
		reason  string
	}{
		{"manager endpoint 500", epAnswer{Status: 500}, "driver-failed"},
		{"manager spawns nothing", epAnswer{Text: "nothing to do"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			graph := gGraph([]string{leadNode, gNode("coder", "m-coder")},
				[]string{`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/v1"}`},
				`{"maxTokens": 5000, "maxIterations": 2}`)
			s := newEPServer(t, func(epRequest) epAnswer { return tc.manager },
				func(epRequest) epAnswer { return epAnswer{Text: "RESULT"} })
			r := graphRun(t, s, dir, graph, "--expect", "RESULT")
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			v := r.json(t)
			if v["kind"] != "no-winner" || (tc.reason != "" && v["reason"] != tc.reason) {
				t.Errorf("kind %v reason %v, want no-winner %s", v["kind"], v["reason"], tc.reason)
			}
			if l, ok := v["ledger"].([]any); !ok || len(l) != 0 {
				t.Errorf("ledger %v, want []", v["ledger"])
			}
			if tc.reason == "driver-failed" {
				if name, msg := at(v, "error", "name"), at(v, "error", "message"); name == nil || name == "" || msg == nil || msg == "" {
					t.Errorf("driver-failed without error{name, message}: %v", v["error"])
				}
			}
			if n := s.count("m-coder"); n != 0 {
				t.Errorf("coder requests %d, want 0", n)
			}
		})
	}
}

// §3.7 analyzes with a built-in lens (failure-triage) run in process on
// --analyst-model at the same endpoint: the coder's settle is analyzed
// once, its findings reach the root, and the row is ledgered on the
// analyzes edge (from the analyzed node, the source worker's id).
func TestOutsideGraphLensAnalyst(t *testing.T) {
	dir := t.TempDir()
	graph := gGraph([]string{leadNode, gNode("coder", "m-coder")},
		[]string{`{"kind": "delegates", "from": "lead", "to": "coder", "directive": "delegate/v1"}`,
			`{"kind": "analyzes", "analyst": "failure-triage", "over": ["coder"], "to": "lead", "directive": "analyze/v1"}`},
		`{"maxTokens": 20000, "maxIterations": 6}`)
	s := newEPServer(t,
		managerTurns([]epCall{spawnCall("coder", "do it")}, []epCall{awaitCall}, []epCall{awaitCall}),
		answerByModel(map[string]string{"m-coder": "RESULT done", "m-analyst": "LENS-MARK: the coder ran no checks"}))
	r := graphRun(t, s, dir, graph, "--expect", "RESULT", "--analyst-model", "m-analyst")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	v := r.json(t)
	if n := s.count("m-analyst"); n == 0 {
		t.Errorf("the lens never asked its model")
	}
	var rows []ledgerRow
	for _, row := range ledgerRows(v) {
		if row.Kind == "analyzes" {
			rows = append(rows, row)
		}
	}
	coder := workerIDs(v)["coder"]
	if len(rows) != 1 || len(coder) != 1 {
		t.Fatalf("analyzes rows %+v for coders %v, want one", rows, coder)
	}
	want := ledgerRow{Edge: "analyzes:failure-triage:coder->lead", Kind: "analyzes", From: "coder", To: "lead", Directive: "analyze/v1",
		Outcome: "delivered", Continuity: "steer", WorkerID: coder[0], Traversal: 1}
	if diff := cmp.Diff(want, rows[0]); diff != "" {
		t.Errorf("analyzes row (-want +got):\n%s", diff)
	}
	heard := false
	for _, q := range s.requests() {
		heard = heard || (q.Manager && strings.Contains(q.Text, "LENS-MARK"))
	}
	if !heard {
		t.Errorf("no manager request carried the lens's finding")
	}
}
