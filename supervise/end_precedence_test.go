package supervise_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/supervise"
)

// endOrderRun runs a manager that does nothing but end the run's two
// ways in the order first says, on a fake clock: "deadline" waits for
// the run's deadline to end its context (a signal, not a sleep), then
// cancels the caller's context; "cancel" cancels the caller's context,
// then moves the clock past the deadline. It returns the result and
// the run dir.
func endOrderRun(t *testing.T, first string) (supervise.SupervisedResult, string) {
	t.Helper()
	dir := t.TempDir()
	o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.RunDir = dir
	start := time.Now().Truncate(time.Millisecond)
	var clock atomic.Int64
	clock.Store(start.UnixMilli())
	o.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	o.Deadline = start.Add(50 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Brain = supervise.BrainFunc(func(bctx context.Context, _ *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		switch first {
		case "deadline":
			<-bctx.Done()
			clock.Store(o.Deadline.UnixMilli())
			cancel()
		case "cancel":
			cancel()
			<-bctx.Done()
			clock.Store(o.Deadline.UnixMilli())
		}
		return supervise.BrainReport{}, bctx.Err()
	})
	res, _ := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	return res, dir
}

// §3.6 / behaviour 42 and the reference's classification: the end that
// came FIRST decides the no-winner arm. A deadline that passed before
// the caller's abort is budget-exhausted (the deadline is part of the
// budget); an abort before the deadline is aborted.
func TestFirstEndDecidesDeadlineVersusAbort(t *testing.T) {
	for _, tt := range []struct {
		first string
		want  supervise.NoWinnerReason
	}{
		{"deadline", supervise.ReasonBudgetExhausted},
		{"cancel", supervise.ReasonAborted},
	} {
		t.Run(tt.first+" first", func(t *testing.T) {
			res, _ := endOrderRun(t, tt.first)
			if res.Status != supervise.StatusNoWinner || res.Reason != tt.want {
				t.Errorf("%s first: status %s reason %s, want no-winner %s", tt.first, res.Status, res.Reason, tt.want)
			}
		})
	}
}

// The first end is journaled, so a resume agrees: a journal whose
// deadline passed first and that holds an abort after it (a process
// killed before its finished record) resumes budget-exhausted; one
// whose abort came first (no deadline record before it) resumes aborted.
func TestResumedRunKeepsItsFirstEnd(t *testing.T) {
	for _, tt := range []struct {
		first string
		want  supervise.NoWinnerReason
	}{
		{"deadline", supervise.ReasonBudgetExhausted},
		{"abort", supervise.ReasonAborted},
	} {
		t.Run(tt.first+" first", func(t *testing.T) {
			_, dir := endOrderRun(t, "deadline")
			path := filepath.Join(dir, supervise.SpawnJournalFile)
			if tt.first == "deadline" {
				journaltest.KeepThrough(t, dir, supervise.KindDeadlinePassed, 1)
			} else {
				journaltest.KeepThrough(t, dir, supervise.KindRunStarted, 1)
			}
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(`{"kind":"aborted","reason":"operator"}` + "\n"); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
			o.RunDir, o.Resume = dir, true
			o.Now = func() time.Time { return time.Now().Add(time.Hour) }
			o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
				t.Error("the brain of a run past its deadline was driven")
				return supervise.BrainReport{}, nil
			})
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != supervise.StatusNoWinner || res.Reason != tt.want {
				t.Errorf("%s first, resumed: status %s reason %s, want no-winner %s", tt.first, res.Status, res.Reason, tt.want)
			}
		})
	}
}
