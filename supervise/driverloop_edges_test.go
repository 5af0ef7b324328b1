package supervise_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// superviseWithin runs Supervise in its own goroutine and fails the test
// when it has not returned within limit: a wait the driver loop does
// not bound shows as this failure, not as a test binary that hangs.
func superviseWithin(t *testing.T, ctx context.Context, limit time.Duration, task string, o supervise.Options) supervise.SupervisedResult {
	t.Helper()
	type out struct {
		res supervise.SupervisedResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), task, o)
		done <- out{res, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.res
	case <-time.After(limit):
		t.Fatalf("Supervise did not return within %s", limit)
	}
	return supervise.SupervisedResult{}
}

// §3.6 driverRetry, onDriverAttempt: the caller's observer of attempts
// does not decide the run. One that panics is the caller's fault,
// logged; the loop goes on as if it had returned, and a retried attempt
// that delivers still wins.
func TestDriverAttemptObserverPanicDoesNotFailTheRun(t *testing.T) {
	b := &attemptsBrain{steps: []step{{err: errors.New("pi exit unknown")}, {deliver: true}}}
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.Brain = b
	o.RunDir = t.TempDir()
	o.DriverRetry = supervise.DriverRetry{InitialBackoff: time.Millisecond}
	var calls atomic.Int32
	o.OnDriverAttempt = func(supervise.DriverAttempt) {
		calls.Add(1)
		panic("the observer broke")
	}
	res := superviseWithin(t, context.Background(), time.Minute, "ship a note", o)
	if res.Status != supervise.StatusWinner {
		t.Errorf("status %s reason %s (error %+v), want a winner: the observer's panic decided the run", res.Status, res.Reason, res.Error)
	}
	if len(b.reentry) != 2 || calls.Load() != 2 {
		t.Errorf("%d attempts, observer called %d times; want 2 and 2", len(b.reentry), calls.Load())
	}
	if c := res.Continuation; c == nil || c.Attempts != 2 || c.Ended != supervise.StopCompleted {
		t.Errorf("continuation %+v, want 2 attempts ended completed", c)
	}
}

// Every wait bounded: an OnDriverAttempt that never returns holds the
// loop no longer than the run's deadline, and a driver whose re-prompt
// the deadline overtook is not entered again past it (the admission
// check before each re-entry; the reference's admissionStop).
func TestDriverAttemptObserverThatBlocksIsBoundedByTheDeadline(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	b := &attemptsBrain{steps: []step{{}}}
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.Brain = b
	o.Deadline = time.Now().Add(1500 * time.Millisecond)
	o.Reprompt = supervise.Reprompt{Max: 5}
	var calls atomic.Int32
	o.OnDriverAttempt = func(supervise.DriverAttempt) {
		calls.Add(1)
		<-release
	}
	start := time.Now()
	res := superviseWithin(t, context.Background(), 30*time.Second, "ship a note", o)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the run took %s past a 1.5s deadline", d)
	}
	if len(b.reentry) != 1 {
		t.Errorf("the driver was entered %d times, want 1: the re-prompt was entered past the deadline", len(b.reentry))
	}
	if res.Reason != supervise.ReasonBudgetExhausted {
		t.Errorf("reason %s (error %+v), want budget-exhausted (the deadline)", res.Reason, res.Error)
	}
}

// Every wait bounded: Reprompt.OnUnmet that ignores its context holds
// the loop no longer than the run's deadline; the re-prompt is then
// refused by the deadline.
func TestRepromptOnUnmetThatBlocksIsBoundedByTheDeadline(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	b := &attemptsBrain{steps: []step{{}}}
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.Brain = b
	o.Deadline = time.Now().Add(1500 * time.Millisecond)
	var mu sync.Mutex
	var seen []supervise.DriverAttempt
	o.OnDriverAttempt = func(a supervise.DriverAttempt) { mu.Lock(); seen = append(seen, a); mu.Unlock() }
	o.Reprompt = supervise.Reprompt{Max: 5, OnUnmet: func(context.Context, supervise.UnmetContract) (supervise.UnmetDecision, error) {
		<-release // ignores its context
		return supervise.UnmetDecision{Steer: "go on"}, nil
	}}
	res := superviseWithin(t, context.Background(), 30*time.Second, "ship a note", o)
	if len(b.reentry) != 1 {
		t.Errorf("the driver was entered %d times, want 1", len(b.reentry))
	}
	mu.Lock()
	defer mu.Unlock()
	if got := stops(seen); got != "1:ok/completed/deadline" {
		t.Errorf("attempts %s, want 1:ok/completed/deadline", got)
	}
	if res.Reason != supervise.ReasonBudgetExhausted {
		t.Errorf("reason %s (error %+v), want budget-exhausted (the deadline)", res.Reason, res.Error)
	}
}

// §3.6 driverRetry: the manager's stop that lands while the loop waits
// out a backoff ends the run as a stop, never driver-failed for the
// failure before it.
func TestDriverRetryStopDuringBackoffIsAStop(t *testing.T) {
	entered := 0
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		return c.DriveAttempts(ctx, func(ctx context.Context, attempt int, _ *supervise.DriverReentry) (supervise.BrainReport, error) {
			entered++
			time.AfterFunc(50*time.Millisecond, func() {
				if _, err := c.Stop(supervise.StopArgs{Reason: "enough"}); err != nil {
					t.Errorf("stop: %v", err)
				}
			})
			return supervise.BrainReport{}, errors.New("pi exit unknown")
		})
	})
	o.DriverRetry = supervise.DriverRetry{InitialBackoff: time.Hour}
	start := time.Now()
	res := superviseWithin(t, context.Background(), time.Minute, "ship a note", o)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the run took %s: the backoff was not cut by the stop", d)
	}
	if entered != 1 || res.Reason == supervise.ReasonDriverFailed || res.Error != nil {
		t.Errorf("%d attempts, reason %s, error %+v; want 1 attempt and the run ended as stopped, not driver-failed", entered, res.Reason, res.Error)
	}
}

