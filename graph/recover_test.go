package graph_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// recoverScript answers the coder, the lens and the reviewer of
// resumeGraph.
const recoverScript = `{"turns": [
  {"match": "ANALYST LENS", "repeat": true, "steps": [{"text": "finding: no test covers the nil session"}, {"usage": {"inputTokens": 3, "outputTokens": 2, "cost": 0.0001}, "mode": "delta"}]},
  {"match": "test_login", "repeat": true, "steps": [{"text": "patch: login fixed."}, {"usage": {"inputTokens": 1, "outputTokens": 1, "cost": 0.001}, "mode": "delta"}]},
  {"match": "Review the login", "repeat": true, "steps": [{"text": "review: nothing risky"}, {"usage": {"inputTokens": 2, "outputTokens": 2, "cost": 0.001}, "mode": "delta"}]}
]}`

// recoveringKernel runs every node through the kernel on one run store,
// so a resumed process can recover what a killed one started, and counts
// executions per profile.
type recoveringKernel struct {
	*supervise.KernelExecutor
	mu   sync.Mutex
	runs map[string]int
}

func newRecoveringKernel(t *testing.T, st store.Store) *recoveringKernel {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(recoverScript), &s); err != nil {
		t.Fatal(err)
	}
	return &recoveringKernel{KernelExecutor: &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: st},
		runs: map[string]int{}}
}

func (e *recoveringKernel) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	e.mu.Lock()
	e.runs[*w.Profile.Name]++
	e.mu.Unlock()
	return e.KernelExecutor.Execute(ctx, w)
}

func (e *recoveringKernel) count(name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs[name]
}

// §3.6 in-doubt recovery under runGraph (RES-03): a graph run dies after
// its coder's kernel run was journaled (execution-bound) and before its
// settlement was. The resumed run recovers the coder from the run store
// — settled, checked, its analyzes lens run over it once — without
// executing it again, runs the reviewer, and the coder wins with no
// worker in doubt and no spend unknown.
func TestGraphRecoversInDoubtCoder(t *testing.T) {
	st := memory.New(nil)
	dir := t.TempDir()
	g, o, err := resumeGraph()
	if err != nil {
		t.Fatal(err)
	}
	o.Supervise.Executor, o.Supervise.RunDir = newRecoveringKernel(t, st), dir
	if _, err := graph.RunGraph(context.Background(), g, o); err != nil {
		t.Fatal(err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindExecutionBound, 1)

	g, o, err = resumeGraph()
	if err != nil {
		t.Fatal(err)
	}
	exec := newRecoveringKernel(t, st)
	o.Supervise.Executor, o.Supervise.RunDir = exec, dir
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if exec.count("coder") != 0 || exec.count("reviewer") != 1 {
		t.Errorf("the resumed process ran coder %d and reviewer %d times; want 0 (recovered) and 1", exec.count("coder"), exec.count("reviewer"))
	}
	if res.Result.Winner == nil || res.Result.Winner.Node != "g:s1" || res.Result.Winner.Text != "patch: login fixed." {
		t.Fatalf("result %+v, want the recovered coder g:s1 as winner", res.Result)
	}
	for _, n := range res.Result.Tree {
		if n.InDoubt {
			t.Errorf("%s left in doubt: %s", n.ID, n.InDoubtReason)
		}
	}
	if !res.Result.Spent.TokensKnown || len(res.Result.SpendGaps) != 0 {
		t.Errorf("spent %+v, gaps %+v: a recovered worker's spend is known", res.Result.Spent, res.Result.SpendGaps)
	}
	lens := 0
	for _, r := range res.Ledger {
		if r.Kind == graph.Analyzes && r.WorkerID == "g:s1" {
			lens++
		}
	}
	if lens != 1 {
		t.Errorf("%d analyzes traversals over the coder, want 1: %+v", lens, res.Ledger)
	}
}
