package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// countingExec runs every worker on inner and counts executions by
// profile.
type countingExec struct {
	inner supervise.Executor
	mu    sync.Mutex
	runs  map[string]int
}

func (e *countingExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	e.mu.Lock()
	e.runs[*w.Profile.Name]++
	e.mu.Unlock()
	return e.inner.Execute(ctx, w)
}

func (e *countingExec) ReportsUsage() bool { return true }

func (e *countingExec) count(profile string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs[profile]
}

// killMatrixScript answers the coder, the reviewer, the critic node and
// a lens.
const killMatrixScript = `{"turns": [
  {"match": "ANALYST LENS", "repeat": true, "steps": [{"text": "finding: no test covers the nil session"}, {"usage": {"inputTokens": 3, "outputTokens": 2}, "mode": "delta"}]},
  {"match": "Fix the failing test", "repeat": true, "steps": [{"text": "patch: login fixed."}, {"usage": {"inputTokens": 100, "outputTokens": 20}, "mode": "delta"}]},
  {"match": "say what is risky", "repeat": true, "steps": [{"text": "patch is safe."}, {"usage": {"inputTokens": 50, "outputTokens": 10}, "mode": "delta"}]},
  {"match": "unsafe changes", "repeat": true, "steps": [{"text": "finding: the patch skips a nil check"}, {"usage": {"inputTokens": 30, "outputTokens": 10}, "mode": "delta"}]}
]}`

// killMatrixRun runs driver → coder (analysed, the findings to the
// driver) → reviewer in dir, resuming what dir holds.
// With router the root is the graph's router brain on a model that
// makes its plan's next call (its conversation journaled turn by turn),
// else a caller's Brain.
func killMatrixRun(t *testing.T, g graph.Graph, dir string, router bool) (graph.GraphResult, *countingExec, error) {
	exec := &countingExec{inner: kernelWorkers(t, killMatrixScript), runs: map[string]int{}}
	o := options(t, exec, nil)
	o.Supervise.Router, o.Supervise.RunDir, o.Supervise.Resume = nil, dir, true
	o.Supervise.PerWorker.MicroUSD = nil
	if router {
		await := call("await", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 5000})
		o.Supervise.Router = &planModel{text: "The coder's patch is in and reviewed.", plan: []contract.ChatEvent{
			call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "Fix test_login."}), await, await,
			call("c2", supervise.VerbSpawnWorker, map[string]any{"profile": "reviewer", "task": "Review the login patch."}), await,
		}}
		res, err := graph.RunGraph(context.Background(), g, o)
		return res, exec, err
	}
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for i, s := range []struct{ node, task string }{{"coder", "Fix test_login."}, {"reviewer", "Review the login patch."}} {
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: s.node, Task: s.task}); err != nil {
				return supervise.BrainReport{}, err
			}
			for range 2 - i { // the coder's settle and the critic's finding; the reviewer's settle
				if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 5000}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	return res, exec, err
}

// RES-03 for runGraph (§3.7 over §3.6 "Persistence & resume", behaviour
// 46), as the reference's graph kill-and-resume conformance matrix, for
// an analyst node and a lens, under a caller's brain and the router
// root whose conversation is journaled: a
// reference run's journal is cut after each of its records in turn —
// what a process killed at that instant leaves of an append-only
// journal (beside the result blobs, written before the records that
// name them) — and a new run resumes each cut. Every resume completes
// with the reference's winner; no node whose settlement the cut holds
// runs again; every worker node runs (across the cut and the resume);
// and the ledger neither loses nor doubles a traversal: one delivered
// delegates row per worker-node worker, one analyzes row per analyst
// worker (an analyst the restart left in doubt is ledgered
// unpropagated, never missing).
func TestGraphResumesFromEveryJournalCutBehaviour46(t *testing.T) {
	lens := starGraph(t)
	lens.Edges = append(lens.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "failure-triage", Over: []string{"coder"}, To: "driver", Directive: "analyze/critic/v2"})
	for _, tc := range []struct {
		name    string
		graph   graph.Graph
		analyst string // the analyst workers' profile
		router  bool
	}{
		{name: "analyst node", graph: withCritic(t, "driver"), analyst: "critic"},
		{name: "lens", graph: lens, analyst: "analyst-failure-triage"},
		{name: "analyst node, router root", graph: withCritic(t, "driver"), analyst: "critic", router: true},
		{name: "lens, router root", graph: lens, analyst: "analyst-failure-triage", router: true},
	} {
		t.Run(tc.name, func(t *testing.T) { resumeEveryCut(t, tc.graph, tc.analyst, tc.router) })
	}
}

