package graph_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// withCritic adds the analyst node critic over coder, its findings to
// the given node.
func withCritic(t *testing.T, to string) graph.Graph {
	g := starGraph(t)
	g.Nodes = append(g.Nodes, graph.Node{ID: "critic", Profile: workerProfile(t, "critic")})
	g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "critic", Over: []string{"coder"}, To: to, Directive: "analyze/critic/v2"})
	return g
}

// §3.7 analyzes edges with an analyst NODE: each settle of a node it is
// over spawns the analyst's pinned profile; its output is findings,
// delivered to the root as a finding event (ledgered with the SOURCE
// worker), never a deliverable even when it would pass the check; and
// the driver can never spawn the analyst itself (oracle doctrine).
func TestAnalystNodeFindingsReachTheRoot(t *testing.T) {
	const findings = "finding: the patch skips a nil check"
	var kinds []string
	var refusal *supervise.VerbRefusal
	o := options(t, kernelWorkers(t, workerScript), nil)
	o.Supervise.Router = nil
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
			return supervise.BrainReport{}, err
		}
		for range 2 {
			ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
			if err != nil || ev.Event == nil {
				return supervise.BrainReport{}, errors.Join(err, errors.New("no event"))
			}
			kinds = append(kinds, ev.Event.Kind+" "+string(ev.Event.WorkerID)+" "+ev.Event.Output)
		}
		_, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "critic", Task: "review everything"})
		errors.As(err, &refusal)
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), withCritic(t, "driver"), o)
	if err != nil {
		t.Fatal(err)
	}
	want := []graph.LedgerRow{
		{Edge: "delegates:driver->coder", Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/coder/v1", Traversal: 1,
			Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuityFresh, Bytes: len(coderDirective) + len("Fix test_login."), WorkerID: "g:s1"},
		{Edge: "analyzes:critic:coder->driver", Kind: graph.Analyzes, From: "coder", To: "driver", Directive: "analyze/critic/v2", Traversal: 1,
			Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuitySteer, Bytes: len(critDirective) + len(findings), WorkerID: "g:s1"},
	}
	if diff := cmp.Diff(want, res.Ledger); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	wantKinds := []string{"settled g:s1 patch: login fixed.", "finding g:s2 " + findings}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("await events (-want +got):\n%s", diff)
	}
	if refusal == nil || refusal.Code != "not-a-worker-node" {
		t.Errorf("spawning the analyst: refusal %+v, want not-a-worker-node", refusal)
	}
	if w := res.Result.Winner; w == nil || w.Node != "g:s1" {
		t.Errorf("winner = %+v, want the coder: findings are never delivered", w)
	}
	for _, n := range res.Result.Tree {
		if n.ID == "g:s2" && (n.Profile != "critic" || n.Delivered) {
			t.Errorf("analyst worker %+v: want critic, not delivered", n)
		}
	}
}

// An analyzes edge over its cap is ledgered unpropagated and spawns no
// analyst: observable, never a refusal of the run.
func TestAnalyzesCapLedgersUnpropagated(t *testing.T) {
	g := withCritic(t, "driver")
	g.Edges[2].MaxTraversals = new(1)
	const twoCoders = `{"turns": [
  {"match": "test_login", "steps": [{"text": "patch: login fixed."}, {"usage": {"inputTokens": 1, "outputTokens": 1, "cost": 0.001}, "mode": "delta"}]},
  {"match": "test_logout", "steps": [{"text": "patch: logout fixed."}, {"usage": {"inputTokens": 1, "outputTokens": 1, "cost": 0.001}, "mode": "delta"}]},
  {"match": "unsafe changes", "steps": [{"text": "finding: fine"}, {"usage": {"inputTokens": 1, "outputTokens": 1, "cost": 0.001}, "mode": "delta"}]}
]}`
	o := options(t, kernelWorkers(t, twoCoders), nil)
	o.Supervise.Router = nil
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for _, task := range []string{"Fix test_login.", "Fix test_logout."} {
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: task, Label: task[4:14]}); err != nil {
				return supervise.BrainReport{}, err
			}
			for range 2 {
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
	var outcomes []string
	for _, r := range res.Ledger {
		if r.Kind == graph.Analyzes {
			outcomes = append(outcomes, string(r.Outcome)+" "+r.Reason)
		}
	}
	want := []string{"delivered ", "unpropagated traversal-cap-exhausted (max 1)"}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("analyzes rows (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"analyzes:critic:coder->driver"}, res.ExhaustedEdges); diff != "" {
		t.Errorf("exhausted (-want +got):\n%s", diff)
	}
	if n := len(res.Result.Tree); n != 3 {
		t.Errorf("tree has %d workers, want 3 (two coders, one analyst)", n)
	}
}

