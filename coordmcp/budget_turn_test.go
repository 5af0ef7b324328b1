package coordmcp_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// §3.6 budget (behaviour 43; the pool's observe of the driver's own
// inference): an external-harness manager whose reported model calls
// use up the run's token pool mid-turn is stopped there, as the router
// brain is before its next turn — not left calling its model until the
// deadline while nothing it does can be admitted. The fake opencode
// reports two calls (120 and 180 tokens) and then never ends its turn;
// under a 200-token pool the run ends budget-exhausted once the second
// call is metered, long before its 3-minute deadline, with the manager's
// spend counted in full.
func TestHarnessManagerTurnEndsWhenItsCallsSpendThePool(t *testing.T) {
	dir := t.TempDir()
	brain := opencodeManager(t, "hang", filepath.Join(dir, "fake.pid"))
	o := runOptions(t, dir, brain)
	o.Budget.Tokens = ptr[int64](200)
	o.PerWorker.Tokens = ptr[int64](100)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := supervise.Supervise(ctx, opencodeProfile(t), "delegate nothing", o)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the run took %v: the manager's turn ran on after its calls spent the pool", took)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonBudgetExhausted {
		t.Errorf("result %s/%s (error %v), want no-winner budget-exhausted", res.Status, res.Reason, res.Error)
	}
	if d := res.Breakdown.DriverInference; d.Tokens != 300 {
		t.Errorf("the manager's tokens %d (known %v), want the 300 its two calls reported", d.Tokens, d.TokensKnown)
	}
}
