package supervise_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 nested managers, behaviour 44 (a resumed manager's spawns
// replay): the root spawns a writer under its lead (parent: the lead's
// id); the lead settles; the run dies. Resumed, the root's brain issues
// the same calls again, and the spawn under the lead replays. Before,
// the replayed lead's worker entry had no runtime, so the root's spawn
// under it was refused parent-not-manager: the lead read as a plain
// worker and the resumed run could not get past its own journal.
func TestRootSpawnUnderSettledLeadReplaysOnResumeBehaviour44(t *testing.T) {
	leadModel := func() contract.ChatModel {
		return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
			turn(call("l1", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(7, 3, 0.00001)),
			turn(scripted.Text("lead: the writer is DONE"), managerUsage(7, 3, 0.00001)),
		}})
	}
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	var under []supervise.SpawnResult
	var errs []error
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		lead, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Label: "lead", Task: "lead the writer",
			Budget: &supervise.SpawnBudget{Tokens: i64(2000), Iterations: i64(10), USD: new(0.5)}})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		kid, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Label: "w", Task: "write alpha", Parent: lead.WorkerID})
		if err != nil {
			errs = append(errs, err)
			return supervise.BrainReport{}, err
		}
		under = append(under, kid)
		for {
			ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if ev.Event == nil || (ev.Event.Kind == supervise.EventSettled && ev.Event.WorkerID == lead.WorkerID) {
				return supervise.BrainReport{}, nil
			}
		}
	})

	dir := t.TempDir()
	o := nestedOptions(t, newCounting(t, workerProvider(t)), nil, leadModel)
	o.Brain, o.RunDir = brain, dir
	first, err := supervise.Supervise(context.Background(), mgr, "ship", o)
	if err != nil {
		t.Fatalf("first run: %v (%+v)", err, first)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSettled, 2) // the writer, then the lead

	o = nestedOptions(t, newCounting(t, workerProvider(t)), nil, leadModel)
	o.Brain, o.RunDir, o.Resume = brain, dir, true
	got, err := supervise.Supervise(context.Background(), mgr, "ship", o)
	if err != nil {
		var r *supervise.Refusal
		errors.As(err, &r)
		t.Fatalf("resumed run: %v (refusal %+v)", err, r)
	}
	if got.Error != nil {
		t.Fatalf("resumed run failed: %+v", got.Error)
	}
	if len(under) != 2 || !under[1].Replayed || under[1].WorkerID != under[0].WorkerID {
		t.Fatalf("spawns under the lead %+v; want the second a replay of the first (errors %v)", under, errs)
	}
}
