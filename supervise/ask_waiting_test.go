package supervise_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// A worker with two questions open at once is waiting until both are
// decided: the first decision does not make it running while the second
// still holds it up.
func TestWorkerWaitsUntilItsLastQuestionIsDecided(t *testing.T) {
	release := make(chan struct{})
	decided := make(chan string, 2) // each answer, once its Ask returned
	twoQuestions := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		var wg sync.WaitGroup
		answers := make([]string, 2)
		for i, q := range []string{"which colour?", "which size?"} {
			wg.Go(func() {
				d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: q, Reason: "unsaid", Urgency: supervise.UrgencyBlocksStep})
				if err == nil {
					answers[i] = d.Answer
				}
				decided <- d.Answer
			})
		}
		wg.Wait()
		<-release // the manager looks at the worker before it ends
		return supervise.WorkResult{Text: answers[0] + " " + answers[1] + " DONE", Spent: ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}}, nil
	})
	o := baseOptions(t, twoQuestions, nil)
	var afterFirst, afterBoth supervise.State
	var settled map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint"))
		for range 2 {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		}
		tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "a"})
		<-decided // the first Ask returned to the worker
		if o, err := c.Observe("run1:s1"); err == nil {
			afterFirst = o.Status
		}
		tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q2", "answer": "b"})
		afterBoth = waitState(t, c, "run1:s1", supervise.StateRunning)
		close(release)
		settled = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if afterFirst != supervise.StateWaiting || afterBoth != supervise.StateRunning {
		t.Errorf("after the first decision %s, after both %s; want waiting, running", afterFirst, afterBoth)
	}
	if ev, _ := settled["event"].(map[string]any); ev["state"] != "done" {
		t.Errorf("settled %v", settled)
	}
}