// Findings destined for a worker node are steered into its live worker
// (ledgered with the destination), or unpropagated when none is live.
// An analyst node's directive opened the analyst's own task, so what is
// steered into the destination is the bare findings (as the reference's
// runGraph: "the directive was the analyst's task"), never the analyst's
// instructions: the live worker is not told to act as the analyst.
func TestAnalystFindingsRoutedToAWorkerNode(t *testing.T) {
	g := withCritic(t, "reviewer")
	workers := &recordingWorkers{}
	o := options(t, workers, nil)
	o.Supervise.Router = nil
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for _, n := range []string{"reviewer", "coder"} {
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: n, Task: "go"}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		// The coder finishes; the critic runs over it, and finishes.
		workers.Deliver(ctx, "g:s2", "login fixed")
		workers.Deliver(ctx, "g:s3", "the patch skips a nil check")
		for range 3 {
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
	last := res.Ledger[len(res.Ledger)-1]
	findings := "patch per: the patch skips a nil check"
	want := graph.LedgerRow{Edge: "analyzes:critic:coder->reviewer", Kind: graph.Analyzes, From: "coder", To: "reviewer", Directive: "analyze/critic/v2",
		Traversal: 1, Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuitySteer, Bytes: len(findings), WorkerID: "g:s1"}
	if diff := cmp.Diff(want, last); diff != "" {
		t.Errorf("routed row (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{findings}, workers.delivered("g:s1")); diff != "" {
		t.Errorf("steered into the reviewer (-want +got):\n%s", diff)
	}
}

// recordingWorkers are inboxWorkers that keep every message delivered,
// by worker.
type recordingWorkers struct {
	inboxWorkers
	mu   sync.Mutex
	msgs map[supervise.NodeID][]string
}

func (w *recordingWorkers) Deliver(ctx context.Context, node supervise.NodeID, msg string) bool {
	w.mu.Lock()
	if w.msgs == nil {
		w.msgs = map[supervise.NodeID][]string{}
	}
	w.msgs[node] = append(w.msgs[node], msg)
	w.mu.Unlock()
	return w.inboxWorkers.Deliver(ctx, node, msg)
}

func (w *recordingWorkers) delivered(node supervise.NodeID) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs[node])
}

// §3.7 edge ledger: a traversal across which nothing crossed is ledgered
// `empty`, never `delivered`: an analyst that returned no findings, to
// the root (ledgered with the source worker) and to a worker node
// (ledgered with the live destination, nothing steered into it). The
// reason is worded as the reference runGraph words it.
func TestAnalystWithNoFindingsLedgersEmpty(t *testing.T) {
	const silentCritic = `{"turns": [
  {"match": "Fix the failing test", "steps": [{"text": "patch: login fixed."}, {"usage": {"inputTokens": 100, "outputTokens": 20, "cost": 0.002}, "mode": "delta"}]},
  {"match": "unsafe changes", "steps": [{"usage": {"inputTokens": 30, "outputTokens": 0, "cost": 0.001}, "mode": "delta"}]}
]}`
	for _, tc := range []struct {
		name, to string
		spawn    []string
		wantRow  graph.LedgerRow
	}{
		{name: "to the root", to: "driver", spawn: []string{"coder"},
			wantRow: graph.LedgerRow{Edge: "analyzes:critic:coder->driver", Kind: graph.Analyzes, From: "coder", To: "driver", Directive: "analyze/critic/v2",
				Traversal: 1, Outcome: graph.OutcomeEmpty, Continuity: graph.ContinuitySteer, Bytes: len(critDirective), WorkerID: "g:s1",
				Reason: "analyst returned no findings"}}, // the reference runGraph's wording
		{name: "to a worker node", to: "reviewer", spawn: []string{"reviewer", "coder"},
			wantRow: graph.LedgerRow{Edge: "analyzes:critic:coder->reviewer", Kind: graph.Analyzes, From: "coder", To: "reviewer", Directive: "analyze/critic/v2",
				Traversal: 1, Outcome: graph.OutcomeEmpty, Continuity: graph.ContinuitySteer, WorkerID: "g:s1",
				Reason: "analyst returned no findings"}}, // the reference runGraph's wording
	} {
		t.Run(tc.name, func(t *testing.T) {
			var exec supervise.Executor = kernelWorkers(t, silentCritic)
			workers := &inboxWorkers{}
			if tc.to != "driver" {
				exec = silentOn{workers, "g:s3"}
			}
			o := options(t, exec, nil)
			o.Supervise.Router = nil
			o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
				for _, n := range tc.spawn {
					if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: n, Task: "Fix test_login."}); err != nil {
						return supervise.BrainReport{}, err
					}
				}
				events := 2 // the coder settles, then the critic over it
				if tc.to != "driver" {
					workers.Deliver(ctx, "g:s2", "login fixed")
				}
				for range events {
					if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil {
						return supervise.BrainReport{}, err
					}
				}
				return supervise.BrainReport{}, nil
			})
			res, err := graph.RunGraph(context.Background(), withCritic(t, tc.to), o)
			if err != nil {
				t.Fatal(err)
			}
			got := rowsOfKind(res.Ledger, graph.Analyzes)
			if diff := cmp.Diff([]graph.LedgerRow{tc.wantRow}, got); diff != "" {
				t.Errorf("analyzes rows (-want +got):\n%s", diff)
			}
		})
	}
}

// silentOn is inboxWorkers whose worker node answers at once with no
// text: an analyst without findings.
type silentOn struct {
	*inboxWorkers
	node supervise.NodeID
}

func (s silentOn) Execute(ctx context.Context, work supervise.Work) (supervise.WorkResult, error) {
	if work.Node != s.node {
		return s.inboxWorkers.Execute(ctx, work)
	}
	one, tokens := int64(1), int64(10)
	return supervise.WorkResult{Spent: ledger.Spend{Tokens: &tokens, Iterations: &one, MicroUSD: i64(0)}}, nil
}
