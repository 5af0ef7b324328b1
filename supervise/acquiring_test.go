package supervise_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// slowBox is a real provider whose Create waits for its gate (or ctx)
// and then creates the environment, or fails with fail: a box that takes
// real time to acquire.
type slowBox struct {
	contract.Provider
	gate <-chan struct{}
	fail error
}

func (p slowBox) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	select {
	case <-p.gate:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if p.fail != nil {
		return nil, p.fail
	}
	return p.Provider.Create(ctx, in)
}

// §3.6 node lifecycle "acquiring (real time spent acquiring a box)":
// KernelExecutor's worker is acquiring while its provider creates its
// environment — observe_agent says so — and running once the box exists;
// a box that cannot be had fails the worker from acquiring, never
// having run.
func TestKernelWorkerAcquiresItsEnvironment(t *testing.T) {
	cases := []struct {
		name      string
		fail      error
		wantAfter supervise.State // the state the worker reaches once the gate opens
		wantEnd   supervise.State
	}{
		{"box acquired", nil, supervise.StateRunning, supervise.StateDone},
		{"box refused", errors.New("no capacity in the region"), "", supervise.StateFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scripted.ParseScript([]byte(`{"turns": [{"repeat": true, "steps": [{"text": "started "}, {"delayMs": 400},
			  {"text": "DONE"}, {"usage": {"inputTokens": 1, "outputTokens": 1, "cost": 0.000001}, "mode": "delta"}]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			gate := make(chan struct{})
			exec := &supervise.KernelExecutor{Provider: slowBox{Provider: scripted.New(s, scripted.Options{}), gate: gate, fail: tc.fail}, Store: newStore(t)}
			o := baseOptions(t, exec, nil)
			var (
				acquiring map[string]any
				after     supervise.State
				settled   map[string]any
			)
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("build"))
				// The worker starts pending and moves to acquiring as its
				// provider's Create begins.
				waitState(t, c, "run1:s1", supervise.StateAcquiring)
				acquiring = tool(t, ctx, c, supervise.VerbObserveAgent, map[string]any{"workerId": "run1:s1"})
				close(gate)
				if tc.wantAfter != "" {
					after = waitState(t, c, "run1:s1", tc.wantAfter)
				}
				settled = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			if acquiring["status"] != "acquiring" {
				t.Errorf("observe_agent while the box is acquired: %v", acquiring)
			}
			if after != tc.wantAfter {
				t.Errorf("after the box came: %s, want %s", after, tc.wantAfter)
			}
			if ev, _ := settled["event"].(map[string]any); ev["state"] != string(tc.wantEnd) {
				t.Errorf("settled %v, want %s", settled, tc.wantEnd)
			}
		})
	}
}

// waitState polls node id until it is in want (generously bounded: the
// machine is shared) and returns the state it saw last.
func waitState(t *testing.T, c *supervise.Coordinator, id supervise.NodeID, want supervise.State) supervise.State {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		o, err := c.Observe(id)
		if err != nil {
			t.Error(err)
			return ""
		}
		if o.Status == want || time.Now().After(deadline) {
			if o.Status != want {
				t.Errorf("%s is %s after 30s, want %s", id, o.Status, want)
			}
			return o.Status
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// acquireOnly reports acquiring and returns without ever saying it runs.
type acquireOnly struct{}

func (*acquireOnly) AcquiresEnvironment() bool { return true }

func (e *acquireOnly) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	w.Acquiring()
	w.Acquiring() // again: nothing moves
	return supervise.WorkResult{Text: "DONE", Spent: ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}}, nil
}

// An executor that reported acquiring and returned a result without
// saying it ran still settles done (acquiring → done is no lifecycle
// move: the coordinator moves it through running).
func TestAcquiringWorkerThatReturnsSettlesDone(t *testing.T) {
	o := baseOptions(t, &acquireOnly{}, nil)
	o.Brain = pipeline("write")
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || len(res.Tree) != 1 || res.Tree[0].State != supervise.StateDone {
		t.Errorf("result %+v", res)
	}
}

// §3.6 "acquiring … abort defined here": a worker whose run ends while
// its box is still being acquired is cancelled from acquiring — its
// provider's Create honours the cancellation — and it settles within
// the grace, not left unconfirmed.
func TestWorkerCancelledWhileAcquiring(t *testing.T) {
	gate := make(chan struct{}) // never opens
	exec := &supervise.KernelExecutor{Provider: slowBox{Provider: workerProvider(t), gate: gate}, Store: newStore(t)}
	o := baseOptions(t, exec, nil)
	o.SettleGrace = 30 * time.Second
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("write alpha"))
		waitState(t, c, "run1:s1", supervise.StateAcquiring)
		return supervise.BrainReport{}, nil // the run ends: its workers are cancelled
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tree) != 1 || res.Tree[0].State != supervise.StateCancelled || len(res.TeardownUnconfirmed) != 0 {
		t.Errorf("tree %+v, teardown unconfirmed %+v", res.Tree, res.TeardownUnconfirmed)
	}
}

// silentKernel reports acquiring but never moves its worker itself: it
// runs the worker through kernel.Execute with the worker's observer, as
// a path of an executor that does not wrap its provider would.
type silentKernel struct {
	provider contract.Provider
	store    store.Store
}

func (*silentKernel) AcquiresEnvironment() bool { return true }

func (e *silentKernel) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	res, err := kernel.Execute(ctx, kernel.Request{Profile: w.Profile, Task: w.Task, Provider: e.provider, Store: e.store,
		RunID: kernel.NewID("worker"), Observer: w.Observer})
	if res == nil {
		return supervise.WorkResult{}, err
	}
	return supervise.WorkResult{Text: res.Text, Spent: supervise.SpendOf(res.Usage)}, err
}

// A worker of an executor that reports acquiring is running once its
// kernel turn starts, even when the executor never said so itself.
func TestAcquiringWorkerRunsWhenItsTurnStarts(t *testing.T) {
	s, err := scripted.ParseScript([]byte(`{"turns": [{"repeat": true, "steps": [{"text": "started "}, {"delayMs": 400},
	  {"text": "DONE"}, {"usage": {"inputTokens": 1, "outputTokens": 1, "cost": 0.000001}, "mode": "delta"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	o := baseOptions(t, &silentKernel{provider: scripted.New(s, scripted.Options{}), store: newStore(t)}, nil)
	var during supervise.State
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("build"))
		during = waitState(t, c, "run1:s1", supervise.StateRunning)
		_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
		return supervise.BrainReport{}, err
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if during != supervise.StateRunning || res.Status != supervise.StatusWinner {
		t.Errorf("while its turn streamed: %s; result %s %s", during, res.Status, res.Reason)
	}
}
