package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// recordingObserver records the hooks it saw; panicky makes every hook
// panic after recording.
type recordingObserver struct {
	mu      sync.Mutex
	hooks   []string
	settled []supervise.NodeSettled
	panicky bool
}

func (o *recordingObserver) note(h string) {
	o.mu.Lock()
	o.hooks = append(o.hooks, h)
	o.mu.Unlock()
	if o.panicky {
		panic(h)
	}
}

func (o *recordingObserver) RunStarted(ctx context.Context, s supervise.RunStart) context.Context {
	o.note("run-started")
	return ctx
}

func (o *recordingObserver) NodeStarted(ctx context.Context, n supervise.NodeInfo) (context.Context, kernel.Observer) {
	o.note("node-started")
	return ctx, nil
}

func (o *recordingObserver) NodeSettled(ctx context.Context, s supervise.NodeSettled) {
	o.mu.Lock()
	o.settled = append(o.settled, s)
	o.mu.Unlock()
	o.note("node-settled")
}

func (o *recordingObserver) RunEnded(ctx context.Context, res supervise.SupervisedResult) {
	o.note("run-ended")
}

// The observer sees the run, each worker's start and settlement with
// its spend and delivery, and the end; a panicking observer never
// changes the run.
func TestObserverSeesRunAndNodes(t *testing.T) {
	for _, panicky := range []bool{false, true} {
		obs := &recordingObserver{panicky: panicky}
		o := baseOptions(t, newCounting(t, workerProvider(t)), twoWorkerManager())
		o.Observer = obs
		res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
		if err != nil || res.Status != supervise.StatusWinner {
			t.Fatalf("panicky %v: %v %+v", panicky, err, res)
		}
		count := map[string]int{}
		for _, h := range obs.hooks {
			count[h]++
		}
		if count["run-started"] != 1 || count["node-started"] != 2 || count["node-settled"] != 2 || count["run-ended"] != 1 ||
			obs.hooks[0] != "run-started" || obs.hooks[len(obs.hooks)-1] != "run-ended" {
			t.Errorf("panicky %v: hooks %v", panicky, obs.hooks)
		}
		for _, s := range obs.settled {
			alpha := s.Node.Label == "a"
			if s.State != supervise.StateDone || s.Delivered != alpha || s.Usage == nil || !s.Usage.InputTokens.Known() || s.Spent.Tokens == nil {
				t.Errorf("panicky %v: settled %+v", panicky, s)
			}
		}
	}
}

// IsInfra (spec §10 tangle.supervise.node.infra): an InfraError, or a
// kernel run broken by its infrastructure, is infra wherever it sits in
// the chain; the worker's own failure, a refusal and a cancellation are
// not.
func TestIsInfra(t *testing.T) {
	run := func(reason string) error {
		return fmt.Errorf("supervise: worker w: %w", &kernel.RunError{Reason: reason})
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", errors.New("the worker gave up"), false},
		{"infra error", &supervise.InfraError{Err: errors.New("the sandbox went away")}, true},
		{"wrapped infra error", fmt.Errorf("fleet: %w", &supervise.InfraError{Err: errors.New("lease")}), true},
		{"transport", run(kernel.ReasonTransport), true},
		{"no terminal", run(kernel.ReasonNoTerminal), true},
		{"provider", run(kernel.ReasonProvider), true},
		{"lease lost", run(kernel.ReasonLeaseLost), true},
		{"panic", run(kernel.ReasonPanic), true},
		{"in band", run(kernel.ReasonInBandError), false},
		{"refused", run(kernel.ReasonRefused), false},
		{"cancelled", run(kernel.ReasonCancelled), false},
		{"timed out", run(kernel.ReasonTimedOut), false},
		{"driver", run(kernel.ReasonDriver), false},
	} {
		if got := supervise.IsInfra(tc.err); got != tc.want {
			t.Errorf("%s: IsInfra = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Each executor of this module names its runtime and says it carries
// the trace context; an ExecutorFunc names none (unknown, not guessed).
func TestExecutorsNameTheirRuntime(t *testing.T) {
	k := &supervise.KernelExecutor{}
	if got := supervise.RuntimeOf(k); got != supervise.RuntimeProvider || !k.PropagatesTrace() {
		t.Errorf("KernelExecutor: runtime %q, propagates %v", got, k.PropagatesTrace())
	}
	f := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{}, nil
	})
	if got := supervise.RuntimeOf(f); got != "" {
		t.Errorf("ExecutorFunc: runtime %q, want unknown", got)
	}
	if _, ok := any(f).(supervise.TracePropagator); ok {
		t.Error("ExecutorFunc claims to know whether it carries the trace context")
	}
}
