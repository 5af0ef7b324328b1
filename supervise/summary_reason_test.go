package supervise_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// The result's tree says why a worker was not delivered: its failure
// (Reason) or why its check could not judge it (CheckError), on the run
// that settled it and on a resume that replays it from the journal.
func TestWorkerSummaryCarriesReasonAndCheckError(t *testing.T) {
	pass := func(context.Context, supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: true}, nil
	}
	for _, tc := range []struct {
		name  string
		exec  supervise.ExecutorFunc
		check func(context.Context, supervise.Output) (kernel.Verdict, error)
		field func(supervise.WorkerSummary) string
	}{
		{name: "executor error", check: pass,
			exec: func(context.Context, supervise.Work) (supervise.WorkResult, error) {
				return supervise.WorkResult{Spent: spent()}, errors.New("upstream exploded")
			},
			field: func(w supervise.WorkerSummary) string { return w.Reason }},
		{name: "check error",
			exec: func(context.Context, supervise.Work) (supervise.WorkResult, error) {
				return supervise.WorkResult{Text: "out", Spent: spent()}, nil
			},
			check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
				return kernel.Verdict{}, errors.New("upstream exploded")
			},
			field: func(w supervise.WorkerSummary) string { return w.CheckError }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := boundsOptions(t, dir, tc.exec, tc.check)
			for _, resume := range []bool{false, true} {
				o.Resume, o.ReturnEnded = resume, resume
				res, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", o)
				if err != nil {
					t.Fatalf("resume %v: %v", resume, err)
				}
				if res.Status == supervise.StatusWinner || len(res.Tree) != 1 {
					t.Fatalf("resume %v: want one worker and no winner: %+v", resume, res)
				}
				if got := tc.field(res.Tree[0]); !strings.Contains(got, "upstream exploded") {
					t.Errorf("resume %v: the worker's summary says %q, want the reason", resume, got)
				}
			}
		})
	}
}