// §3.6 driverRetry, §13 run cancellation: a cancellation published by
// another process (supervise.CancelRun, agentrt cancel) while the loop
// waits out a backoff ends the run cancelled at once.
func TestDriverRetryRunCancelDuringBackoff(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "run")
	b := &attemptsBrain{steps: []step{{err: errors.New("pi exit unknown")}}, onReturn: func(int) {
		time.AfterFunc(50*time.Millisecond, func() {
			if _, err := supervise.CancelRun(context.Background(), runDir, "op-1", supervise.RunCancelOptions{Reason: "operator"}); err != nil {
				t.Errorf("CancelRun: %v", err)
			}
		})
	}}
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.Brain = b
	o.RunDir = runDir
	o.DriverRetry = supervise.DriverRetry{InitialBackoff: time.Hour}
	start := time.Now()
	res := superviseWithin(t, context.Background(), time.Minute, "ship a note", o)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the run took %s: the backoff was not cut by the cancellation", d)
	}
	if len(b.reentry) != 1 || res.Reason != supervise.ReasonCancelled || res.Error != nil {
		t.Errorf("%d attempts, reason %s, error %+v; want 1 and cancelled", len(b.reentry), res.Reason, res.Error)
	}
}

// §3.6 driverRetry: the deadline that lands in an unavailable pause
// ends the run at the deadline, not after the pause; and one that cuts
// a turn is what the loop says stopped it (deadline, not aborted).
func TestDriverRetryDeadlineEndsThePause(t *testing.T) {
	t.Run("in the pause", func(t *testing.T) {
		b := &attemptsBrain{steps: []step{{err: httpErr(429)}}}
		o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
		o.Brain = b
		o.Deadline = time.Now().Add(1500 * time.Millisecond)
		o.DriverRetry = supervise.DriverRetry{UnavailablePause: time.Hour}
		start := time.Now()
		res := superviseWithin(t, context.Background(), time.Minute, "ship a note", o)
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("the run took %s past a 1.5s deadline", d)
		}
		if len(b.reentry) != 1 || res.Reason != supervise.ReasonBudgetExhausted {
			t.Errorf("%d attempts, reason %s (error %+v); want 1 and budget-exhausted", len(b.reentry), res.Reason, res.Error)
		}
	})
	t.Run("in a turn", func(t *testing.T) {
		o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			return c.DriveAttempts(ctx, func(ctx context.Context, attempt int, _ *supervise.DriverReentry) (supervise.BrainReport, error) {
				<-ctx.Done() // a turn the deadline cuts
				return supervise.BrainReport{}, context.Cause(ctx)
			})
		})
		o.Deadline = time.Now().Add(time.Second)
		res := superviseWithin(t, context.Background(), time.Minute, "ship a note", o)
		if c := res.Continuation; c == nil || c.Attempts != 1 || c.Ended != supervise.StopDeadline {
			t.Errorf("continuation %+v, want 1 attempt ended by the deadline", c)
		}
		if res.Reason != supervise.ReasonBudgetExhausted {
			t.Errorf("reason %s (error %+v), want budget-exhausted", res.Reason, res.Error)
		}
	})
}

// §3.6 driverRetry: SupervisedResult.Continuation is the ROOT manager's
// driver loop. A nested manager's brain that drives through
// DriveAttempts (a caller's ManagerBrain) has its attempts journaled on
// its own node and passed to OnDriverAttempt, never counted in the
// root's continuation: here the root drove without the loop, so its
// continuation is nil.
func TestNestedDriverAttemptsAreNotTheRootsContinuation(t *testing.T) {
	o := nestedOptions(t, newCounting(t, workerProvider(t)), nil, nil)
	o.RunDir = t.TempDir()
	o.DriverRetry = supervise.DriverRetry{InitialBackoff: time.Millisecond}
	var mu sync.Mutex
	var seen []supervise.DriverAttempt
	o.OnDriverAttempt = func(a supervise.DriverAttempt) { mu.Lock(); seen = append(seen, a); mu.Unlock() }
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			return c.DriveAttempts(ctx, func(ctx context.Context, attempt int, _ *supervise.DriverReentry) (supervise.BrainReport, error) {
				if attempt == 1 {
					return supervise.BrainReport{}, errors.New("lead exit unknown")
				}
				return supervise.BrainReport{Text: "lead done"}, nil
			})
		})
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Label: "lead"}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
		return supervise.BrainReport{}, err
	})
	res := superviseWithin(t, context.Background(), time.Minute, "t", o)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0].Manager != "run1:s1" || seen[1].Manager != "run1:s1" {
		t.Errorf("OnDriverAttempt saw %+v, want the lead's 2, each naming the lead run1:s1", seen)
	}
	if res.Continuation != nil {
		t.Errorf("the root's continuation %+v, want nil: the root did not drive through DriveAttempts", res.Continuation)
	}
	rows, _, err := supervise.ReadRunDir(context.Background(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Kind == supervise.KindDriverAttempt && r.Node != "run1:s1" {
			t.Errorf("a driver-attempt record on %s, want the lead's node run1:s1", r.Node)
		}
	}
}
