package graph_test

// A second outside pass over §3.7 runGraph through the Go API: the
// ledger's fields row by row, the cap error's ledger against the
// journal's edge records, and define_analyst's §9 bounds under a graph.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// §3.7 ledger rows + behaviour 53: one run with a delivered spawn, a
// stripped steer (bytes = what was sent), an analyst node's findings to
// the driver (workerId = the SOURCE worker, bytes = directive +
// findings) and a cap refusal (continuity of the call, bytes 0); no
// winner, so GraphEdgeCapError, whose ledger is exactly what the run
// journaled as edge records, field for field and in order.
func TestOutside2CapErrorLedgerIsTheJournaledEdgesBehaviour53(t *testing.T) {
	ctx := context.Background()
	g := outsideGraph(t, 2, func(string) bool { return false })
	ex := newOutsideExec()
	ex.block["coder"] = true
	ex.text = func(w supervise.Work) string {
		if *w.Profile.Name == "critic" {
			return "finding: no nil check"
		}
		return "out of coder"
	}
	auth := func(_ context.Context, m graph.Message) (string, error) {
		return strings.ReplaceAll(m.Instruction, " SECRET", ""), nil
	}
	dir := t.TempDir()
	var coder supervise.NodeID
	var refusal error
	brain := graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		s, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "write it"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		coder = s.WorkerID
		if _, err := d.Steer(ctx, supervise.SteerArgs{WorkerID: s.WorkerID, Instruction: "use key SECRET"}); err != nil {
			t.Errorf("Steer: %v", err)
		}
		close(ex.release)
		outsideAwait(ctx, t, d, 2)
		_, refusal = d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "again"})
		return supervise.BrainReport{Text: "gave up"}, nil
	})
	_, err := graph.RunGraph(ctx, g, graph.Options{Task: "t", Brain: brain, AuthorizeMessage: auth,
		Supervise: supervise.Options{Executor: ex, RunDir: dir, RunID: "o2"}})
	if vr := (*supervise.VerbRefusal)(nil); !errors.As(refusal, &vr) || vr.Code != "edge-cap-exhausted" {
		t.Errorf("third traversal of a cap-2 edge: %v, want edge-cap-exhausted", refusal)
	}
	var capErr *graph.GraphEdgeCapError
	if !errors.As(err, &capErr) {
		t.Fatalf("RunGraph: %v, want *GraphEdgeCapError", err)
	}
	del := func(tr int, cont string, out graph.Outcome, bytes int, reason string, w supervise.NodeID) graph.LedgerRow {
		return graph.LedgerRow{Edge: "delegates:driver->coder", Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/v1",
			Traversal: tr, Outcome: out, Continuity: cont, Bytes: bytes, Reason: reason, WorkerID: w}
	}
	directive, _ := graph.BuiltinRegistry().Resolve("delegate/v1")
	critic, _ := graph.BuiltinRegistry().Resolve("analyze/v1")
	want := []graph.LedgerRow{
		del(1, graph.ContinuityFresh, graph.OutcomeDelivered, len(directive)+len("write it"), "", coder),
		del(2, graph.ContinuitySteer, graph.OutcomeStripped, len("use key"), "authorization narrowed 14 composed bytes", coder),
		{Edge: "analyzes:critic:coder->driver", Kind: graph.Analyzes, From: "coder", To: "driver", Directive: "analyze/v1", Traversal: 1,
			Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuitySteer, Bytes: len(critic) + len("finding: no nil check"), WorkerID: coder},
		del(3, graph.ContinuityFresh, graph.OutcomeUnpropagated, 0, "traversal-cap-exhausted (max 2)", ""),
	}
	if diff := cmp.Diff(want, capErr.Ledger); diff != "" {
		t.Errorf("cap error ledger (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(capErr.Ledger, journaledEdgeRows(t, dir)); diff != "" {
		t.Errorf("journaled edge records differ from the cap error's ledger (-ledger +journal):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"delegates:driver->coder"}, capErr.ExhaustedEdges); diff != "" {
		t.Errorf("ExhaustedEdges (-want +got):\n%s", diff)
	}
}

// callTool runs the graph root's tool named verb with args and decodes
// its reply into a generic map.
func callTool(ctx context.Context, t *testing.T, d *graph.Driver, verb string, args any) map[string]any {
	t.Helper()
	ts, err := d.Tools()
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	v, err := canonjson.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range ts {
		if tool.Name != supervise.ToolPrefix+verb {
			continue
		}
		out, err := tool.Run(ctx, v)
		if err != nil {
			return map[string]any{"transportError": err.Error()}
		}
		b := canonjson.Marshal(out)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Fatalf("the root has no tool %s", verb)
	return nil
}

func lensDef(id string) map[string]any {
	return map[string]any{"id": id, "description": "looks for missing nil checks", "area": "safety",
		"question": "Which nil check is missing?", "instructions": "Cite the line.", "toolGroup": "targeted"}
}

// §9 define_analyst under a graph root: each out-of-bounds definition is
// a tool RESULT {error, reason} (never a transport error) that spends
// nothing and journals nothing; a limit past its bound is clamped; an id
// already on the menu is refused duplicate-analyst; at most 8 per
// manager; and the id of an analyst node of the graph is refused, as
// §3.7 refuses an id that is both node and lens as ambiguous (found:
// define_analyst defined a lens "critic" beside the analyst node critic).
func TestOutside2DefineAnalystBoundsUnderAGraph(t *testing.T) {
	ctx := context.Background()
	g := outsideGraph(t, 4, func(string) bool { return true })
	g.Nodes[0].Profile = driverProfile(t, "driver", supervise.VerbSpawnWorker, supervise.VerbAwaitEvent,
		supervise.VerbDefineAnalyst, supervise.VerbListAnalysts, supervise.VerbRunAnalyst)
	ex := newOutsideExec()
	dir := t.TempDir()
	long := func(n int) string { return strings.Repeat("x", n) }
	with := func(id, k string, v any) map[string]any {
		m := lensDef(id)
		m[k] = v
		return m
	}
	refused := []struct {
		name string
		args map[string]any
		code string
	}{
		{"id too short", lensDef("a"), "invalid-definition"},
		{"id upper case", lensDef("Nil-check"), "invalid-definition"},
		{"id of 65", lensDef(long(65)), "invalid-definition"},
		{"description of 301", with("desc", "description", long(301)), "invalid-definition"},
		{"area of 65", with("area", "area", long(65)), "invalid-definition"},
		{"question of 1001", with("quest", "question", long(1001)), "invalid-definition"},
		{"instructions of 20001", with("instr", "instructions", long(20001)), "invalid-definition"},
		{"unknown tool group", with("group", "toolGroup", "shell"), "invalid-definition"},
		{"a builtin lens id", lensDef(supervise.BuiltinLenses()[0].ID), "duplicate-analyst"},
		{"the analyst node's id", lensDef("critic"), "ambiguous-analyst"},
		{"the analyst node's id, padded", lensDef(" critic "), "ambiguous-analyst"},
	}
	got := map[string]map[string]any{}
	var clamped, ninth map[string]any
	var defined []string
	brain := graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		before := d.Readout()
		for _, c := range refused {
			got[c.name] = callTool(ctx, t, d, supervise.VerbDefineAnalyst, c.args)
		}
		if diff := cmp.Diff(before, d.Readout()); diff != "" {
			t.Errorf("refused definitions moved the pool (-before +after):\n%s", diff)
		}
		clamped = callTool(ctx, t, d, supervise.VerbDefineAnalyst, with("clamped", "limits", map[string]any{"maxIterations": 100, "maxToolCalls": 500}))
		defined = append(defined, "clamped")
		for i := 0; len(defined) < supervise.MaxDefinedLenses; i++ {
			id := "lens-" + string(rune('a'+i))
			if r := callTool(ctx, t, d, supervise.VerbDefineAnalyst, lensDef(id)); r["defined"] != true {
				t.Errorf("define_analyst(%s): %v", id, r)
			}
			defined = append(defined, id)
		}
		ninth = callTool(ctx, t, d, supervise.VerbDefineAnalyst, lensDef("one-too-many"))
		return supervise.BrainReport{Text: "done"}, nil
	})
	res, err := graph.RunGraph(ctx, g, graph.Options{Task: "t", Brain: brain, Supervise: supervise.Options{Executor: ex, RunDir: dir, RunID: "o2d"}})
	if err != nil && !errors.As(err, new(*graph.GraphEdgeCapError)) {
		t.Fatalf("RunGraph: %v", err)
	}
	for _, c := range refused {
		r := got[c.name]
		code, _ := r["error"].(string)
		switch {
		case r["transportError"] != nil:
			t.Errorf("%s: a transport error %v, want a tool result", c.name, r["transportError"])
		case code != c.code:
			t.Errorf("%s: %v, want error %s", c.name, r, c.code)
		case r["reason"] == "" || r["reason"] == nil:
			t.Errorf("%s: %v carries no reason", c.name, r)
		}
	}
	if lim, _ := clamped["limits"].(map[string]any); clamped["defined"] != true || lim["maxIterations"] != float64(24) || lim["maxToolCalls"] != float64(96) {
		t.Errorf("a definition past its limits: %v, want accepted clamped to 24 iterations and 96 tool calls", clamped)
	}
	if ninth["error"] != "max-defined-analysts" {
		t.Errorf("a ninth definition: %v, want max-defined-analysts", ninth)
	}
	if len(res.Ledger) != 0 {
		t.Errorf("definitions crossed edges: %+v", res.Ledger)
	}
	journal, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(journal), `"kind":"`+supervise.KindAnalystDefined+`"`); n != len(defined) {
		t.Errorf("journal holds %d definitions, want the %d accepted", n, len(defined))
	}
}

