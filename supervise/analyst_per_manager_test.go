package supervise_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// defineLenses has the manager c define n lenses named prefix-0…, and
// returns the last reply.
func defineLenses(t *testing.T, ctx context.Context, c *supervise.Coordinator, prefix string, n int) map[string]any {
	var last map[string]any
	for i := range n {
		l := referenceLens()
		l["id"] = fmt.Sprintf("%s-%d", prefix, i)
		last = tool(t, ctx, c, supervise.VerbDefineAnalyst, l)
		if last["defined"] != true {
			t.Errorf("%s defining %s: %v", prefix, l["id"], last)
		}
	}
	return last
}

// spawnLeadAndAwait spawns the lead (a nested manager) and awaits it.
func spawnLeadAndAwait(t *testing.T, ctx context.Context, c *supervise.Coordinator) {
	tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead", "label": "lead",
		"budget": map[string]any{"maxTokens": 3000, "maxIterations": 5, "maxUsd": 0.5}})
	tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
}

// §9 define_analyst: "≤8 definitions per manager". The limit counted the
// whole run's definitions, so a nested manager whose root had defined its
// eight was refused max-defined-analysts before defining any, and
// list_analysts told it definitionsLeft 0. Each manager has its eight;
// the menu stays the run's (a lens id is defined once).
func TestDefineAnalystLimitIsPerManager(t *testing.T) {
	o := nestedOptions(t, analystExecutor(t), nil, nil)
	var leadList, leadDefine, rootOver map[string]any
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			leadList = tool(t, ctx, c, supervise.VerbListAnalysts, map[string]any{})
			leadDefine = defineLenses(t, ctx, c, "lead", 1)
			return supervise.BrainReport{Text: "lead DONE"}, nil
		})
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		defineLenses(t, ctx, c, "root", supervise.MaxDefinedLenses)
		spawnLeadAndAwait(t, ctx, c)
		l := referenceLens()
		l["id"] = "root-over"
		rootOver = tool(t, ctx, c, supervise.VerbDefineAnalyst, l)
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	if leadList["definitionsLeft"] != float64(supervise.MaxDefinedLenses) {
		t.Errorf("the lead's list_analysts: %v, want definitionsLeft %d", leadList["definitionsLeft"], supervise.MaxDefinedLenses)
	}
	if leadDefine["defined"] != true || leadDefine["definitionsLeft"] != float64(supervise.MaxDefinedLenses-1) {
		t.Errorf("the lead's first definition: %v, want defined with %d left", leadDefine, supervise.MaxDefinedLenses-1)
	}
	if rootOver["error"] != "max-defined-analysts" {
		t.Errorf("the root's ninth definition: %v, want max-defined-analysts", rootOver)
	}
}

// The same across a restart: each definition is journaled with the
// manager that made it, so a resumed root whose lead defined four of
// the run's eight lenses still has four of its own to define.
func TestDefineAnalystLimitPerManagerSurvivesResume(t *testing.T) {
	dir := t.TempDir()
	o := nestedOptions(t, analystExecutor(t), nil, nil)
	o.RunDir = dir
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			defineLenses(t, ctx, c, "lead", 4)
			return supervise.BrainReport{Text: "lead DONE"}, nil
		})
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		defineLenses(t, ctx, c, "root", 4)
		spawnLeadAndAwait(t, ctx, c)
		return supervise.BrainReport{}, nil
	})
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	if _, err := supervise.Supervise(context.Background(), mgr, "t", o); err != nil {
		t.Fatal(err)
	}
	// The process died right after the lead's fourth definition.
	journaltest.KeepThrough(t, dir, supervise.KindAnalystDefined, 8)

	var list map[string]any
	o.Resume = true
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		list = tool(t, ctx, c, supervise.VerbListAnalysts, map[string]any{})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), mgr, "t", o); err != nil {
		t.Fatal(err)
	}
	if list["definitionsLeft"] != float64(supervise.MaxDefinedLenses-4) {
		t.Errorf("the resumed root's definitionsLeft %v, want %d (the lead's four are the lead's)", list["definitionsLeft"], supervise.MaxDefinedLenses-4)
	}
}
