package fleet_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// countingFleetExecutor is a fleet executor that counts the workers it
// submits: recovery must submit none.
type countingFleetExecutor struct {
	*fleet.Executor
	executed atomic.Int64
}

func (e *countingFleetExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	e.executed.Add(1)
	return e.Executor.Execute(ctx, w)
}

// superviseOnFleet runs a supervised run whose brain spawns one keyed
// worker on exec and awaits its settlement.
func superviseOnFleet(t *testing.T, exec supervise.Executor, dir string, resume bool) supervise.SupervisedResult {
	t.Helper()
	p, err := profile.Parse([]byte(noteProfile))
	if err != nil {
		t.Fatal(err)
	}
	manager, err := profile.Parse([]byte(`{"name":"manager","harness":"cli-base","model":{"default":"scripted/manager"},"tools":{"agent_runtime_coordination_spawn_worker":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	i64 := func(v int64) *int64 { return &v }
	o := supervise.Options{
		Budget:    ledger.Budget{Tokens: i64(10_000), Iterations: i64(10), MicroUSD: i64(1_000_000)},
		PerWorker: ledger.Budget{Tokens: i64(1_000), Iterations: i64(1), MicroUSD: i64(100_000)},
		Profiles:  map[string]*profile.Profile{"note-writer": p},
		Deliverable: supervise.Deliverable{Describe: "a note", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.Contains(out.Text, "note")}, nil
		}},
		Executor: exec, RunID: "sv1", RunDir: dir, Resume: resume, BudgetExempt: true,
		Brain: supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "note-writer", Task: "write a note", Key: "k"}); err != nil {
				return supervise.BrainReport{}, err
			}
			_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
			return supervise.BrainReport{}, err
		}),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := supervise.Supervise(ctx, manager, "ship a note", o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// §3.6 recover? on the fleet: a supervisor whose keyed worker ran as a
// fleet run dies after the worker's fleet run id was journaled; the
// fleet ran it on. The resumed supervisor recovers the worker from that
// fleet run — done, delivered, its spend the attempts' — and submits
// nothing: the fleet holds one run for the worker.
func TestFleetWorkerRecoveredAfterSupervisorDied(t *testing.T) {
	f, conn := openFleet(t)
	_, stop := startWorker(t, conn, schemaOf(t, conn), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": provider(t, quickScript)},
		LeaseTTL: 2 * time.Second, PollInterval: 50 * time.Millisecond})
	defer stop()
	dir := t.TempDir()
	first := &countingFleetExecutor{Executor: &fleet.Executor{Fleet: f, Provider: "scripted", PollInterval: 50 * time.Millisecond}}
	want := superviseOnFleet(t, first, dir, false)
	if want.Status != supervise.StatusWinner || first.executed.Load() != 1 {
		t.Fatalf("the uninterrupted run: %+v, executed %d", want, first.executed.Load())
	}
	journaltest.KeepThrough(t, dir, supervise.KindExecutionBound, 1)

	second := &countingFleetExecutor{Executor: &fleet.Executor{Fleet: f, Provider: "scripted", PollInterval: 50 * time.Millisecond}}
	got := superviseOnFleet(t, second, dir, true)
	if n := second.executed.Load(); n != 0 {
		t.Errorf("the resumed supervisor submitted %d workers, want 0", n)
	}
	if got.Status != supervise.StatusWinner || got.Winner.OutRef != want.Winner.OutRef || got.Tree[0].InDoubt {
		t.Fatalf("resumed: %+v winner %+v; want the uninterrupted winner %+v", got, got.Winner, want.Winner)
	}
	if got.Tree[0].Settlement == nil || got.Tree[0].Settlement.Spent.Tokens == nil || *got.Tree[0].Settlement.Spent.Tokens != 5 {
		t.Errorf("the recovered worker's settlement %+v; want the attempt's 5 tokens", got.Tree[0].Settlement)
	}
	runs, err := f.Store().ListRuns(t.Context(), store.ListOptions{Kind: fleet.Kind})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Errorf("%d fleet runs, want the one the dead supervisor submitted", len(runs))
	}
}

// Recover never submits work: a fleet run that does not exist, or has
// not ended, leaves the worker in doubt with a reason that says what to
// do.
func TestFleetRecoverLeavesUnendedWorkInDoubt(t *testing.T) {
	f, _ := openFleet(t)
	e := &fleet.Executor{Fleet: f, Provider: "scripted"}
	if _, err := e.Recover(t.Context(), supervise.RecoverWork{RunID: "sv", Node: "sv:s1", Execution: "run-sv-nowhere"}); err == nil || !strings.Contains(err.Error(), "spawn the work again") {
		t.Errorf("Recover of a run the fleet does not hold: %v; want an error saying what to do", err)
	}
	pv, err := profile.Parse([]byte(noteProfile))
	if err != nil {
		t.Fatal(err)
	}
	v, err := pv.Value()
	if err != nil {
		t.Fatal(err)
	}
	sub, err := f.Submit(t.Context(), fleet.Submission{Spec: fleet.Spec{Profile: v, Task: "t", Provider: "scripted"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Recover(t.Context(), supervise.RecoverWork{RunID: "sv", Node: "sv:s1", Execution: sub.RunID}); err == nil || !strings.Contains(err.Error(), "pending") {
		t.Errorf("Recover of a pending run: %v; want it left in doubt, saying it is pending", err)
	}
	runs, err := f.Store().ListRuns(t.Context(), store.ListOptions{Kind: fleet.Kind})
	if err != nil || len(runs) != 1 {
		t.Errorf("fleet runs %d (%v); want only the one submitted here", len(runs), err)
	}
}
