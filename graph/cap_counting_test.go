package graph_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// §3.7 delegates{maxTraversals? (default 32)}: an edge that names no cap
// allows 32 spawns of its node, each a delivered traversal numbered 1…32;
// the 33rd is refused by the cap and ledgered unpropagated with reason
// traversal-cap-exhausted (max 32). The run still has its winner, so the
// exhausted cap is reported in ExhaustedEdges and no error is returned.
func TestDefaultCapIs32Behaviour53(t *testing.T) {
	if graph.DefaultMaxTraversals != 32 {
		t.Fatalf("DefaultMaxTraversals = %d, want 32", graph.DefaultMaxTraversals)
	}
	g := starGraph(t)
	g.Budget = &ledger.Budget{Tokens: i64(1_000_000), Iterations: i64(100), MicroUSD: i64(1_000_000)}
	workers := &inboxWorkers{}
	o := options(t, workers, nil)
	o.Supervise.Router = nil
	var refusal string
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for range graph.DefaultMaxTraversals + 1 {
			res, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "t"})
			var vr *supervise.VerbRefusal
			if errors.As(err, &vr) {
				refusal = vr.Code
				break
			}
			if err != nil {
				return supervise.BrainReport{}, err
			}
			workers.Deliver(ctx, res.WorkerID, "done")
			if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatalf("RunGraph: %v (a run with a winner returns normally)", err)
	}
	if len(res.Ledger) != 33 {
		t.Fatalf("ledger has %d rows, want 32 spawns and one refusal", len(res.Ledger))
	}
	for i, r := range res.Ledger[:32] {
		if r.Traversal != i+1 || r.Outcome != graph.OutcomeDelivered || r.Continuity != graph.ContinuityFresh {
			t.Errorf("row %d = %+v, want traversal %d delivered fresh", i, r, i+1)
		}
	}
	last := res.Ledger[32]
	want := graph.LedgerRow{Edge: "delegates:driver->coder", Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/coder/v1",
		Traversal: 33, Outcome: graph.OutcomeUnpropagated, Continuity: graph.ContinuityFresh, Reason: "traversal-cap-exhausted (max 32)"}
	if diff := cmp.Diff(want, last); diff != "" {
		t.Errorf("the 33rd spawn's row (-want +got):\n%s", diff)
	}
	if refusal != "edge-cap-exhausted" {
		t.Errorf("33rd spawn refusal = %q, want edge-cap-exhausted", refusal)
	}
	if diff := cmp.Diff([]string{"delegates:driver->coder"}, res.ExhaustedEdges); diff != "" {
		t.Errorf("exhausted (-want +got):\n%s", diff)
	}
	if res.Result.Status != supervise.StatusWinner || len(res.Result.Tree) != 32 {
		t.Errorf("result %s with %d workers, want a winner of 32 workers", res.Result.Status, len(res.Result.Tree))
	}
}

// §3.7 "cap is checked at spawn time (steers consume future spawn
// budget)": with a cap of 1, a steer after the one spawn is not refused —
// it is delivered as traversal 2 — and it is the next spawn that the cap
// refuses. Until that refusal the edge is not exhausted; and since the
// run still ends with a winner, the exhausted cap is reported, not
// raised as a *GraphEdgeCapError.
func TestSteerPastTheCapIsDeliveredAndTheNextSpawnRefused(t *testing.T) {
	g := starGraph(t)
	g.Edges[0].MaxTraversals = new(1)
	workers := &inboxWorkers{}
	o := options(t, workers, nil)
	o.Supervise.Router = nil
	var beforeRefusal []string
	var refusal string
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		first, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "build it"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := d.Steer(ctx, supervise.SteerArgs{WorkerID: first.WorkerID, Instruction: "ship it"}); err != nil {
			return supervise.BrainReport{}, err
		}
		beforeRefusal = rowsOf(d.Ledger())
		_, err = d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "again"})
		var vr *supervise.VerbRefusal
		if errors.As(err, &vr) {
			refusal = vr.Code
		}
		_, err = d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
		return supervise.BrainReport{}, err
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatalf("RunGraph: %v (a run with a winner returns normally)", err)
	}
	if diff := cmp.Diff([]string{"1 delivered fresh g:s1", "2 delivered steer g:s1"}, beforeRefusal); diff != "" {
		t.Errorf("ledger before the second spawn (-want +got):\n%s", diff)
	}
	want := []string{"1 delivered fresh g:s1", "2 delivered steer g:s1", "3 unpropagated fresh "}
	if diff := cmp.Diff(want, rowsOf(res.Ledger)); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	if refusal != "edge-cap-exhausted" {
		t.Errorf("second spawn refusal = %q, want edge-cap-exhausted", refusal)
	}
	if diff := cmp.Diff([]string{"delegates:driver->coder"}, res.ExhaustedEdges); diff != "" {
		t.Errorf("exhausted (-want +got):\n%s", diff)
	}
	if w := res.Result.Winner; w == nil || w.Node != "g:s1" || w.Text != "patch per: ship it" {
		t.Errorf("winner = %+v, want g:s1's answer to the steer", w)
	}
}

// §3.7 edge ids and rows of an analyzes edge over several nodes: the id
// is analyzes:<analyst>:<over joined by +>-><to>, each row's from is the
// over list joined by +, each settle of any node it is over is one
// traversal of the one edge (numbered 1, 2 in occurrence order), and a
// driver-destined finding's workerId is the SOURCE worker whose settle
// was analyzed.
func TestAnalyzesEdgeOverTwoNodes(t *testing.T) {
	g := starGraph(t)
	g.Nodes = append(g.Nodes, graph.Node{ID: "critic", Profile: workerProfile(t, "critic")})
	g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "critic", Over: []string{"coder", "reviewer"}, To: "driver", Directive: "analyze/critic/v2"})
	const script = `{"turns": [
  {"match": "Fix the failing test", "steps": [{"text": "patch: login fixed."}, {"usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.001}, "mode": "delta"}]},
  {"match": "say what is risky", "steps": [{"text": "patch is safe."}, {"usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.001}, "mode": "delta"}]},
  {"match": "unsafe changes", "steps": [{"text": "finding: the patch skips a nil check"}, {"usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.001}, "mode": "delta"}]},
  {"match": "unsafe changes", "steps": [{"text": "finding: the patch skips a nil check"}, {"usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.001}, "mode": "delta"}]}
]}`
	o := options(t, kernelWorkers(t, script), nil)
	o.Supervise.Router = nil
	var sources []supervise.NodeID
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for _, spawn := range []supervise.SpawnArgs{{Profile: "coder", Task: "Fix test_login."}, {Profile: "reviewer", Task: "Review it."}} {
			res, err := d.Spawn(ctx, spawn)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			sources = append(sources, res.WorkerID)
			for range 2 { // the settle, then its finding
				if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	const findings = "finding: the patch skips a nil check"
	got := rowsOfKind(res.Ledger, graph.Analyzes)
	var want []graph.LedgerRow
	for i, src := range sources {
		want = append(want, graph.LedgerRow{Edge: "analyzes:critic:coder+reviewer->driver", Kind: graph.Analyzes, From: "coder+reviewer", To: "driver",
			Directive: "analyze/critic/v2", Traversal: i + 1, Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuitySteer,
			Bytes: len(critDirective) + len(findings), WorkerID: src})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("analyzes rows (-want +got):\n%s", diff)
	}
	if slices.Contains(res.ExhaustedEdges, "analyzes:critic:coder+reviewer->driver") {
		t.Errorf("exhausted %v: two traversals of a cap of 32 exhaust nothing", res.ExhaustedEdges)
	}
}
