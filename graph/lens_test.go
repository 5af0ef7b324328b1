package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// lensScript answers analyst tasks with findings and coder tasks with
// patches, each with exact usage.
const lensScript = `{"turns": [
  {"match": "ANALYST LENS", "repeat": true, "steps": [{"text": "finding: no test covers the nil session"}, {"usage": {"inputTokens": 3, "outputTokens": 2, "cost": 0.0001}, "mode": "delta"}]},
  {"match": "test_login", "repeat": true, "steps": [{"text": "patch: login fixed."}, {"usage": {"inputTokens": 1, "outputTokens": 1, "cost": 0.001}, "mode": "delta"}]},
  {"match": "test_logout", "repeat": true, "steps": [{"text": "patch: logout fixed."}, {"usage": {"inputTokens": 1, "outputTokens": 1, "cost": 0.001}, "mode": "delta"}]}
]}`

const lensFindings = "finding: no test covers the nil session"

// withLens adds an analyzes edge whose analyst is the built-in registry
// lens failure-triage, over coder, its findings to the driver.
func withLens(t *testing.T) graph.Graph {
	g := starGraph(t)
	g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "failure-triage", Over: []string{"coder"}, To: "driver", Directive: "analyze/critic/v2"})
	return g
}

// §3.7 analyzes edges with a registry LENS analyst: each settle of a
// node the edge is over runs the lens (supervise's run_analyst, charged
// to the one pool); its findings travel the edge (the directive opens
// them) to the root as a finding event, ledgered delivered with the
// SOURCE worker; findings are never the deliverable.
func TestLensAnalyzesEdgeRunsTheRegistryLens(t *testing.T) {
	var events []string
	o := options(t, kernelWorkers(t, lensScript), nil)
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
			return supervise.BrainReport{}, err
		}
		for range 2 {
			ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if ev.Event == nil {
				t.Errorf("await: %+v", ev)
				break
			}
			events = append(events, ev.Event.Kind+" "+string(ev.Event.WorkerID)+" "+ev.Event.Lens+" "+ev.Event.Output)
		}
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), withLens(t), o)
	if err != nil {
		t.Fatal(err)
	}
	want := []graph.LedgerRow{
		{Edge: "delegates:driver->coder", Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/coder/v1", Traversal: 1,
			Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuityFresh, Bytes: len(coderDirective) + len("Fix test_login."), WorkerID: "g:s1"},
		{Edge: "analyzes:failure-triage:coder->driver", Kind: graph.Analyzes, From: "coder", To: "driver", Directive: "analyze/critic/v2", Traversal: 1,
			Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuitySteer, Bytes: len(critDirective) + len(lensFindings), WorkerID: "g:s1"},
	}
	if diff := cmp.Diff(want, res.Ledger); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	wantEvents := []string{"settled g:s1  patch: login fixed.", "finding g:s2 failure-triage " + lensFindings}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("await events (-want +got):\n%s", diff)
	}
	if w := res.Result.Winner; w == nil || w.Node != "g:s1" {
		t.Errorf("winner %+v, want the coder", w)
	}
	if n := len(res.Result.Tree); n != 2 || res.Result.Tree[1].Profile != "analyst-failure-triage" || res.Result.Tree[1].Delivered {
		t.Errorf("tree %+v", res.Result.Tree)
	}
	// The lens ran on the pool: coder 2 tokens + analyst 5.
	if s := res.Result.Breakdown.ChildWork; s.Tokens != 7 || !s.TokensKnown {
		t.Errorf("child work %+v", s)
	}
}

