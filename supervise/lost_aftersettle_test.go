package supervise_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// RES-03, behaviour 46, issue 13: a supervisor whose store spawn journal
// was taken over "delivers nothing — no winner, no settlement, no
// acknowledgement" (ErrSpawnLogLost). Its worker, cut when the loss was
// learnt, finishes its work anyway (a turn that completed as it was
// cut); its settlement cannot be journaled any more, so the run's
// settlement hook (Options.AfterSettle, the graph's edge delivery) must
// not run for it here: the next holder, which re-runs every hook the
// journal left open, owns the run's effects now.
func TestLostStoreJournalRunsNoSettlementHook(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	journal := memory.New(nil)
	started := make(chan struct{})
	inner := newCounting(t, workerProvider(t))
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		close(started)
		<-ctx.Done() // cut when this process learns it lost the journal
		return inner.Execute(context.WithoutCancel(ctx), w)
	})
	o, err := processOptions(exec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Brain = pipeline("write alpha")
	o.SpawnStore, o.SpawnLeaseTTL = journal, storeKillLease
	var (
		mu    sync.Mutex
		hooks []supervise.Settled
	)
	o.AfterSettle = func(_ context.Context, _ *supervise.Coordinator, s supervise.Settled) {
		mu.Lock()
		hooks = append(hooks, s)
		mu.Unlock()
	}
	superviseTakenOver(t, manager, o, journal, started, "the worker")
	if inner.count("alpha") != 1 {
		t.Fatalf("the worker's work ran %d times; want once", inner.count("alpha"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hooks) != 0 {
		t.Errorf("AfterSettle ran for %+v in a process that had lost the run's journal", hooks)
	}
}
