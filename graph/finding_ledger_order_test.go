package graph_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// A lens's finding routed to the root is ledgered before Await hands it
// to the driver (§3.7: the edge ledger is in occurrence order): the row
// that says the analyzes edge delivered it precedes whatever the driver
// does on reading it. supervise queues an analyst's settlement for Await
// before the settlement hook that ledgers the row runs; a driver that
// spawned on reading the finding ledgered its delegation first (and,
// killed there, left a journal whose resume restored that order: seen
// as a flake of TestKilledGraphResumesWithoutRerunningSettledNodes under
// -race).
func TestLensFindingIsLedgeredBeforeTheDriverReadsIt(t *testing.T) {
	g, o, _ := passingResumeGraph(t)
	// The hook that routes the finding is left behind by the scheduler.
	graph.SetBeforeLensRoute(&o, func() { time.Sleep(300 * time.Millisecond) })
	var seen [][]string
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
			return supervise.BrainReport{}, err
		}
		for range 2 {
			res, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if res.Event == nil || res.Event.Kind != graph.EventFinding {
				continue
			}
			var edges []string
			for _, row := range d.Ledger() {
				edges = append(edges, row.Edge)
			}
			seen = append(seen, edges)
		}
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "reviewer", Task: "Review the login patch."}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
		return supervise.BrainReport{}, err
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"delegates:driver->coder", "analyzes:failure-triage:coder->driver"}}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("the ledger when the driver read the lens's finding (-want +got):\n%s", diff)
	}
	wantRows := []ledgerRow{
		{"delegates:driver->coder", 1, graph.OutcomeDelivered, "g:s1"},
		{"analyzes:failure-triage:coder->driver", 1, graph.OutcomeDelivered, "g:s1"},
		{"delegates:driver->reviewer", 1, graph.OutcomeDelivered, "g:s3"},
	}
	if diff := cmp.Diff(wantRows, ledgerRows(res.Ledger)); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
}
