package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// §3.7 / behaviour 53 (GRAPH-CAP): a lens an analyzes edge names runs
// along that edge only, within its cap. A root that declares run_analyst
// and runs that lens itself — here over the coder whose settle the
// edge's spent cap left unanalysed — would have its finding routed along
// the edge as one more delivered traversal, past maxTraversals (and a
// run over a node outside the edge's over would be ledgered on the edge
// too). The root's run_analyst of such a lens is refused; nothing runs.
func TestRootRunAnalystOfAnEdgesLensIsRefusedBehaviour53(t *testing.T) {
	g := withLens(t)
	g.Nodes[0].Profile = driverProfile(t, "driver", supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbRunAnalyst)
	g.Edges[2].MaxTraversals = new(1)
	o := options(t, kernelWorkers(t, lensScript), nil)
	var reply string
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		var second supervise.NodeID
		for i, task := range []string{"Fix test_login.", "Fix test_logout."} {
			res, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: task, Label: task[4:14]})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			second = res.WorkerID
			for range 2 - i { // the second settle's lens is over the cap
				if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
		}
		tools, err := d.Tools()
		if err != nil {
			return supervise.BrainReport{}, err
		}
		for _, tl := range tools {
			if tl.Name != supervise.ToolPrefix+supervise.VerbRunAnalyst {
				continue
			}
			args, err := canonjson.ToValue(supervise.RunAnalystArgs{Kind: "failure-triage", WorkerID: second})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			v, err := tl.Run(ctx, args)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			reply = string(canonjson.Marshal(v))
		}
		// Whatever it started settles before the run ends.
		for {
			ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
			if err != nil || ev.Idle || ev.Event == nil {
				return supervise.BrainReport{}, err
			}
		}
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply, `"error"`) || !strings.Contains(reply, "analyzes:failure-triage:coder->driver") {
		t.Errorf("run_analyst replied %s, want a refusal naming the edge that runs the lens", reply)
	}
	for _, r := range rowsOfKind(res.Ledger, graph.Analyzes) {
		if r.Outcome == graph.OutcomeDelivered && r.Traversal > 1 {
			t.Errorf("analyzes row %+v: delivered past the edge's maxTraversals 1", r)
		}
	}
	lenses := 0
	for _, n := range res.Result.Tree {
		if n.Profile == "analyst-failure-triage" {
			lenses++
		}
	}
	if lenses != 1 {
		t.Errorf("%d lens analysts ran, want 1 (the edge's one traversal)", lenses)
	}
}
