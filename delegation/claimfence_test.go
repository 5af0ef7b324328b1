package delegation_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/kernel"
	storememory "github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// recoveringExecutor is the fixture's executor that also recovers the
// executions a resumed run found in doubt, from the kernel's store.
type recoveringExecutor struct {
	*countingExecutor
	recoverer supervise.Recoverer
}

func (e recoveringExecutor) Recover(ctx context.Context, w supervise.RecoverWork) (supervise.Recovered, error) {
	return e.recoverer.Recover(ctx, w)
}

// TestPausedPastTheClaimWritesNothing: a queue whose claim ran out
// before it was renewed (its process paused past the claim; here its
// clock jumps past it) may no longer be the delegation's holder, and
// the heartbeat that would learn it has not run yet: the worker that
// settles in that gap is not journaled (the claim's time fence, behaviour
// 46 for a delegation's journal), the attempt ends without an end of its
// own, and the delegation is claimed again and resumed from its journal
// to one end.
func TestPausedPastTheClaimWritesNothing(t *testing.T) {
	ctx := deadline(t)
	f := newFixture(t, storememory.New(nil))
	cfg := f.config(t)
	cfg.Executor = recoveringExecutor{f.exec, f.exec.inner.(supervise.Recoverer)}
	// The first worker's check waits for the gate: its worker ran (its
	// execution is bound and ended), its settlement is not written yet.
	checking, gate := make(chan struct{}), make(chan struct{})
	var checks atomic.Int64
	check := cfg.Deliverable.Check
	cfg.Deliverable.Check = func(ctx context.Context, out supervise.Output) (kernel.Verdict, error) {
		if checks.Add(1) == 1 {
			close(checking)
			<-gate
		}
		return check(ctx, out)
	}
	// The heartbeat renews every ClaimTTL/3 = 10 s: the worker settles
	// long before it runs again.
	cfg.ClaimTTL = 30 * time.Second
	var skew atomic.Int64
	cfg.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	q := open(t, cfg)

	sub := must(q.Submit(ctx, delegation.Request{Intent: "write alpha"}))(t)
	select {
	case <-checking:
	case <-ctx.Done():
		t.Fatal("the worker was never checked")
	}
	skew.Store(int64(cfg.ClaimTTL + time.Second))
	close(gate)

	d := settle(t, ctx, q, sub.TaskID)
	if d.State != delegation.StateCompleted || d.Attempts < 2 || !d.Resumed {
		recs, _, _ := supervise.ReadRunDir(ctx, d.RunDir)
		for _, r := range recs {
			t.Logf("%s %s %s %s %s", r.Kind, r.Node, r.State, r.Reason, r.Outcome)
		}
		t.Fatalf("delegation %s after %d attempts (resumed %v, failure %q); want completed by a later attempt that resumed the journal", d.State, d.Attempts, d.Resumed, d.Failure)
	}
	recs, _, err := supervise.ReadRunDir(ctx, d.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	// The first attempt's worker is either recovered by the resume (its
	// kernel run ended in the executor's store) or, unrecoverable, run
	// again: never settled by the attempt that was past its claim.
	var first supervise.NodeID
	fresh, finished := 0, 0
	for _, r := range recs {
		kinds = append(kinds, r.Kind+" "+string(r.Node)+" "+string(r.State))
		switch {
		case r.Kind == supervise.KindSpawned && first == "":
			first = r.Node
		case r.Kind == supervise.KindSettled && r.Node == first && !r.Recovered:
			fresh++
		case r.Kind == supervise.KindFinished:
			finished++
		}
	}
	if fresh != 0 || finished != 1 {
		t.Errorf("the journal holds %d settlements of the first worker written past the claim and %d ends; want none and one:\n%v", fresh, finished, kinds)
	}
}
