package supervise_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// §3.6 childSettleGraceMs: a manager that fails (or returns) on its own
// leaves its live workers running for the grace. One that delivers within it wins
// the run (a lifecycle outcome outranks driver-failed); without a grace
// it is cancelled at once and the run ends driver-failed; a worker that
// outlasts the grace is cancelled when it ends, and the run's deadline
// bounds the grace.
func TestChildSettleGraceAfterTheManagerFailed(t *testing.T) {
	cases := []struct {
		name    string
		grace   time.Duration
		release time.Duration // when the worker's gate opens (0: never)
		timeout time.Duration // the run's deadline (0: none)
		status  supervise.Status
		reason  supervise.NoWinnerReason
		state   supervise.State
		within  time.Duration
	}{
		{"delivered within the grace wins", 30 * time.Second, 100 * time.Millisecond, 0, supervise.StatusWinner, "", supervise.StateDone, 20 * time.Second},
		{"a manager that returned without failing waits too", 30 * time.Second, 100 * time.Millisecond, 0, supervise.StatusWinner, "", supervise.StateDone, 20 * time.Second},
		{"no grace cancels at once", 0, 100 * time.Millisecond, 0, supervise.StatusNoWinner, supervise.ReasonDriverFailed, supervise.StateCancelled, 20 * time.Second},
		{"a worker that outlasts the grace is cancelled", 200 * time.Millisecond, 0, 0, supervise.StatusNoWinner, supervise.ReasonDriverFailed, supervise.StateCancelled, 20 * time.Second},
		{"the deadline bounds the grace", time.Hour, 0, 2 * time.Second, supervise.StatusNoWinner, "", supervise.StateCancelled, 30 * time.Second},
		// childSettleGraceMs null: wait until the workers settled.
		{"waiting for the workers lets one deliver", supervise.WaitForChildren, 300 * time.Millisecond, 0, supervise.StatusWinner, "", supervise.StateDone, 20 * time.Second},
		{"the deadline bounds waiting for the workers", supervise.WaitForChildren, 0, 2 * time.Second, supervise.StatusNoWinner, "", supervise.StateCancelled, 30 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := &gateExecutor{release: make(chan struct{})}
			o := baseOptions(t, gate, nil)
			o.ChildSettleGrace = tc.grace
			if tc.timeout > 0 {
				o.Deadline = time.Now().Add(tc.timeout)
			}
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				if r := tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("write alpha")); r["error"] != nil {
					t.Errorf("spawn refused: %v", r)
				}
				if tc.release > 0 {
					time.AfterFunc(tc.release, func() { close(gate.release) })
				}
				if strings.Contains(tc.name, "without failing") {
					return supervise.BrainReport{Text: "I am done"}, nil
				}
				return supervise.BrainReport{}, errors.New("the manager's process died")
			})
			start := time.Now()
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > tc.within {
				t.Errorf("the run took %s, want within %s", d, tc.within)
			}
			if res.Status != tc.status || (tc.reason != "" && res.Reason != tc.reason) {
				t.Errorf("status %s reason %s (error %+v), want %s %s", res.Status, res.Reason, res.Error, tc.status, tc.reason)
			}
			if len(res.Tree) != 1 || res.Tree[0].State != tc.state {
				t.Errorf("tree %+v, want the worker %s", res.Tree, tc.state)
			}
		})
	}
}

// A manager that ends the run with stop, or whose result already passed,
// does not hold it open for the grace: its live workers are cancelled at
// once.
func TestChildSettleGraceNotAfterStopOrSubmit(t *testing.T) {
	for _, verb := range []string{supervise.VerbStop, supervise.VerbSubmitResult} {
		t.Run(verb, func(t *testing.T) {
			gate := &gateExecutor{release: make(chan struct{})}
			o := baseOptions(t, gate, nil)
			o.ChildSettleGrace = time.Hour
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("write alpha"))
				if verb == supervise.VerbStop {
					tool(t, ctx, c, verb, map[string]any{"reason": "enough"})
					<-ctx.Done()
					return supervise.BrainReport{}, context.Cause(ctx)
				}
				if r := tool(t, ctx, c, verb, map[string]any{"result": "alpha: DONE"}); r["accepted"] != true {
					t.Errorf("submit_result: %v", r)
				}
				return supervise.BrainReport{}, nil
			})
			start := time.Now()
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, verb), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("the run took %s: it waited out the grace", d)
			}
			if len(res.Tree) != 1 || res.Tree[0].State != supervise.StateCancelled {
				t.Errorf("tree %+v, want the worker cancelled", res.Tree)
			}
		})
	}
}

// §3.6 childSettleGraceMs, §13 run cancellation: a cancellation another
// process publishes (CancelRun) while a failed manager's workers run
// out their grace ends the grace at once: the worker is cancelled and
// the run ends cancelled, not after the hour's grace.
func TestChildSettleGraceEndsOnRunCancel(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	o := baseOptions(t, gate, nil)
	o.RunDir = filepath.Join(t.TempDir(), "run")
	o.ChildSettleGrace = time.Hour
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if r := tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("write alpha")); r["error"] != nil {
			t.Errorf("spawn refused: %v", r)
		}
		time.AfterFunc(200*time.Millisecond, func() {
			if _, err := supervise.CancelRun(context.Background(), o.RunDir, "op-grace", supervise.RunCancelOptions{Reason: "operator"}); err != nil {
				t.Errorf("CancelRun: %v", err)
			}
		})
		return supervise.BrainReport{}, errors.New("the manager's process died")
	})
	start := time.Now()
	res := superviseWithin(t, context.Background(), time.Minute, "t", o)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the run took %s: the cancellation did not end the grace", d)
	}
	if res.Reason != supervise.ReasonCancelled || len(res.Tree) != 1 || res.Tree[0].State != supervise.StateCancelled {
		t.Errorf("reason %s (error %+v), tree %+v; want cancelled with the worker cancelled", res.Reason, res.Error, res.Tree)
	}
}

// A negative ChildSettleGrace is refused before anything runs, with
// its option's pointer: 0 and WaitForChildren say what it could mean.
func TestChildSettleGraceNegativeIsRefused(t *testing.T) {
	o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.ChildSettleGrace = -time.Second
	o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
		t.Error("the brain ran")
		return supervise.BrainReport{}, nil
	})
	_, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	var oe *supervise.OptionError
	if !errors.As(err, &oe) || oe.Pointer != "/childSettleGrace" || !errors.Is(err, supervise.ErrInvalidOptions) {
		t.Fatalf("Supervise = %v; want an *OptionError at /childSettleGrace", err)
	}
}
