package supervise

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
)

// §3.6 budget (the pool's observe of the driver's own inference; the
// harness turn's mid-turn stop, coordmcp's errPoolSpent): a manager
// whose metered calls ran past the pool while its worker still holds a
// reservation is not spent — it may be waiting for that worker's
// result, and its overspend is a budget violation, not a stop. Once the
// worker settled and holds nothing, the same pool is spent.
func TestDriverTurnPoolSpentOnlyWhenNoWorkerHoldsBudget(t *testing.T) {
	writer, manager := writerAndManager(t)
	n := func(v int64) *int64 { return &v }
	gate := make(chan struct{})
	var whileLive, afterSettle bool
	o := Options{
		Budget:      ledger.Budget{Tokens: n(1_000), Iterations: n(10), MicroUSD: n(1_000_000)},
		PerWorker:   ledger.Budget{Tokens: n(1_000), Iterations: n(1), MicroUSD: n(100_000)},
		Profiles:    map[string]*profile.Profile{"writer": writer},
		Executor:    gatedWorker(gate),
		RunID:       "run1",
		Deliverable: Deliverable{Check: func(context.Context, Output) (kernel.Verdict, error) { return kernel.Verdict{Passed: true}, nil }},
		Brain: BrainFunc(func(ctx context.Context, c *Coordinator, _ string) (BrainReport, error) {
			if _, err := c.Spawn(ctx, SpawnArgs{Profile: "writer", Task: "paint"}); err != nil {
				return BrainReport{}, err
			}
			turn, err := c.OpenDriverTurn(ctx)
			if err != nil {
				return BrainReport{}, err
			}
			if err := turn.Meter(ctx, ledger.Usage{InputTokens: ledger.ExactAmount[int64](4_000), OutputTokens: ledger.ExactAmount[int64](1_000)}); err != nil {
				return BrainReport{}, err
			}
			whileLive = turn.PoolSpent()
			close(gate)
			if _, err := c.Await(ctx, AwaitArgs{TimeoutMS: 60_000, Kinds: []string{EventSettled}}); err != nil {
				return BrainReport{}, err
			}
			afterSettle = turn.PoolSpent()
			return BrainReport{}, turn.End(ctx, nil)
		}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Supervise(ctx, manager, "t", o)
	if err != nil && !errors.Is(err, ErrBudgetStop) {
		t.Fatal(err)
	}
	if whileLive {
		t.Error("PoolSpent while the worker held its reservation: the manager waiting for it would be stopped")
	}
	if !afterSettle {
		t.Error("not PoolSpent once the worker settled: 5,000 manager tokens over a 1,000-token pool and nothing held")
	}
	if res.Status != StatusWinner {
		t.Errorf("result %s/%s, want the delivered worker as winner", res.Status, res.Reason)
	}
}
