package supervise_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// RES-03 with the spawn journal in SQL, when its store stops answering
// mid-run (PostgreSQL black-holed or resetting, SQLite locked
// elsewhere) while a worker runs and the brain awaits: once the lease
// runs out unrenewed another process may take the run over, so this one
// gives it up as the kernel gives up a run — the brain and the worker
// stop at once and Supervise returns ErrSpawnLogLost (a lapsed fence)
// in bounded time, without journaling an end. Once the store answers,
// another Supervise resumes the run: the committed worker is not run
// again and the run settles with its winner.
func TestJournalStoreStopsAnsweringMidRunLeaseLapses(t *testing.T) {
	const lease = 2 * time.Second
	// The lease, a renewal's timeout (a third of it), the workers'
	// settling and the release bounded by kernel.DefaultCleanupTimeout:
	// well under the brain's 60 s await, which a run that ignored the
	// lapse would sit out.
	const bound = 30 * time.Second
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	for _, sk := range storefault.Stores() {
		t.Run(string(sk.Fault), func(t *testing.T) {
			st, fail, restore := sk.Open(t)
			started := make(chan struct{})
			inner := newCounting(t, workerProvider(t))
			slowCtxEnded := make(chan error, 1)
			exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
				if strings.Contains(w.Task, "slow") {
					close(started)
					<-ctx.Done()
					slowCtxEnded <- context.Cause(ctx)
					return supervise.WorkResult{}, context.Cause(ctx)
				}
				return inner.Execute(ctx, w)
			})
			o, err := processOptions(exec, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			o.SpawnStore, o.SpawnLeaseTTL = st, lease
			type outcome struct {
				res supervise.SupervisedResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := supervise.Supervise(context.Background(), manager, "t", o)
				done <- outcome{res, err}
			}()
			select {
			case <-started:
			case <-time.After(2 * time.Minute):
				t.Fatal("the slow worker never started")
			}
			fail()
			cut := time.Now()
			var got outcome
			select {
			case got = <-done:
			case <-time.After(bound + 2*time.Minute):
				restore()
				t.Fatalf("Supervise still runs %v after its journal's store stopped answering", bound+2*time.Minute)
			}
			took := time.Since(cut)
			t.Logf("Supervise returned %v after the cut: %v", took.Round(time.Millisecond), got.err)
			if took > bound {
				t.Errorf("Supervise returned %v after the cut; want within %v", took, bound)
			}
			var fe *store.FenceError
			if !errors.Is(got.err, supervise.ErrSpawnLogLost) || !errors.As(got.err, &fe) || fe.Reason != store.FenceLapsed {
				t.Errorf("Supervise: %v; want ErrSpawnLogLost with a lapsed *store.FenceError", got.err)
			}
			if got.res.Winner != nil {
				t.Errorf("a winner %+v from a process that lost its journal", got.res.Winner)
			}
			select {
			case cause := <-slowCtxEnded:
				// A lease run out unanswered is a lost lease: another
				// process may hold the run by then, so the worker's
				// provider must leave its turn to it (issue 13).
				if !errors.Is(cause, supervise.ErrSpawnLogLost) || !errors.Is(cause, contract.ErrLeaseLost) {
					t.Errorf("the running worker was stopped with %v; want ErrSpawnLogLost and contract.ErrLeaseLost", cause)
				}
			default:
				t.Error("the running worker was never stopped")
			}

			restore()
			counting := newCounting(t, workerProvider(t))
			o2, err := processOptions(counting, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			o2.SpawnStore, o2.SpawnLeaseTTL = st, lease
			deadline := time.Now().Add(2 * time.Minute)
			var res supervise.SupervisedResult
			for {
				res, err = supervise.Supervise(context.Background(), manager, "t", o2)
				if !errors.Is(err, supervise.ErrSpawnLogHeld) || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil || res.Winner == nil {
				t.Fatalf("resuming after the store answered again: %v, %+v", err, res)
			}
			if counting.count("alpha") != 0 || counting.count("slow") != 1 || counting.count("beta") != 1 {
				t.Errorf("the resuming run executed alpha %d, slow %d, beta %d times; want 0, 1, 1",
					counting.count("alpha"), counting.count("slow"), counting.count("beta"))
			}
		})
	}
}
