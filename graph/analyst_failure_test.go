package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// §3.7 "the ledger never lies by omission": an analyst node spawned on a
// settle spends a traversal of its analyzes edge; when that analyst run
// fails it routes no findings, and its traversal is still a ledger row —
// unpropagated, naming the failed analyst worker, the SOURCE worker as
// the workerId of a driver-destined edge — never missing while the cap
// counts it.
func TestFailedAnalystNodeIsLedgeredUnpropagated(t *testing.T) {
	const coderOnly = `{"turns": [
  {"match": "Fix the failing test", "steps": [{"text": "patch: login fixed."}, {"usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.001}, "mode": "delta"}]}
]}`
	g := withCritic(t, "driver")
	o := options(t, kernelWorkers(t, coderOnly), nil)
	o.Supervise.Router = nil
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
			return supervise.BrainReport{}, err
		}
		for range 2 { // the coder's settle, then the critic's
			if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := rowsOfKind(res.Ledger, graph.Analyzes)
	if len(rows) != 1 {
		t.Fatalf("analyzes rows = %+v, want the failed analyst's one traversal", rows)
	}
	got := rows[0]
	if got.Outcome != graph.OutcomeUnpropagated || got.Traversal != 1 || got.WorkerID != "g:s1" || got.Bytes != 0 ||
		!strings.Contains(got.Reason, "analyst worker g:s2 failed") {
		t.Errorf("row = %+v, want traversal 1 unpropagated from source g:s1, 0 bytes, reason naming the failed analyst g:s2", got)
	}
}

// The same for a registry lens: a lens run that fails returned no
// findings because it failed, not because it found nothing — it is
// ledgered unpropagated naming the failed analyst worker, never empty.
func TestFailedLensIsLedgeredUnpropagatedNotEmpty(t *testing.T) {
	const coderOnly = `{"turns": [
  {"match": "test_login", "repeat": true, "steps": [{"text": "patch: login fixed."}, {"usage": {"inputTokens": 1, "outputTokens": 1, "cost": 0.001}, "mode": "delta"}]}
]}`
	o := options(t, kernelWorkers(t, coderOnly), nil)
	o.Supervise.Router = nil
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
			return supervise.BrainReport{}, err
		}
		for range 2 { // the coder's settle, then the lens's
			if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), withLens(t), o)
	if err != nil {
		t.Fatal(err)
	}
	rows := rowsOfKind(res.Ledger, graph.Analyzes)
	if len(rows) != 1 {
		t.Fatalf("analyzes rows = %+v, want the failed lens's one traversal", rows)
	}
	got := rows[0]
	if got.Outcome != graph.OutcomeUnpropagated || got.Traversal != 1 || got.WorkerID != "g:s1" || got.Bytes != 0 ||
		!strings.Contains(got.Reason, "analyst worker g:s2 failed") {
		t.Errorf("row = %+v, want traversal 1 unpropagated from source g:s1, 0 bytes, reason naming the failed lens worker g:s2", got)
	}
}