func resumeEveryCut(t *testing.T, g graph.Graph, analyst string, router bool) {
	g.Budget.MicroUSD = nil // an in-doubt worker's unmeasured dollars would refuse the rest
	refDir := t.TempDir()
	ref, _, err := killMatrixRun(t, g, refDir, router)
	if err != nil || ref.Result.Winner == nil {
		t.Fatalf("reference run: %v, %+v", err, ref.Result)
	}
	journal, err := os.ReadFile(filepath.Join(refDir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(journal, []byte("\n")), []byte("\n"))
	for k := range len(lines) + 1 {
		dir := t.TempDir()
		settled, last := cutRunDir(t, refDir, dir, lines, k)
		res, exec, err := killMatrixRun(t, g, dir, router)
		where := "cut after " + last
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		// A router root goes on from its journaled conversation: a
		// worker its spawn left in doubt is not spawned again by the
		// plan (a real model would decide), so the run is won by the
		// reviewer then.
		if w := res.Result.Winner; w == nil || (!router && w.Text != ref.Result.Winner.Text) {
			t.Errorf("%s: winner %+v (%s %s), want the reference's %q", where, w, res.Result.Status, res.Result.Reason, ref.Result.Winner.Text)
		}
		for _, node := range []string{"coder", "reviewer"} {
			switch n := exec.count(node); {
			case settled[node] && n != 0:
				t.Errorf("%s: %s settled before the cut and ran %d more times", where, node, n)
			case !settled[node] && (n > 1 || (!router && n != 1)):
				t.Errorf("%s: %s not settled before the cut and ran %d times on resume, want 1", where, node, n)
			}
		}
		delegated, analysts := map[supervise.NodeID]int{}, 0
		for _, r := range res.Ledger {
			switch {
			case r.Kind == graph.Delegates && r.Outcome == graph.OutcomeDelivered:
				delegated[r.WorkerID]++
			case r.Kind == graph.Analyzes:
				analysts++
			}
		}
		critics := 0
		for _, n := range res.Result.Tree {
			switch n.Profile {
			case analyst:
				critics++
			default:
				if delegated[n.ID] != 1 {
					t.Errorf("%s: worker %s (%s) has %d delivered delegates rows, want 1: %v", where, n.ID, n.Profile, delegated[n.ID], ledgerRows(res.Ledger))
				}
			}
		}
		if analysts != critics || (critics == 0 && !router) {
			t.Errorf("%s: %d analyzes rows for %d analyst workers, want one each: %+v", where, analysts, critics, res.Ledger)
		}
	}
}

// cutRunDir writes into dir the blobs of the run dir refDir and the
// first k lines of its journal, and reports what the cut holds: the
// profiles of the workers settled, and the last record ("nothing" for
// none).
func cutRunDir(t *testing.T, refDir, dir string, lines [][]byte, k int) (settled map[string]bool, last string) {
	t.Helper()
	if err := os.CopyFS(filepath.Join(dir, "blobs"), os.DirFS(filepath.Join(refDir, "blobs"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), bytes.Join(lines[:k], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	profileOf := map[string]string{}
	settled, last = map[string]bool{}, "nothing"
	for _, l := range lines[:k] {
		var rec struct{ Kind, Node, Profile string }
		if err := json.Unmarshal(l, &rec); err != nil {
			t.Fatal(err)
		}
		last = rec.Kind + " " + rec.Node
		switch rec.Kind {
		case supervise.KindSpawned:
			profileOf[rec.Node] = rec.Profile
		case supervise.KindSettled:
			settled[profileOf[rec.Node]] = true
		}
	}
	return settled, last
}
