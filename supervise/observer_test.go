package supervise_test

import (
	"context"
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
