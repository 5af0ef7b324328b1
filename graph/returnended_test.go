package graph_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// countDrives wraps a graph brain, counting its drives.
func countDrives(b graph.Brain, n *atomic.Int64) graph.Brain {
	return graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		n.Add(1)
		return b.Drive(ctx, d, task)
	})
}

// §3.7 over §3.6 "Persistence & resume", behaviours 46 and 36: a graph
// run resumed with ReturnEnded (forwarded to supervise) after it ended
// — its process killed once the finished record was durable — returns
// the recorded outcome: the same winner and spend, the same edge ledger
// and exhausted edges restored from the journal's edge records, with no
// node, lens or brain run again. The pool the resume replayed is
// conserved: no reservation left open, the committed spend the original
// run's own (free + reserved + committed = the root total, as state.json
// projects it after the resume, equal to the original end's).
func TestResumedEndedGraphReturnsRecordedOutcomeBehaviour46(t *testing.T) {
	ctx := t.Context()
	g, o, dir := passingResumeGraph(t)
	var drives atomic.Int64
	o.Brain = countDrives(o.Brain, &drives)
	o.Supervise.ReturnEnded = true
	want, err := graph.RunGraph(ctx, g, o)
	if err != nil {
		t.Fatal(err)
	}
	if want.Result.Winner == nil || want.Result.Winner.Node != "g:s1" || len(want.Ledger) != 3 || drives.Load() != 1 {
		t.Fatalf("the first run: winner %+v, ledger %+v, %d drives; want the coder g:s1, 3 rows, 1 drive", want.Result.Winner, want.Ledger, drives.Load())
	}
	ended, err := supervise.ReadRunState(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}

	again, err := newResumeExecutor(reviewPasses)
	if err != nil {
		t.Fatal(err)
	}
	o.Supervise.Executor = again
	got, err := graph.RunGraph(ctx, g, o)
	if err != nil {
		t.Fatal(err)
	}
	if n := drives.Load(); n != 1 {
		t.Errorf("the brain was driven %d times over both processes, want 1", n)
	}
	if c, l, r := again.count("coder"), again.count("analyst-failure-triage"), again.count("reviewer"); c+l+r != 0 {
		t.Errorf("the resume ran coder %d, the lens %d, reviewer %d times; want none", c, l, r)
	}
	if !got.Result.Resumed {
		t.Error("the result does not say it was resumed")
	}
	opts := cmp.Options{
		cmpopts.IgnoreFields(supervise.SupervisedResult{}, "Resumed"),
		cmpopts.IgnoreFields(supervise.WorkerSummary{}, "Replayed"),
		cmpopts.EquateEmpty(),
		cmp.Comparer(canonjson.Equal),
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("the ended graph's resume (-ended +resumed):\n%s", diff)
	}

	// Behaviour 36 and §3.6 Result: the recorded spend is the pool's
	// committed spend, the breakdown sums to it, and the projection of
	// the pool (state.json, which the resume leaves as the end wrote it:
	// it changed nothing) has nothing reserved, so free + reserved +
	// committed is the root total with free = total - spent.
	sp, br := got.Result.Spent, got.Result.Breakdown
	if br.DriverInference.Tokens+br.ChildWork.Tokens != sp.Tokens || br.DriverInference.Iterations+br.ChildWork.Iterations != sp.Iterations {
		t.Errorf("breakdown %+v does not sum to spentTotal %+v", br, sp)
	}
	st, err := supervise.ReadRunState(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ended, st); diff != "" {
		t.Errorf("state.json (-at the end +after the resume):\n%s", diff)
	}
	if st.Budget == nil || st.Budget.Tokens == nil || *st.Budget.Tokens != 10_000 {
		t.Fatalf("state.json budget %+v, want the 10000-token root total", st.Budget)
	}
	if st.Reserved == nil || deref(st.Reserved.Tokens) != 0 || deref(st.Reserved.Iterations) != 0 {
		t.Errorf("state.json reserved %+v, want nothing reserved", st.Reserved)
	}
	if st.Spent == nil || st.Spent.Tokens == nil || *st.Spent.Tokens != sp.Tokens || !sp.TokensKnown {
		t.Errorf("state.json spent %+v, want the run's %d tokens, known", st.Spent, sp.Tokens)
	}
	if free := *st.Budget.Tokens - deref(st.Reserved.Tokens) - deref(st.Spent.Tokens); free < 0 {
		t.Errorf("free tokens %d: the run spent past its root total", free)
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
