package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// recoverableRun is killMatrixRun's graph run under a caller's brain,
// its workers on the kernel over the SQLite store at db: a resumed run's
// worker the journal left without a settlement is recovered from its
// kernel run (supervise.KernelExecutor.Recover), not left in doubt.
func recoverableRun(t *testing.T, g graph.Graph, dir, db string) (graph.GraphResult, *recoveringExec, error) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var s scripted.Script
	if err := json.Unmarshal([]byte(killMatrixScript), &s); err != nil {
		t.Fatal(err)
	}
	kexec := &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: st}
	exec := &recoveringExec{countingExec: countingExec{inner: kexec, runs: map[string]int{}}, kernel: kexec}
	o := options(t, exec, nil)
	o.Supervise.Router, o.Supervise.RunDir, o.Supervise.Resume = nil, dir, true
	o.Supervise.PerWorker.MicroUSD = nil
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for i, s := range []struct{ node, task string }{{"coder", "Fix test_login."}, {"reviewer", "Review the login patch."}} {
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: s.node, Task: s.task}); err != nil {
				return supervise.BrainReport{}, err
			}
			for range 2 - i {
				if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 5000}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(ctx, g, o)
	return res, exec, err
}

// recoveringExec is a countingExec that recovers on its kernel
// executor.
type recoveringExec struct {
	countingExec
	kernel *supervise.KernelExecutor
}

func (e *recoveringExec) Recover(ctx context.Context, w supervise.RecoverWork) (supervise.Recovered, error) {
	return e.kernel.Recover(ctx, w)
}

// RES-03 (§3.7, behaviour 46) at the cut the kill matrix cannot reach
// with an executor that cannot recover: an analyst node's findings are
// routed (and their row journaled) from its completion check, before
// its settlement record; a process killed between the two leaves the
// analyst without a settlement. Its kernel run finished, so the resumed
// run recovers it and checks its output again — which must not route
// its findings a second time: one analyzes row per analyst worker.
func TestRecoveredAnalystNodeIsNotRoutedTwiceBehaviour46(t *testing.T) {
	g := withCritic(t, "driver")
	g.Budget.MicroUSD = nil
	tmp := t.TempDir()
	refDir, db := filepath.Join(tmp, "ref"), filepath.Join(tmp, "kernel.db")
	ref, _, err := recoverableRun(t, g, refDir, db)
	if err != nil || ref.Result.Winner == nil {
		t.Fatalf("reference run: %v, %+v", err, ref.Result)
	}
	journal, err := os.ReadFile(filepath.Join(refDir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	// The cut: through the critic's analyzes row, before its settlement.
	var cut [][]byte
	found := false
	for _, l := range bytes.SplitAfter(bytes.TrimSuffix(journal, []byte("\n")), []byte("\n")) {
		cut = append(cut, l)
		var rec struct{ Kind string }
		if err := json.Unmarshal(l, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Kind == supervise.KindEdge && strings.Contains(string(l), `"kind":"analyzes"`) {
			found = true
			break
		}
	}
	if !found {
		t.Fatalf("the reference journal has no analyzes row:\n%s", journal)
	}
	dir := filepath.Join(tmp, "cut")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "blobs"), os.DirFS(filepath.Join(refDir, "blobs"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), bytes.Join(cut, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	res, exec, err := recoverableRun(t, g, dir, db)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if n := exec.count("critic"); n != 0 {
		t.Errorf("the critic ran %d times on resume; its kernel run had finished", n)
	}
	var critics int
	for _, n := range res.Result.Tree {
		if n.Profile == "critic" {
			critics++
		}
	}
	if rows := rowsOfKind(res.Ledger, graph.Analyzes); len(rows) != critics {
		t.Errorf("%d analyzes rows for %d critic workers, want one each: %+v", len(rows), critics, rows)
	}
}

// RES-03 (§3.7, behaviour 46): the kill matrix
// (TestGraphResumesFromEveryJournalCutBehaviour46) with workers the
// resumed run recovers from their finished kernel runs instead of
// leaving them in doubt: at every cut of the reference journal the
// resume wins, runs no settled node again and no node twice, and ledgers
// one delivered delegates row per worker and one analyzes row per
// analyst worker.
func TestGraphResumesEveryCutWithRecoveryBehaviour46(t *testing.T) {
	lens := starGraph(t)
	lens.Edges = append(lens.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "failure-triage", Over: []string{"coder"}, To: "driver", Directive: "analyze/critic/v2"})
	for _, tc := range []struct {
		name    string
		graph   graph.Graph
		analyst string
	}{
		{"analyst node", withCritic(t, "driver"), "critic"},
		{"lens", lens, "analyst-failure-triage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.graph
			g.Budget.MicroUSD = nil
			tmp := t.TempDir()
			refDir, db := filepath.Join(tmp, "ref"), filepath.Join(tmp, "kernel.db")
			ref, _, err := recoverableRun(t, g, refDir, db)
			if err != nil || ref.Result.Winner == nil {
				t.Fatalf("reference run: %v, %+v", err, ref.Result)
			}
			journal, err := os.ReadFile(filepath.Join(refDir, supervise.SpawnJournalFile))
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(bytes.TrimSuffix(journal, []byte("\n")), []byte("\n"))
			for k := range len(lines) + 1 {
				dir := filepath.Join(tmp, "cut", strconv.Itoa(k))
				settled, last := cutRunDir(t, refDir, dir, lines, k)
				where := "cut after " + last
				res, exec, err := recoverableRun(t, g, dir, db)
				if err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				if w := res.Result.Winner; w == nil || w.Text != ref.Result.Winner.Text {
					t.Errorf("%s: winner %+v (%s %s), want the reference's %q", where, w, res.Result.Status, res.Result.Reason, ref.Result.Winner.Text)
				}
				for _, node := range []string{"coder", "reviewer", tc.analyst} {
					if n := exec.count(node); (settled[node] && n != 0) || n > 1 {
						t.Errorf("%s: %s (settled before the cut: %v) ran %d times on resume", where, node, settled[node], n)
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
					if n.Profile == tc.analyst {
						critics++
					} else if delegated[n.ID] != 1 {
						t.Errorf("%s: worker %s (%s) has %d delivered delegates rows, want 1: %v", where, n.ID, n.Profile, delegated[n.ID], ledgerRows(res.Ledger))
					}
				}
				if analysts != critics || critics == 0 {
					t.Errorf("%s: %d analyzes rows for %d analyst workers, want one each: %+v", where, analysts, critics, res.Ledger)
				}
			}
		})
	}
}
