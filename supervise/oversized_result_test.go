package supervise_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// A worker whose result is over MaxResultBlobBytes settles done but is
// not delivered, with a reason naming the limit; its oversized result is
// the worker's outcome, not a loss of the run's journal, so the run ends
// as it would without it (here: no winner, all children down... or the
// other worker's win) and Supervise returns no JournalLossError.
func TestAnOversizedResultIsNotDeliveredAndLosesNothing(t *testing.T) {
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		text := "small DONE"
		if strings.Contains(w.Task, "huge") {
			text = strings.Repeat("x", supervise.MaxResultBlobBytes) + " DONE"
		}
		return supervise.WorkResult{Text: text, Spent: workSpend()}, nil
	})
	o := baseOptions(t, exec, nil)
	o.RunDir = t.TempDir()
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, task := range []string{"write huge", "write small"} {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatalf("Supervise: %v (an oversized result is the worker's outcome, not a journal loss)", err)
	}
	if res.Status != supervise.StatusWinner || res.Winner.Node != "run1:s2" {
		t.Errorf("result %s winner %+v, want run1:s2 (the small result) to win", res.Status, res.Winner)
	}
	huge := res.Tree[0]
	if huge.State != supervise.StateDone || huge.Delivered || !strings.Contains(huge.CheckError, "16777216") {
		t.Errorf("the huge worker: state %s delivered %v checkError %q, want done, not delivered, naming the limit", huge.State, huge.Delivered, huge.CheckError)
	}
}
