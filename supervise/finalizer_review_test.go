package supervise_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 finalizer, behaviour 46: a run resumed before it ended finalizes
// over every delivered child of its root — those the earlier process
// settled included, not only this process's.
func TestFinalizerOnAResumedRunSeesEarlierChildrenBehaviour46(t *testing.T) {
	brains := map[string]supervise.Brain{
		"the resumed manager replays its spawn": pipeline("write alpha"),
		"the resumed manager spawns nothing": supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
			return supervise.BrainReport{}, nil
		}),
	}
	for name, brain := range brains {
		t.Run(name, func(t *testing.T) { finalizeResumed(t, brain) })
	}
}

func finalizeResumed(t *testing.T, brain supervise.Brain) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o, err := processOptions(newCounting(t, workerProvider(t)), dir)
	if err != nil {
		t.Fatal(err)
	}
	// The first process settles alpha, then loses its lease: nothing
	// more is journaled, its end included.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	first := pipeline("write alpha")
	o.Brain = supervise.BrainFunc(func(bctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		if _, err := first.Drive(bctx, c, task); err != nil {
			return supervise.BrainReport{}, err
		}
		cancel(contract.ErrLeaseLost)
		<-bctx.Done()
		return supervise.BrainReport{}, bctx.Err()
	})
	_, _ = supervise.Supervise(ctx, manager, "t", o)

	counting := newCounting(t, workerProvider(t))
	o, err = processOptions(counting, dir)
	if err != nil {
		t.Fatal(err)
	}
	o.Brain = brain
	var seen atomic.Int64
	o.Finalizer = func(ctx context.Context, in supervise.FinalizeInput) (supervise.NodeID, error) {
		seen.Store(int64(len(in.Candidates)))
		return supervise.DefaultFinalizer(ctx, in)
	}
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Fatalf("the second process did not resume: %+v", res)
	}
	if counting.count("alpha") != 0 {
		t.Errorf("alpha ran %d times in the resume, want 0 (replayed)", counting.count("alpha"))
	}
	if seen.Load() != 1 {
		t.Errorf("the finalizer saw %d candidates, want 1 (alpha, settled by the first process)", seen.Load())
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.Node != "run1:s1" || res.Winner.Text != "alpha: DONE" {
		t.Errorf("%s %s %+v; want alpha (run1:s1) the winner", res.Status, res.Reason, res.Winner)
	}
}

// A run its deadline ended still finalizes (§3.6: the deadline is a
// budget end, not an abort): a worker that delivered before it is a
// candidate, the finalizer is asked once, and its choice wins.
func TestFinalizerRunsWhenTheDeadlineEndedTheRun(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	close(gate.release)
	o := baseOptions(t, gate, nil)
	o.Deadline = time.Now().Add(1500 * time.Millisecond)
	var calls atomic.Int32
	o.Finalizer = func(_ context.Context, in supervise.FinalizeInput) (supervise.NodeID, error) {
		calls.Add(1)
		if len(in.Candidates) != 1 {
			t.Errorf("candidates %+v, want the one delivered worker", in.Candidates)
			return "", nil
		}
		return in.Candidates[0].Node, nil
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("write alpha"))
		if ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil || ev.Event == nil {
			t.Errorf("await: %+v %v", ev, err)
		}
		<-ctx.Done() // the manager goes on until the deadline ends it
		return supervise.BrainReport{}, context.Cause(ctx)
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.Node != "run1:s1" || calls.Load() != 1 {
		t.Errorf("status %s reason %s winner %+v, finalizer asked %d times; want run1:s1 chosen once", res.Status, res.Reason, res.Winner, calls.Load())
	}
}
