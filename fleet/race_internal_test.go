package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
)

// TestSameJobDeliveredTwice: River may deliver one job to two workers at
// once (its rescuer hands a job that ran past its timeout to another
// worker while the first still works it). The delivery whose claim
// loses the compare-and-set never returns an error (which would leave
// the job retryable, waiting out River's retry backoff): it snoozes the
// job while the winner holds the run, and completes it as a no-op once
// the run ended. Each case makes the second delivery lose
// deterministically: the first claims between the second's read of the
// run and its write.
func TestSameJobDeliveredTwice(t *testing.T) {
	f, _ := openTestFleet(t)
	ctx := t.Context()
	pv, err := canonjson.Decode([]byte(`{"name":"n","harness":"cli-base","model":{"provider":"scripted","default":"scripted/n"}}`))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scripted.ParseScript([]byte(`{"turns":[{"repeat":true,"steps":[{"text":"note"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// before prepares the run (a dead worker's, for a rescued job).
		before func(t *testing.T, runID string)
		// finish: the first delivery runs the whole attempt before the
		// second writes, instead of only claiming.
		finish       bool
		wantAttempts int
	}{
		{name: "a pending run: the loser snoozes while the winner runs it", wantAttempts: 1},
		{name: "a pending run the winner finished first: the loser completes the job", finish: true, wantAttempts: 1},
		{
			name: "a dead worker's run, rescued twice: the loser snoozes while the winner takes it over",
			before: func(t *testing.T, runID string) {
				deadHolder(t, f, runID)
				if _, err := f.store.CreateRun(ctx, store.Run{ID: attemptID(runID, 1), Kind: "execute", Status: store.StatusRunning, LeaseUntil: time.Now().Add(-time.Second)}); err != nil {
					t.Fatal(err)
				}
			},
			wantAttempts: 2,
		},
		{
			name:         "a dead worker's run the winner finished first: the loser completes the job",
			before:       func(t *testing.T, runID string) { deadHolder(t, f, runID) },
			finish:       true,
			wantAttempts: 2,
		},
	}
	t.Run("a run that changes under every claim: the job snoozes, never fails", func(t *testing.T) {
		sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
		if err != nil {
			t.Fatal(err)
		}
		w, err := f.NewWorker(ctx, WorkerOptions{Providers: map[string]contract.Provider{"scripted": scripted.New(sc, scripted.Options{})}})
		if err != nil {
			t.Fatal(err)
		}
		reads := 0
		w.afterRead = func(runID string) {
			reads++
			// Another writer of the run (a submitter's cancel, a holder's
			// renewal) gets in first, every time.
			if _, err := f.store.UpdateRun(ctx, runID, func(r *store.Run) error {
				r.Doc = r.Doc.With("touched", canonjson.NumberValue(float64(reads)))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		job := &river.Job[RunArgs]{JobRow: &rivertype.JobRow{ID: sub.JobID, Queue: "scripted"}, Args: RunArgs{RunID: sub.RunID}}
		err = (&jobWorker{w: w}).Work(ctx, job)
		snooze, ok := errors.AsType[*rivertype.JobSnoozeError](err)
		if !ok || snooze.Duration <= 0 || reads != maxClaimTries {
			t.Fatalf("Work = %v after %d reads; want the job snoozed after %d", err, reads, maxClaimTries)
		}
		if r, err := f.Get(ctx, sub.RunID); err != nil || r.Status != store.StatusPending || len(r.Attempts) != 0 {
			t.Errorf("the run after the lost claims: %+v, %v; want it pending, untouched by the worker", r, err)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.before != nil {
				tt.before(t, sub.RunID)
			}
			first, second := scripted.New(sc, scripted.Options{}), scripted.New(sc, scripted.Options{})
			w1, err := f.NewWorker(ctx, WorkerOptions{ID: "first", Providers: map[string]contract.Provider{"scripted": first}, LeaseTTL: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			w2, err := f.NewWorker(ctx, WorkerOptions{ID: "second", Providers: map[string]contract.Provider{"scripted": second}, LeaseTTL: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			job := &river.Job[RunArgs]{JobRow: &rivertype.JobRow{ID: sub.JobID, Queue: "scripted"}, Args: RunArgs{RunID: sub.RunID}}

			var won claim
			var wonErr error
			w2.afterRead = func(runID string) {
				w2.afterRead = nil // the second delivery's first read only
				if tt.finish {
					wonErr = (&jobWorker{w: w1}).Work(ctx, job)
					return
				}
				won, wonErr = w1.claim(ctx, runID, "")
			}
			lost := (&jobWorker{w: w2}).Work(ctx, job)
			if wonErr != nil {
				t.Fatalf("the first delivery: %v", wonErr)
			}
			if tt.finish {
				if lost != nil {
					t.Fatalf("the second delivery of a job whose run ended returned %v; want nil (the job completes)", lost)
				}
			} else {
				if _, ok := errors.AsType[*rivertype.JobSnoozeError](lost); !ok {
					t.Fatalf("the second delivery returned %v; want the job snoozed while the first runs it", lost)
				}
				if s := w2.Stats(); s.Snoozed != 1 || s.Started != 0 {
					t.Errorf("second worker's stats %+v; want one snooze, no attempt", s)
				}
				// The winner runs its attempt; the snoozed job, worked again,
				// finds the run ended and completes.
				if err := w1.runAttempt(won); err != nil {
					t.Fatalf("the first delivery's attempt: %v", err)
				}
				if err := (&jobWorker{w: w2}).Work(ctx, job); err != nil {
					t.Fatalf("the snoozed job worked again after the run ended: %v; want nil", err)
				}
			}
			r, err := f.Get(ctx, sub.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != store.StatusCompleted || len(r.Attempts) != tt.wantAttempts || r.Attempts[len(r.Attempts)-1].Worker != "first" {
				t.Errorf("run %s with attempts %+v; want completed by the first delivery after %d attempt(s)", r.Status, r.Attempts, tt.wantAttempts)
			}
			if first.Turns() != 1 || second.Turns() != 0 {
				t.Errorf("turns played: first %d, second %d; want 1 and 0 (the run executed once)", first.Turns(), second.Turns())
			}
		})
	}
}

// TestBackoffIsBoundedAndJittered: the wait after n refusals in a row
// lies between half and all of base doubled n-1 times, capped at most.
func TestBackoffIsBoundedAndJittered(t *testing.T) {
	const base, most = 100 * time.Millisecond, time.Second
	tests := []struct {
		n        int
		lo, high time.Duration
	}{
		{1, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond},
		{4, 400 * time.Millisecond, 800 * time.Millisecond},
		{5, 500 * time.Millisecond, time.Second},
		{1000, 500 * time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := backoff(tt.n, base, most)
			if d < tt.lo || d > tt.high {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", tt.n, d, tt.lo, tt.high)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("backoff(%d) took %d distinct values in 200 draws; want jitter", tt.n, len(seen))
		}
	}
}

// unverifiable is a provider whose server cannot be asked whether an
// environment is alive (its Get fails), or, with gone, answers that it
// is not.
type unverifiable struct {
	contract.Provider
	gone bool
}

func (p *unverifiable) Get(context.Context, string) (contract.Environment, error) {
	if p.gone {
		return nil, nil
	}
	return nil, errors.New("remote: GET /v1/environments/env: connection refused")
}

// TestTakeoverOfAnEnvironmentInDoubt (spec/runtime.md §3.8 recovery):
// a dead worker's interrupted attempt had created an environment on a
// provider whose environments outlive their worker. When the provider
// cannot tell whether it is alive, the work is in doubt: the job waits
// (snoozed), neither resumed nor run again. When the provider says it is
// gone, its turn ended with it, and the run is run again.
func TestTakeoverOfAnEnvironmentInDoubt(t *testing.T) {
	f, _ := openTestFleet(t)
	ctx := t.Context()
	pv, _ := canonjson.Decode([]byte(`{"name":"n","harness":"cli-base","model":{"provider":"scripted","default":"scripted/n"}}`))
	p, err := profile.FromValue(pv)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scripted.ParseScript([]byte(`{"turns":[{"repeat":true,"steps":[{"text":"note"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []bool{false, true} {
		sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
		if err != nil {
			t.Fatal(err)
		}
		deadHolder(t, f, sub.RunID)
		// The dead worker's attempt: a record that names the environment
		// it created, its lease lapsed mid-turn.
		model, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: "t", Provider: scripted.New(sc, scripted.Options{}), Store: f.store})
		if err != nil || model.EnvironmentID == "" {
			t.Fatalf("a model run: %+v, %v", model, err)
		}
		modelRun, err := f.store.GetRun(ctx, model.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.CreateRun(ctx, store.Run{ID: attemptID(sub.RunID, 1), Kind: "execute", Status: store.StatusRunning, Owner: "dead",
			LeaseUntil: time.Now().Add(-time.Second), Doc: modelRun.Doc}); err != nil {
			t.Fatal(err)
		}
		mine := scripted.New(sc, scripted.Options{})
		w, err := f.NewWorker(ctx, WorkerOptions{Providers: map[string]contract.Provider{"scripted": &unverifiable{Provider: mine, gone: gone}}, LeaseTTL: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		job := &river.Job[RunArgs]{JobRow: &rivertype.JobRow{ID: sub.JobID, Queue: "scripted"}, Args: RunArgs{RunID: sub.RunID}}
		werr := (&jobWorker{w: w}).Work(ctx, job)
		r, err := f.Get(ctx, sub.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if !gone {
			if _, ok := errors.AsType[*rivertype.JobSnoozeError](werr); !ok || len(r.Attempts) != 1 || mine.Turns() != 0 || r.Status.Terminal() {
				t.Errorf("unverifiable environment: Work = %v, run %s with attempts %+v, %d turns; want the job snoozed, nothing resumed or re-run", werr, r.Status, r.Attempts, mine.Turns())
			}
			continue
		}
		if werr != nil || r.Status != store.StatusCompleted || len(r.Attempts) != 2 || mine.Turns() != 1 {
			t.Errorf("environment gone: Work = %v, run %s with attempts %+v, %d turns; want it run again once and completed", werr, r.Status, r.Attempts, mine.Turns())
		}
	}
}