// A lens analyzes edge over its cap is ledgered unpropagated, never
// refused: the second coder's settle runs no analyst.
func TestLensAnalyzesEdgeCapLedgersUnpropagated(t *testing.T) {
	g := withLens(t)
	g.Edges[2].MaxTraversals = new(1)
	o := options(t, kernelWorkers(t, lensScript), nil)
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for i, task := range []string{"Fix test_login.", "Fix test_logout."} {
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: task, Label: task[4:14]}); err != nil {
				return supervise.BrainReport{}, err
			}
			for range 2 - i { // the second settle has no finding
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
	if diff := cmp.Diff([]string{"delivered ", "unpropagated traversal-cap-exhausted (max 1)"}, outcomes); diff != "" {
		t.Errorf("analyzes rows (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"analyzes:failure-triage:coder->driver"}, res.ExhaustedEdges); diff != "" {
		t.Errorf("exhausted (-want +got):\n%s", diff)
	}
}

// A caller lens (Supervise.Analysts) is on the registry an analyzes
// edge reads; an unknown id is refused before anything is spent.
func TestAnalyzesEdgeNamesACallerLens(t *testing.T) {
	g := starGraph(t)
	g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "perf-review", Over: []string{"coder"}, To: "driver", Directive: "analyze/critic/v2"})
	o := options(t, kernelWorkers(t, lensScript), router())
	var ve *graph.ValidationError
	if err := graph.Validate(g, o); !errors.As(err, &ve) || ve.Path != "edges[2].analyst" {
		t.Fatalf("an unknown lens: %v", err)
	}
	var lens supervise.Lens
	doc := `{"id": "perf-review", "description": "d", "area": "performance", "question": "Is it slow?", "instructions": "Look for quadratic loops.", "toolGroup": "targeted"}`
	if err := json.Unmarshal([]byte(doc), &lens); err != nil {
		t.Fatal(err)
	}
	o.Supervise.Analysts = []supervise.Lens{lens}
	if err := graph.Validate(g, o); err != nil {
		t.Fatalf("a caller lens: %v", err)
	}
}

// byProfile runs the workers of the named profiles on live, the rest on
// rest.
type byProfile struct {
	live  *recordingWorkers
	names map[string]bool
	rest  supervise.Executor
}

func (b byProfile) Execute(ctx context.Context, work supervise.Work) (supervise.WorkResult, error) {
	if work.Profile != nil && work.Profile.Name != nil && b.names[*work.Profile.Name] {
		return b.live.Execute(ctx, work)
	}
	return b.rest.Execute(ctx, work)
}

func (b byProfile) Deliver(ctx context.Context, node supervise.NodeID, msg string) bool {
	return b.live.Deliver(ctx, node, msg)
}

func (byProfile) ReportsUsage() bool { return true }

// §3.7 analyzes edges: a registry lens's findings destined for a worker
// node reach its live worker as a steer opened by the edge's directive
// (the reference's "routes findings to a live WORKER as an authorized
// steer"), ledgered delivered with the DESTINATION worker and the bytes
// that crossed.
func TestLensFindingsRoutedToALiveWorkerNode(t *testing.T) {
	g := starGraph(t)
	g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "failure-triage", Over: []string{"coder"}, To: "reviewer", Directive: "analyze/critic/v2"})
	live := &recordingWorkers{}
	o := options(t, byProfile{live: live, names: map[string]bool{"reviewer": true}, rest: kernelWorkers(t, lensScript)}, nil)
	o.Supervise.Router = nil
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for _, n := range []string{"reviewer", "coder"} {
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: n, Task: "Fix test_login."}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		// The coder settles, the lens runs over it, its findings release
		// the reviewer, which settles.
		for range 4 {
			ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if ev.Event != nil && ev.Event.Kind == "settled" && ev.Event.WorkerID == "g:s1" {
				break
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	got := rowsOfKind(res.Ledger, graph.Analyzes)
	steered := critDirective + "\n\n" + lensFindings
	want := []graph.LedgerRow{{Edge: "analyzes:failure-triage:coder->reviewer", Kind: graph.Analyzes, From: "coder", To: "reviewer",
		Directive: "analyze/critic/v2", Traversal: 1, Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuitySteer,
		Bytes: len(steered), WorkerID: "g:s1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("analyzes rows (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{steered}, live.delivered("g:s1")); diff != "" {
		t.Errorf("steered into the reviewer (-want +got):\n%s", diff)
	}
	i := slices.IndexFunc(res.Result.Tree, func(n supervise.WorkerSummary) bool { return n.ID == "g:s1" })
	if i < 0 || res.Result.Tree[i].State != supervise.StateDone {
		t.Errorf("reviewer g:s1 in %+v: want done, released by the findings", res.Result.Tree)
	}
}
