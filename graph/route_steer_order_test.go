package graph_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// §3.7 (the edge ledger is in occurrence order), as
// TestLensFindingIsLedgeredBeforeTheDriverReadsIt for findings steered
// into a live worker node: the destination worker can answer the steer
// and settle before the graph ledgers the steer's row, and a driver
// that reads that settlement — and acts on it — must find the analyzes
// row already in the ledger. The test holds the graph back after the
// delivery until the driver read the destination's settlement (at most
// 2 s: a driver that cannot read it before the row is the fix).
func TestRoutedFindingIsLedgeredBeforeTheDestinationSettlementReachesTheDriver(t *testing.T) {
	for _, tc := range []struct{ name, analyst string }{
		{"analyst node", "critic"},
		{"lens", "failure-triage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := starGraph(t)
			if tc.analyst == "critic" {
				g = withCritic(t, "reviewer")
			} else {
				g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "failure-triage", Over: []string{"coder"}, To: "reviewer", Directive: "analyze/critic/v2"})
			}
			g.Budget.MicroUSD = nil // the scripted workers report no cost
			edge := "analyzes:" + tc.analyst + ":coder->reviewer"
			live := &recordingWorkers{}
			o := options(t, byProfile{live: live, names: map[string]bool{"reviewer": true}, rest: kernelWorkers(t, killMatrixScript)}, nil)
			o.Supervise.Router, o.Supervise.PerWorker.MicroUSD = nil, nil
			read := make(chan struct{})
			var once sync.Once
			graph.SetAfterRouteSteer(&o, func() {
				select {
				case <-read:
				case <-time.After(2 * time.Second):
				}
			})
			var seen []string
			o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
				var reviewer supervise.NodeID
				for _, n := range []string{"reviewer", "coder"} {
					res, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: n, Task: "Fix test_login."})
					if err != nil {
						return supervise.BrainReport{}, err
					}
					if n == "reviewer" {
						reviewer = res.WorkerID
					}
				}
				for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
					ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 5000})
					if err != nil {
						return supervise.BrainReport{}, err
					}
					if ev.Idle {
						break
					}
					if ev.Event != nil && ev.Event.WorkerID == reviewer {
						for _, row := range d.Ledger() {
							seen = append(seen, row.Edge)
						}
						once.Do(func() { close(read) })
						break
					}
				}
				return supervise.BrainReport{}, nil
			})
			res, err := graph.RunGraph(context.Background(), g, o)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"delegates:driver->reviewer", "delegates:driver->coder", edge}
			if diff := cmp.Diff(want, seen); diff != "" {
				t.Errorf("the ledger when the driver read the reviewer's settlement (-want +got):\n%s", diff)
			}
			if rows := rowsOfKind(res.Ledger, graph.Analyzes); len(rows) != 1 || rows[0].Outcome != graph.OutcomeDelivered {
				t.Errorf("analyzes rows %+v, want one, delivered", rows)
			}
		})
	}
}
