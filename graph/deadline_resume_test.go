package graph_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// refusing is a deliverable no output passes.
var refusing = supervise.Deliverable{Describe: "nothing", Check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
	return kernel.Verdict{Passed: false, Reason: "never"}, nil
}}

// §3.6 under runGraph: a graph run killed once its coder's settlement
// (not delivered) was durable, its lens and the reviewer not yet run,
// resumed after
// its journaled deadline passed by the run's clock (Options.Now), ends
// at once as the deadline's no-winner (budget-exhausted, not a
// *GraphEdgeCapError): its brain is not driven, no node or lens runs,
// nothing more is spent than the journal holds, and spentTotal.ms
// counts from the original start.
func TestGraphResumePastTheDeadlineEndsAtOnce(t *testing.T) {
	dir := t.TempDir()
	g, o, err := resumeGraph()
	if err != nil {
		t.Fatal(err)
	}
	g.Deliverable = refusing
	start := time.Now().Truncate(time.Millisecond)
	o.Supervise.Executor, o.Supervise.RunDir = newRecoveringKernel(t, memory.New(nil)), dir
	o.Supervise.Now = func() time.Time { return start }
	o.Supervise.Deadline = start.Add(time.Hour)
	if _, err := graph.RunGraph(context.Background(), g, o); err != nil {
		t.Fatal(err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSettled, 1)

	g, o, err = resumeGraph()
	if err != nil {
		t.Fatal(err)
	}
	g.Deliverable = refusing
	exec := newRecoveringKernel(t, memory.New(nil))
	o.Supervise.Executor, o.Supervise.RunDir = exec, dir
	o.Supervise.Now = func() time.Time { return start.Add(2 * time.Hour) }
	o.Supervise.Deadline = start.Add(time.Hour)
	var driven atomic.Bool
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		driven.Store(true)
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if driven.Load() || exec.count("coder")+exec.count("reviewer")+exec.count("failure-triage") != 0 {
		t.Errorf("a graph resumed past its deadline drove its brain (%v) or ran nodes (coder %d, reviewer %d, lens %d)",
			driven.Load(), exec.count("coder"), exec.count("reviewer"), exec.count("failure-triage"))
	}
	if res.Result.Status != supervise.StatusNoWinner || res.Result.Reason != supervise.ReasonBudgetExhausted || res.Result.Error != nil {
		t.Errorf("status %s reason %s error %+v, want no-winner budget-exhausted", res.Result.Status, res.Result.Reason, res.Result.Error)
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var journaled int64
	for _, r := range recs {
		if (r.Kind == supervise.KindSettled || r.Kind == supervise.KindMetered || r.Kind == supervise.KindTranscript) && r.Spent != nil && r.Spent.Tokens != nil {
			journaled += *r.Spent.Tokens
		}
	}
	if journaled == 0 || res.Result.Spent.Tokens != journaled {
		t.Errorf("spent tokens %d, want %d (the journal's, nothing more)", res.Result.Spent.Tokens, journaled)
	}
	if res.Result.MS != (2 * time.Hour).Milliseconds() {
		t.Errorf("MS = %d, want %d (from the original start)", res.Result.MS, (2 * time.Hour).Milliseconds())
	}
}