// steerWaitExec runs the coder until its first steer (when wait is set;
// a resumed process's coder does not wait) and answers the critic with
// a finding.
type steerWaitExec struct {
	wait bool
	mu   sync.Mutex
	runs map[string]int
}

func (e *steerWaitExec) ReadsInbox() bool   { return true }
func (e *steerWaitExec) ReportsUsage() bool { return true }

func (e *steerWaitExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	name := *w.Profile.Name
	e.mu.Lock()
	e.runs[name]++
	e.mu.Unlock()
	spent := ledgerSpend(1)
	if name == "critic" {
		return supervise.WorkResult{Text: "finding: no nil check", Spent: spent}, nil
	}
	if e.wait && w.Inbox != nil {
		select {
		case <-w.Inbox.Waiting():
		case <-ctx.Done():
			return supervise.WorkResult{Spent: spent}, ctx.Err()
		}
	}
	if w.Inbox != nil {
		w.Inbox.TakeOrSeal(ctx)
	}
	return supervise.WorkResult{Text: "out of coder", Spent: spent}, nil
}

// killCutRun runs the capped graph of TestOutside2ResumedCapRunKeepsItsLedger
// in dir under the router root (its conversation journaled), resuming
// what dir holds.
func killCutRun(t *testing.T, dir string, wait bool) ([]graph.LedgerRow, *steerWaitExec, error) {
	g := outsideGraph(t, 2, func(string) bool { return false })
	g.Nodes[0].Profile = driverProfile(t, "driver", supervise.VerbSpawnWorker, supervise.VerbSteerAgent, supervise.VerbAwaitEvent)
	ex := &steerWaitExec{wait: wait, runs: map[string]int{}}
	await := call("await", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 5000})
	model := &planModel{text: "The coder never passed.", plan: []contract.ChatEvent{
		call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "write it"}),
		call("c2", supervise.VerbSteerAgent, map[string]any{"workerId": "o2k:s1", "instruction": "use key SECRET"}),
		await, await,
		call("c3", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "again"}),
	}}
	auth := func(_ context.Context, m graph.Message) (string, error) {
		return strings.ReplaceAll(m.Instruction, " SECRET", ""), nil
	}
	res, err := graph.RunGraph(context.Background(), g, graph.Options{Task: "t", AuthorizeMessage: auth,
		Supervise: supervise.Options{Executor: ex, Router: model, RunDir: dir, RunID: "o2k", Resume: true}})
	var capErr *graph.GraphEdgeCapError
	if errors.As(err, &capErr) {
		if diff := cmp.Diff(capErr.Ledger, res.Ledger); diff != "" {
			t.Errorf("cap error ledger differs from the result's (-error +result):\n%s", diff)
		}
		return capErr.Ledger, ex, nil
	}
	if err == nil {
		err = errors.New("no GraphEdgeCapError")
	}
	return res.Ledger, ex, err
}

