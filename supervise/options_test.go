package supervise_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

type noUsage struct{ supervise.ExecutorFunc }

func (noUsage) ReportsUsage() bool { return false }

// Options that cannot run are refused before anything is journaled.
func TestSuperviseRefusesInvalidOptions(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	cases := []struct {
		name    string
		manager string
		tune    func(*supervise.Options)
		want    error
	}{
		{"no deliverable check", "", func(o *supervise.Options) { o.Deliverable = supervise.Deliverable{} }, supervise.ErrInvalidOptions},
		{"no token ceiling", "", func(o *supervise.Options) { o.Budget.Tokens = nil }, supervise.ErrInvalidOptions},
		{"no worker profiles", "", func(o *supervise.Options) { o.Profiles = nil }, supervise.ErrInvalidOptions},
		{"no executor", "", func(o *supervise.Options) { o.Executor = nil }, supervise.ErrInvalidOptions},
		{"resume without run dir", "", func(o *supervise.Options) { o.Resume, o.RunDir = true, "" }, supervise.ErrInvalidOptions},
		{"cli-base without router", "", func(o *supervise.Options) { o.Router = nil }, supervise.ErrInvalidOptions},
		// §3.6 maxTurns: a negative cap is refused up front, not a
		// manager that fails driver-failed after the run started.
		{"negative MaxTurns", "", func(o *supervise.Options) { o.MaxTurns = -1 }, supervise.ErrInvalidOptions},
		{"executor that cannot report usage", "", func(o *supervise.Options) { o.Executor = noUsage{gate.Execute} }, supervise.ErrInvalidOptions},
		{"external harness without a brain", `{"name": "m", "harness": "claude-code", "model": {"default": "claude-sonnet-4-5"}}`, nil, supervise.ErrUnsupportedHarness},
		{"manager declares a non-coordination tool", `{"name": "m", "harness": "cli-base", "tools": {"bash": true, "agent_runtime_coordination_spawn_worker": true}}`, nil, supervise.ErrInvalidOptions},
		{"manager grants no verb", `{"name": "m", "harness": "cli-base"}`, nil, supervise.ErrInvalidOptions},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, gate, twoWorkerManager())
			o.RunDir = t.TempDir()
			if tc.tune != nil {
				tc.tune(&o)
			}
			manager := managerProfile(t, supervise.VerbSpawnWorker)
			if tc.manager != "" {
				manager = mustProfile(t, tc.manager)
			}
			_, err := supervise.Supervise(context.Background(), manager, "t", o)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// A budget-exempt executor that cannot report usage runs, charged at
// its ceilings, with the gaps named.
func TestBudgetExemptExecutorChargedAtCeiling(t *testing.T) {
	exec := noUsage{func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "DONE"}, nil
	}}
	o := baseOptions(t, exec, nil)
	o.BudgetExempt = true
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("x"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Spent.Tokens != 1000 || res.Spent.TokensKnown || len(res.SpendGaps) != 1 {
		t.Errorf("status %s spent %+v gaps %+v", res.Status, res.Spent, res.SpendGaps)
	}
}

// A cancelled caller's context ends the run as no-winner aborted, as the
// reference's caller abort signal does (its classifyNoWinner: a caller's
// signal is "aborted"; only a CancelRun request is "cancelled", with
// its source and operation id): live workers are cancelled and settled
// with what they spent, the brain's resulting error does not turn it
// into driver-failed, and Cancellation names the context and its cause.
func TestCancelledRun(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	o := baseOptions(t, gate, nil)
	o.RunDir = t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("one"))
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("two"))
		cancel(errors.New("operator pressed stop"))
		_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 5000})
		return supervise.BrainReport{}, err
	})
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonAborted || res.Cancellation == nil ||
		res.Cancellation.Source != supervise.CancelSourceContext || res.Cancellation.Reason != "operator pressed stop" || res.Error != nil {
		t.Fatalf("result %+v", res)
	}
	if res.DownCount != 2 || res.Spent.Tokens != 20 || !res.Spent.TokensKnown {
		t.Errorf("down %d spent %+v", res.DownCount, res.Spent)
	}
	for _, n := range res.Tree {
		if n.State != supervise.StateCancelled {
			t.Errorf("%s is %s, want cancelled", n.ID, n.State)
		}
	}
}

// Workers that ignore cancellation past SettleGrace are charged at their
// ceilings and named in TeardownUnconfirmed (behaviour 51, in-process).
func TestUnconfirmedTeardownChargedAtCeilingBehaviour51(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stubborn := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		<-release // ignores ctx
		return supervise.WorkResult{}, ctx.Err()
	})
	o := baseOptions(t, stubborn, nil)
	o.SettleGrace = 20 * time.Millisecond
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("one"))
		return supervise.BrainReport{}, nil
	})
	o.Deliverable = supervise.Deliverable{Check: func(context.Context, supervise.Output) (kernel.Verdict, error) { return kernel.Verdict{}, nil }}
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.TeardownUnconfirmed) != 1 || res.TeardownUnconfirmed[0].ID != "run1:s1" || res.Spent.Tokens != 1000 ||
		len(res.SpendGaps) != 1 || res.SpendGaps[0].Kind != supervise.GapNeverSettled {
		t.Errorf("teardown %v spent %+v gaps %+v", res.TeardownUnconfirmed, res.Spent, res.SpendGaps)
	}
}

// The run's deadline is part of its budget: a brain still waiting when
// it passes ends the run budget-exhausted, not driver-failed, and the
// live worker is cancelled.
func TestDeadlineEndsBudgetExhausted(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	o := baseOptions(t, gate, nil)
	// Long enough for the spawn to land first on a slow machine (-race
	// on two CPUs took over 100 ms): the deadline must cut a live worker.
	o.Deadline = time.Now().Add(time.Second)
	var spawned map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		spawned = tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("one"))
		_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
		return supervise.BrainReport{}, err
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tree) != 1 {
		t.Fatalf("tree %+v: the spawn (%v) did not land before the deadline", res.Tree, spawned)
	}
	if res.Reason != supervise.ReasonBudgetExhausted || res.Error != nil || res.Tree[0].State != supervise.StateCancelled {
		t.Errorf("reason %s error %+v state %s", res.Reason, res.Error, res.Tree[0].State)
	}
	// The worker was cut by the deadline, and its reason says so, not
	// only that the manager returned.
	if !strings.Contains(res.Tree[0].Reason, "deadline") {
		t.Errorf("the cut worker's reason %q does not name the deadline", res.Tree[0].Reason)
	}
}

// wantOptionRefused runs Supervise on o and checks it is refused before
// anything runs (the brain is never driven) as ErrInvalidOptions with an
// *OptionError at pointer.
func wantOptionRefused(t *testing.T, o supervise.Options, pointer string) {
	t.Helper()
	o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
		t.Error("the brain was driven")
		return supervise.BrainReport{}, nil
	})
	_, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if !errors.Is(err, supervise.ErrInvalidOptions) {
		t.Fatalf("err = %v, want ErrInvalidOptions", err)
	}
	if oe, ok := errors.AsType[*supervise.OptionError](err); !ok || oe.Pointer != pointer {
		t.Fatalf("err = %v, want an *OptionError at %s", err, pointer)
	}
}
