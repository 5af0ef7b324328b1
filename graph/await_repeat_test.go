package graph_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// releaseOnCall is a run observer whose brain observer closes release
// when the root's tool loop starts the call of id callID.
type releaseOnCall struct {
	callID  string
	once    sync.Once
	release chan struct{}
}

func (o *releaseOnCall) RunStarted(ctx context.Context, _ supervise.RunStart) context.Context {
	return ctx
}

func (o *releaseOnCall) NodeStarted(ctx context.Context, _ supervise.NodeInfo) (context.Context, kernel.Observer) {
	return ctx, nil
}

func (o *releaseOnCall) NodeSettled(context.Context, supervise.NodeSettled)   {}
func (o *releaseOnCall) RunEnded(context.Context, supervise.SupervisedResult) {}
func (o *releaseOnCall) BrainObserver() kernel.Observer                       { return releaseBrain{o} }

// releaseBrain is releaseOnCall's brain observer.
type releaseBrain struct{ o *releaseOnCall }

func (releaseBrain) RunStarted(ctx context.Context, _ kernel.RunStart) (context.Context, error) {
	return ctx, nil
}

func (releaseBrain) TurnStarted(ctx context.Context, _ kernel.TurnStart) (context.Context, error) {
	return ctx, nil
}

func (releaseBrain) Event(context.Context, contract.EnvironmentEvent) error { return nil }
func (releaseBrain) TurnEnded(context.Context, kernel.TurnEnd) error        { return nil }
func (releaseBrain) RunEnded(context.Context, kernel.Result) error          { return nil }
func (releaseBrain) ToolEnded(context.Context, kernel.ToolCallEnd) error    { return nil }

func (b releaseBrain) ToolStarted(ctx context.Context, c kernel.ToolCallStart) (context.Context, error) {
	if c.Call.ID == b.o.callID {
		b.o.once.Do(func() { close(b.o.release) })
	}
	return ctx, nil
}

// A graph root that delegates to three workers and awaits three times
// with the same arguments (as the CLI's default plan does) is waiting,
// not stuck: its third await runs, the worker still running then
// delivers, and the graph has a winner. Before the fix the root's tool
// loop stopped as stuck at the third identical call, its return
// cancelled that worker, and the run ended no-winner.
func TestGraphRootAwaitingThriceIsNotStuck(t *testing.T) {
	g := starGraph(t)
	g.Nodes = append(g.Nodes, graph.Node{ID: "tester", Profile: workerProfile(t, "tester")})
	g.Edges = append(g.Edges, graph.Edge{Kind: graph.Delegates, From: "driver", To: "tester", Directive: "delegate/coder/v1"})
	obs := &releaseOnCall{callID: "w3", release: make(chan struct{})}
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		if w.Profile.Name == nil || *w.Profile.Name != "tester" {
			return supervise.WorkResult{Text: "nothing yet", Spent: ledgerSpend(1)}, nil
		}
		// tester settles only once the third await has started.
		select {
		case <-obs.release:
			return supervise.WorkResult{Text: "the patch", Spent: ledgerSpend(1)}, nil
		case <-ctx.Done():
			return supervise.WorkResult{Spent: ledgerSpend(1)}, ctx.Err()
		}
	})
	await := map[string]any{"timeoutMs": 60000}
	model := router(
		turn(call("s1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "fix"}),
			call("s2", supervise.VerbSpawnWorker, map[string]any{"profile": "reviewer", "task": "review"}),
			call("s3", supervise.VerbSpawnWorker, map[string]any{"profile": "tester", "task": "test"})),
		turn(call("w1", supervise.VerbAwaitEvent, await), call("w2", supervise.VerbAwaitEvent, await),
			call("w3", supervise.VerbAwaitEvent, await)),
		turn(final("tested")),
	)
	o := options(t, exec, model)
	o.Supervise.Observer = obs
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if w := res.Result.Winner; w == nil || !strings.Contains(w.Text, "patch") {
		var states []string
		for _, n := range res.Result.Tree {
			states = append(states, string(n.ID)+" "+n.Label+" "+string(n.State)+" "+n.Reason)
		}
		t.Fatalf("status %s reason %s, workers %q; want the tester's winner", res.Result.Status, res.Result.Reason, states)
	}
}