// RES-03 / behaviour 46 over §3.7, where kill_matrix_test does not reach:
// one run holding an analyst node's finding, a stripped steer and a cap
// refusal ends in GraphEdgeCapError; its journal is cut after each
// record in turn and a new process resumes each cut. Every resume ends
// in the cap error again, whose ledger is the resumed journal's edge
// records; the rows the cut held come back unchanged at the head of
// it; no traversal is doubled (each edge's traversals are 1..n, one
// cap refusal); and a cut holding every edge record of the reference
// gives the reference's ledger exactly.
func TestOutside2ResumedCapRunKeepsItsLedgerBehaviour46(t *testing.T) {
	refDir := t.TempDir()
	ref, _, err := killCutRun(t, refDir, true)
	if err != nil {
		t.Fatalf("reference run: %v", err)
	}
	kinds := []string{}
	for _, r := range ref {
		kinds = append(kinds, string(r.Kind)+":"+string(r.Outcome))
	}
	if want := "delegates:delivered,delegates:stripped,analyzes:delivered,delegates:unpropagated"; strings.Join(kinds, ",") != want {
		t.Fatalf("reference ledger %v, want %s", kinds, want)
	}
	journal, err := os.ReadFile(filepath.Join(refDir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(journal, []byte("\n")), []byte("\n"))
	for k := range len(lines) + 1 {
		dir := t.TempDir()
		_, last := cutRunDir(t, refDir, dir, lines, k)
		where := "cut after " + last + " (" + strconv.Itoa(k) + ")"
		held := journaledEdgeRows(t, dir)
		got, ex, err := killCutRun(t, dir, false)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		if diff := cmp.Diff(got, journaledEdgeRows(t, dir)); diff != "" {
			t.Errorf("%s: ledger differs from the journaled edge records (-ledger +journal):\n%s", where, diff)
		}
		if len(got) < len(held) || (len(held) > 0 && !cmp.Equal(held, got[:len(held)])) {
			t.Errorf("%s: the cut's rows %+v are not the head of the resumed ledger %+v", where, held, got)
		}
		next, refusals := map[string]int{}, 0
		for _, r := range got {
			next[r.Edge]++
			if r.Traversal != next[r.Edge] {
				t.Errorf("%s: %s traversal %d, want %d: %+v", where, r.Edge, r.Traversal, next[r.Edge], got)
			}
			if strings.HasPrefix(r.Reason, "traversal-cap-exhausted") {
				refusals++
			}
		}
		if refusals != 1 {
			t.Errorf("%s: %d cap refusals, want 1: %+v", where, refusals, got)
		}
		if len(held) == len(ref) {
			if diff := cmp.Diff(ref, got); diff != "" {
				t.Errorf("%s: ledger (-reference +resumed):\n%s", where, diff)
			}
		}
		if n := ex.runs["coder"]; n > 1 {
			t.Errorf("%s: coder ran %d times on resume", where, n)
		}
	}
}
