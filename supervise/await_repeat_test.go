package supervise_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// releaseOnCall is a run observer whose brain observer closes release
// when the router manager starts the tool call of id callID.
type releaseOnCall struct {
	*cutAfterTake
	callID  string
	once    sync.Once
	release chan struct{}
}

func (o *releaseOnCall) BrainObserver() kernel.Observer { return releaseBrain{o} }

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

// A router manager that spawns three workers and then awaits three
// times with the same arguments — what a model (and the CLI's default
// plan) writes — is waiting, not stuck: each await returns another
// settlement. The third await runs, the worker still running when it
// starts delivers, and the run has a winner. Before the fix the tool
// loop's stuck-loop rule stopped the manager at the third identical
// call, its return cancelled that worker, and the run ended no-winner
// all-children-down.
func TestRouterManagerAwaitingThriceIsNotStuck(t *testing.T) {
	obs := &releaseOnCall{cutAfterTake: &cutAfterTake{}, callID: "w3", release: make(chan struct{})}
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		spent := ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}
		if !strings.Contains(w.Task, "alpha") {
			return supervise.WorkResult{Text: "beta: half", Spent: spent}, nil
		}
		// alpha settles only once the third await has started.
		select {
		case <-obs.release:
			return supervise.WorkResult{Text: "alpha: DONE", Spent: spent}, nil
		case <-ctx.Done():
			return supervise.WorkResult{Spent: spent}, ctx.Err()
		}
	})
	await := map[string]any{"timeoutMs": 60000}
	router := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("s1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write beta", "label": "b1"}),
			call("s2", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write beta", "label": "b2"}),
			call("s3", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha", "label": "a"}),
			managerUsage(10, 5, 0.0001)),
		turn(call("w1", supervise.VerbAwaitEvent, await), call("w2", supervise.VerbAwaitEvent, await),
			call("w3", supervise.VerbAwaitEvent, await), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("alpha delivered"), managerUsage(10, 5, 0.0001)),
	}})
	o := baseOptions(t, exec, router)
	o.Observer = obs
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship a note", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.Text != "alpha: DONE" {
		var states []string
		for _, n := range res.Tree {
			states = append(states, string(n.ID)+" "+string(n.State)+" "+n.Reason)
		}
		t.Fatalf("status %s reason %s, workers %q; want alpha's winner", res.Status, res.Reason, states)
	}
}
