package supervise_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// observe_agent, steer_agent and read_journal on a live and a settled
// worker.
func TestObserveSteerReadJournal(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	o := baseOptions(t, gate, nil)
	o.RunDir = t.TempDir()
	var live, settled, steerLive, steerSettled, unknown, page, page2 map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("one"))
		live = tool(t, ctx, c, supervise.VerbObserveAgent, map[string]any{"workerId": "run1:s1"})
		steerLive = tool(t, ctx, c, supervise.VerbSteerAgent, map[string]any{"workerId": "run1:s1", "instruction": "shorter"})
		close(gate.release)
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		settled = tool(t, ctx, c, supervise.VerbObserveAgent, map[string]any{"workerId": "run1:s1"})
		steerSettled = tool(t, ctx, c, supervise.VerbSteerAgent, map[string]any{"workerId": "run1:s1", "instruction": "shorter"})
		unknown = tool(t, ctx, c, supervise.VerbObserveAgent, map[string]any{"workerId": "run1:s9"})
		page = tool(t, ctx, c, supervise.VerbReadJournal, map[string]any{"limit": 2})
		page2 = tool(t, ctx, c, supervise.VerbReadJournal, map[string]any{"sinceRow": 2, "kinds": []string{"settled"}})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if live["status"] != "running" || live["spent"] != nil || live["delivered"] != false {
		t.Errorf("live observation %v", live)
	}
	if settled["status"] != "done" || settled["delivered"] != true || settled["output"] != "one DONE" ||
		settled["spent"].(map[string]any)["tokens"] != 10.0 {
		t.Errorf("settled observation %v", settled)
	}
	if steerLive["outcome"] != "unsupported" || steerSettled["outcome"] != "not_live" {
		t.Errorf("steer live %v, settled %v", steerLive, steerSettled)
	}
	if unknown["error"] != "unknown-worker" {
		t.Errorf("unknown worker %v", unknown)
	}
	var kinds []any
	for _, r := range page["rows"].([]any) {
		kinds = append(kinds, r.(map[string]any)["kind"])
	}
	if diff := cmp.Diff([]any{"run-started", "spawned"}, kinds); diff != "" || page["more"] != true || page["nextRow"] != 2.0 {
		t.Errorf("first page %v (-want +got kinds):\n%s", page, diff)
	}
	if rows := page2["rows"].([]any); len(rows) != 1 || rows[0].(map[string]any)["node"] != "run1:s1" {
		t.Errorf("settled page %v", page2)
	}
}

// Behaviour 44 across a restart: a keyed spawn whose key completed in
// the earlier process returns resumed:completed with no new spend and no
// execution.
func TestKeyedSpawnCompletedAcrossResumeBehaviour44(t *testing.T) {
	dir := t.TempDir()
	keyed := map[string]any{"profile": "writer", "task": "write alpha", "key": "alpha-1"}
	brain := func(got *map[string]any) supervise.Brain {
		return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			*got = tool(t, ctx, c, supervise.VerbSpawnWorker, keyed)
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
			return supervise.BrainReport{}, nil
		})
	}
	var first, second map[string]any
	exec := newCounting(t, workerProvider(t))
	o := baseOptions(t, exec, nil)
	o.RunDir, o.Brain = dir, brain(&first)
	before, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	exec2 := newCounting(t, workerProvider(t))
	o = baseOptions(t, exec2, nil)
	o.RunDir, o.Resume, o.Brain = dir, true, brain(&second)
	after, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if first["assignment"] != "key:alpha-1" || second["resumed"] != "completed" || second["workerId"] != "run1:s1" {
		t.Errorf("first %v, second %v", first, second)
	}
	if exec2.count("alpha") != 0 || len(after.Tree) != 1 {
		t.Errorf("resumed process executed alpha %d times, %d nodes", exec2.count("alpha"), len(after.Tree))
	}
	if diff := cmp.Diff(before.Spent, after.Spent); diff != "" || after.Winner == nil || after.Winner.OutRef != before.Winner.OutRef {
		t.Errorf("spend or winner changed on replay (-before +after):\n%s", diff)
	}
}
