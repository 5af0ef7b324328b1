package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// §3.7 continuity as data: a resume edge's first spawn is fresh, each
// later one resumes the node's latest settled session, and the ledger
// says how each hop continued; a call's own continuity overrides the
// edge's, and anything but fresh or resume is refused before spend.
func TestResumeEdgeContinuity(t *testing.T) {
	g := starGraph(t)
	g.Edges[0].Continuity = graph.ContinuityResume
	workers := &resumingWorkers{}
	o := options(t, workers, nil)
	o.Supervise.Router = nil
	var bad *supervise.VerbRefusal
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for i, task := range []string{"first", "second", "third"} {
			a := supervise.SpawnArgs{Profile: "coder", Task: task}
			if i == 2 {
				a.Continuity = graph.ContinuityFresh
			}
			res, err := d.Spawn(ctx, a)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			workers.Deliver(ctx, res.WorkerID, task)
			if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		_, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "x", Continuity: "steer"})
		errors.As(err, &bad)
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Ledger {
		got = append(got, r.Continuity+" "+string(r.Outcome)+" "+string(r.WorkerID))
	}
	want := []string{"fresh delivered g:s1", "resume delivered g:s2", "fresh delivered g:s3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ledger continuity (-want +got):\n%s", diff)
	}
	if n := res.Result.Tree[1]; n.ResumeOf != "g:s1" {
		t.Errorf("the resumed node %s resumes %q, want g:s1", n.ID, n.ResumeOf)
	}
	if bad == nil || bad.Code != "invalid-continuity" {
		t.Errorf("continuity steer on a spawn: refusal %+v, want invalid-continuity", bad)
	}
}
