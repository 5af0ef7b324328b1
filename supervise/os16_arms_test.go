package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// os16Failing fails every worker, reporting its spend.
var os16Failing = supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	return supervise.WorkResult{Spent: ledger.Spend{Tokens: os16i(10), Iterations: os16i(1), MicroUSD: os16i(10)}}, errors.New("worker broke")
})

// §3.6 result arms, §15 behaviour 42: which arm when several causes
// apply, the same on the run and on a resume to its journaled end.
func TestOS16ResultArms(t *testing.T) {
	big := 5_000_000.0
	cases := []struct {
		name   string
		brain  supervise.BrainFunc
		status supervise.Status
		reason supervise.NoWinnerReason
		errMsg string
	}{{
		// A child down and the pool refusing a spawn: budget-exhausted.
		name: "budget-exhausted and all children down",
		brain: func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Key: "a", Task: "a"}); err != nil {
				return supervise.BrainReport{}, err
			}
			if err := os16AwaitSettled(ctx, c, 1); err != nil {
				return supervise.BrainReport{}, err
			}
			_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Key: "b", Task: "b", Budget: &supervise.SpawnBudget{USD: &big}})
			return supervise.BrainReport{Text: "gave up"}, fmt.Errorf("driver threw after %w", err)
		},
		status: supervise.StatusNoWinner, reason: supervise.ReasonBudgetExhausted,
	}, {
		// The brain erring after a passing submit_result: the accepted
		// result settles the run.
		name: "brain errs after a passing submit",
		brain: func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if r, err := c.Submit(ctx, supervise.SubmitArgs{Result: "ok mine"}); err != nil || !r.Accepted {
				return supervise.BrainReport{}, fmt.Errorf("submit: %v %+v", err, r)
			}
			return supervise.BrainReport{}, errors.New("brain broke afterwards")
		},
		status: supervise.StatusWinner,
	}, {
		name: "driver throws with no child down",
		brain: func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			return supervise.BrainReport{}, errors.New("brain broke")
		},
		status: supervise.StatusNoWinner, reason: supervise.ReasonDriverFailed, errMsg: "brain broke",
	}, {
		// A child went down while the brain drove, then it threw: the
		// lifecycle cause outranks driver-failed.
		name: "driver throws after a child went down",
		brain: func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Key: "a", Task: "a"}); err != nil {
				return supervise.BrainReport{}, err
			}
			if err := os16AwaitSettled(ctx, c, 1); err != nil {
				return supervise.BrainReport{}, err
			}
			return supervise.BrainReport{}, errors.New("brain broke")
		},
		status: supervise.StatusNoWinner, reason: supervise.ReasonAllChildrenDown,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			check := func(name string, res supervise.SupervisedResult) {
				t.Helper()
				if res.Status != tc.status || res.Reason != tc.reason {
					t.Errorf("%s: %s/%s, want %s/%s", name, res.Status, res.Reason, tc.status, tc.reason)
				}
				if (res.Error != nil) != (tc.errMsg != "") || (res.Error != nil && res.Error.Message != tc.errMsg) {
					t.Errorf("%s: error %+v, want message %q", name, res.Error, tc.errMsg)
				}
				if tc.status == supervise.StatusWinner && (res.Winner == nil || !res.Winner.Submitted || res.Winner.Text != "ok mine") {
					t.Errorf("%s: winner %+v", name, res.Winner)
				}
			}
			res, err := supervise.Supervise(context.Background(), os16Manager(t), "t", os16Opts(t, dir, tc.brain, os16Failing))
			if err != nil {
				t.Fatal(err)
			}
			check("run", res)
			o := os16Opts(t, dir, tc.brain, os16Failing)
			o.Resume, o.ReturnEnded = true, true
			again, err := supervise.Supervise(context.Background(), os16Manager(t), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			check("resumed to its end", again)
			if again.MS != res.MS {
				t.Errorf("resumed ms %d, run's %d", again.MS, res.MS)
			}
		})
	}
}
