package graph_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// failingBuilds runs each worker as a kernel tool loop whose three build
// calls fail, then answers "patch": its trace goes to Work.Observer.
var failingBuilds = supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	var turns []scripted.ChatTurn
	for i := range 3 {
		turns = append(turns, scripted.ChatTurn{Events: []contract.ChatEvent{scripted.Call(fmt.Sprintf("b%d", i), "build", fmt.Sprintf(`{"n":%d}`, i))}})
	}
	turns = append(turns, scripted.ChatTurn{Events: []contract.ChatEvent{scripted.Text("patch")}})
	build := contract.Tool{Name: "build", Run: func(context.Context, canonjson.Value) (canonjson.Value, error) {
		return canonjson.Value{}, errors.New("build failed")
	}}
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: scripted.NewChatModel(scripted.ChatScript{Turns: turns}), User: w.Task,
		Tools: []contract.Tool{build}, MaxToolTurns: 10, RunID: string(w.Node), Observer: w.Observer})
	if err != nil {
		return supervise.WorkResult{}, err
	}
	return supervise.WorkResult{Text: res.FinalText}, nil
})

// §3.6 watchWorkers, forwarded (§3.7 option classes): a graph run's
// Supervise.WatchWorkers watches its worker nodes — the driver's await
// returns the online error-streak finding about the coder, then its
// settlement.
func TestWatchWorkersIsForwarded(t *testing.T) {
	o := options(t, failingBuilds, nil)
	o.Supervise.Router = nil
	o.Supervise.WatchWorkers = &supervise.WatchWorkers{}
	var kinds, lenses []string
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "t"}); err != nil {
			return supervise.BrainReport{}, err
		}
		for range 5 {
			ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
			if err != nil || ev.Event == nil {
				return supervise.BrainReport{}, errors.Join(err, errors.New("no event"))
			}
			kinds, lenses = append(kinds, ev.Event.Kind), append(lenses, ev.Event.Lens)
			if ev.Event.Kind == supervise.EventSettled {
				break
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), starGraph(t), o)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(kinds) != "[finding settled]" || lenses[0] != "online:error-streak" {
		t.Errorf("the driver saw %v (lenses %q), want the coder's online error-streak finding, then its settlement", kinds, lenses)
	}
	if w := res.Result.Winner; w == nil || w.Text != "patch" {
		t.Errorf("winner = %+v", w)
	}
}
